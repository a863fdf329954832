"""`onlstm train`: a language model, the recipe (--seeds K), or a span parser on teachers' trees (--teacher)."""
from __future__ import annotations

import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional

import typer

from onlstm_cli.cli.app import Invocation, err_line, friendly_errors, with_denormals_flushed
from onlstm_cli.cli.options import (MODEL_DEFAULTS, PCFG_DEFAULTS, PCFG_TRAIN_DEFAULTS, RECIPE_DEFAULTS,
                                    SELF_TRAIN_DEFAULTS, TRAIN_DEFAULTS, Family, LrSchedule, MasterInput, SplitRule,
                                    LeanFrom, StudentUnits, TeacherWeights, Units, VoteTargets, command_of,
                                    duration_text, given_budget, parse_duration, unitless_warning)
from onlstm_cli.config import (DEFAULT_MAX_VOCAB, DEFAULT_MIN_FREQ, DEFAULT_UNITS, ENDING_CHARS, LM_UNIT_CHOICES,
                               PCFG_UNIT_CHOICES, RecipeConfig, SelfTrainConfig, TrainConfig)
from onlstm_cli.errors import UserError
from onlstm_cli.training.command import (FirstLine, check_run_files, holding, run_reporter, self_train_summary,
                                         validation_note)
from onlstm_cli.training.run.clock import Budget


@dataclass
class TrainOptions:
    """`train`'s options as given: the command's parameters, one a field (command_of)."""
    corpus: Path = typer.Argument(..., help="UTF-8 text, one sentence a line.")
    out: Path = typer.Option(Path("model.onlstm"), "--out", "-o", help="Where the best model (by validation perplexity) goes; a .ckpt for --resume and the corpus as ids (.tokens) are written beside it.")
    valid: Optional[Path] = typer.Option(None, "--valid", help="Validation text (same format); picks the model to keep.")
    resume: Optional[Path] = typer.Option(None, "--resume", help="Continue from a checkpoint (OUT.ckpt), optimizer state included. Give the corpus, --valid and the run's options again (options that change the model or the data, and the global batch = processes × --batch-size, must be the checkpoint's); --epochs and --time-budget are totals over all the runs.")
    lang: str = typer.Option("auto", "--lang", help="en, zh or another code (tr, pt-BR …); auto: by the script most of the corpus's first lines are in: zh for CJK ideographs, en for Latin, und-SCRIPT for any other (und-Cyrl for Cyrillic, und-Arab for Arabic …), whose words are read by Unicode class. The line that starts the run says which it took.")
    tokenizer: str = typer.Option("auto", "--tokenizer", help="ptb, jieba, unicode (words and punctuation apart by Unicode class) or whitespace; auto: ptb for en, jieba for zh, unicode otherwise.")
    pretokenized: bool = typer.Option(False, "--pretokenized", help="The corpus is already split into tokens by spaces.")
    keep_punct: bool = typer.Option(False, "--keep-punct", help="Train on punctuation tokens too (parse and evaluate then read them; scored trees leave them out).")
    characters: bool = typer.Option(False, "--characters", help="Read CJK words a character at a time (no unknown words whatever the segmentation; a word's distance is its first character's). Stored in the model file.")
    max_vocab: int = typer.Option(DEFAULT_MAX_VOCAB, "--max-vocab", help="Largest vocabulary, <unk> and <eos> included.")
    min_freq: int = typer.Option(DEFAULT_MIN_FREQ, "--min-freq", help="Words seen fewer times become <unk>.")
    units: Units = typer.Option(Units(DEFAULT_UNITS), "--units", help="What the language models read words by (the span parser: --student-units): words; ngrams (each word also by its character n-grams, so that no word is unknown; --max-vocab words keep their own row); auto: ngrams where 5% or more of the corpus's tokens are words seen once. On Turkish, n-grams did not lift the trees (docs/experiments/units.md). With --family pcfg: words, or endings (a word seen once, or not seen, read by its last 3 characters, so that a rare word's case suffix is read; docs/experiments/pcfg.md).")
    family: Family = typer.Option(Family.onlstm, "--family", help="What to train: onlstm, an ON-LSTM language model; pcfg, a neural PCFG (low-rank rules, trained on the sentences' likelihood; it parses with its MBR trees, and -f json gives each sentence's log-likelihood). With pcfg the options that apply are --out, --valid, --resume, the reading of the text (--lang, --tokenizer, --pretokenized, --keep-punct, --max-vocab, --min-freq), --nonterminals, --preterminals, --rank, --max-len, --patience, --epochs, --lr, --batch-size, --clip, --seed, --time-budget, --device, --threads and --checkpoint-every.")
    nonterminals: int = typer.Option(PCFG_DEFAULTS["nonterminals"], "--nonterminals", help="With --family pcfg: its nonterminal symbols.")
    preterminals: int = typer.Option(PCFG_DEFAULTS["preterminals"], "--preterminals", help="With --family pcfg: its preterminal symbols (each emits one word).")
    rank: int = typer.Option(PCFG_DEFAULTS["rank"], "--rank", help="With --family pcfg: the rank of its binary rules (the inside pass takes time n³ × rank).")
    max_len: int = typer.Option(PCFG_TRAIN_DEFAULTS["max_len"], "--max-len", help="With --family pcfg: longer training lines are left out (counted), so that a chart stays small.")
    patience: int = typer.Option(PCFG_TRAIN_DEFAULTS["patience"], "--patience", help="With --family pcfg: stop after this many epochs in a row without a better validation perplexity (0: train until --epochs or --time-budget); the model file keeps the best epoch either way.")
    emb_size: int = typer.Option(MODEL_DEFAULTS["emb_size"], "--emb-size", help="Embedding size (paper: 400).")
    hidden_size: int = typer.Option(MODEL_DEFAULTS["hidden_size"], "--hidden-size", help="Hidden size of the inner layers (paper: 1150).")
    layers: int = typer.Option(MODEL_DEFAULTS["n_layers"], "--layers", help="Number of ON-LSTM layers.")
    chunk_size: int = typer.Option(MODEL_DEFAULTS["chunk_size"], "--chunk-size", help="Neurons per master-gate level.")
    dropout: float = typer.Option(MODEL_DEFAULTS["dropout"], "--dropout", help="Locked dropout on the last layer's output.")
    dropout_h: float = typer.Option(MODEL_DEFAULTS["dropout_h"], "--dropout-h", help="Locked dropout between layers.")
    dropout_i: float = typer.Option(MODEL_DEFAULTS["dropout_i"], "--dropout-i", help="Locked dropout on the embeddings.")
    dropout_e: float = typer.Option(MODEL_DEFAULTS["dropout_e"], "--dropout-e", help="Embedding dropout, whole words.")
    weight_drop: float = typer.Option(MODEL_DEFAULTS["weight_drop"], "--weight-drop", help="DropConnect on the recurrent weights.")
    master_input: MasterInput = typer.Option(MasterInput(MODEL_DEFAULTS["master_input"]), "--master-input", help="paper: 1 − cumax; symmetric: the seed's reverse cumsum.")
    reverse: bool = typer.Option(MODEL_DEFAULTS["reverse"], "--reverse", help="Read each sentence right to left (a model to combine with a left-to-right one; stored in the model file).")
    optimizer: str = typer.Option(TRAIN_DEFAULTS["optimizer"], "--optimizer", help="sgd; ntasgd (the paper's: SGD, then the running average of the weights once validation stalls); or adam (try --lr 0.002).")
    lr_schedule: LrSchedule = typer.Option(LrSchedule(TRAIN_DEFAULTS["lr_schedule"]), "--lr-schedule", help=f"constant: --lr throughout; cosine: the rate falls along half a cosine from --lr to 0 by the end of the run (its --time-budget or its --epochs, whichever comes first); plateau: the rate is divided by {TRAIN_DEFAULTS['anneal_factor']:g} after {TRAIN_DEFAULTS['anneal_after']} epochs in a row without a better validation perplexity.")
    lr: Optional[float] = typer.Option(None, "--lr", help=f"Learning rate (default {TRAIN_DEFAULTS['lr']:g}; with --teacher {SELF_TRAIN_DEFAULTS['lr']:g}, with --family pcfg {PCFG_TRAIN_DEFAULTS['lr']:g}, Adam).")
    average_steps: int = typer.Option(TRAIN_DEFAULTS["average_steps"], "--average-steps", help="Validate and keep the moving average of the weights over about this many steps, instead of the weights at the end of an epoch (0: those).")
    weight_decay: float = typer.Option(TRAIN_DEFAULTS["weight_decay"], "--weight-decay", help="L2 penalty on all weights (the paper's 1.2e-6).")
    clip: Optional[float] = typer.Option(None, "--clip", help=f"Gradient norm clipping (default {TRAIN_DEFAULTS['clip']:g}; with --family pcfg {PCFG_TRAIN_DEFAULTS['clip']:g}).")
    batch_size: Optional[int] = typer.Option(None, "--batch-size", help=f"Sequences per step in each process (with torchrun, the global batch is processes × this); default {TRAIN_DEFAULTS['batch_size']}, with --teacher {SELF_TRAIN_DEFAULTS['batch_size']} sentences, with --family pcfg {PCFG_TRAIN_DEFAULTS['batch_size']} sentences.")
    bptt: int = typer.Option(TRAIN_DEFAULTS["bptt"], "--bptt", help="Mean window length of truncated back-propagation.")
    seed: int = typer.Option(TRAIN_DEFAULTS["seed"], "--seed", help="Random seed of the initial weights, dropout masks and windows (the same seed and options give the same model).")
    epochs: Optional[int] = typer.Option(None, "--epochs", help=f"Most epochs (default {TRAIN_DEFAULTS['epochs']}: the time budget usually ends training first; with --teacher {SELF_TRAIN_DEFAULTS['epochs']}, fewer when validation stops improving). With --seeds: each model's, and the span parser's too where it does not train until the --time-budget is spent (at most {SELF_TRAIN_DEFAULTS['epochs']} there).")
    time_budget: Optional[str] = typer.Option(None, "--time-budget", metavar="<duration>", help=f"Stop after this long: 90s, 45m, 1.5h (a number without a unit is seconds, said in a warning), or none for no limit. Default {duration_text(TRAIN_DEFAULTS['time_budget'])}; with --seeds, for the whole recipe.")
    device: str = typer.Option(TRAIN_DEFAULTS["device"], "--device", help="auto, cpu or cuda.")
    threads: Optional[int] = typer.Option(TRAIN_DEFAULTS["threads"], "--threads", help="CPU threads for torch (default: all cores).")
    checkpoint_every: str = typer.Option(duration_text(TRAIN_DEFAULTS["checkpoint_every"]), "--checkpoint-every", help="Time between checkpoints within an epoch (300, 5m, 1h): the most work a crash can lose. A checkpoint is also written at the end of every epoch.")
    parse_layer: Optional[int] = typer.Option(None, "--parse-layer", help="Layer (1-based) whose distances parse; default: the middle one.")
    split: Optional[SplitRule] = typer.Option(None, "--split", help="The split rule the model parses with by default (parse --split changes it); default: symmetric for zh, paper otherwise. With --seeds, the teachers' trees are built with it.")
    loss_log: Optional[Path] = typer.Option(TRAIN_DEFAULTS["loss_log"], "--loss-log", help="Append each step's training loss (averaged over processes) to this file: epoch, position, loss, tab-separated.")
    teacher: Optional[List[str]] = typer.Option(None, "--teacher", help="Self-training: instead of a language model, train a span parser (BiLSTM span scores, CKY) on the trees this model (a .onlstm file or en, zh) gives the corpus; the file written holds both and parses with the span parser. Repeated, the teachers vote: a span's target is the share of their trees that have it. Needs --valid; the options that apply are --out, --valid, --resume, --epochs, --lr, --batch-size, --seed, --time-budget, --threads, --right-branching, --second-round, --teacher-layers, --targets, --student-units.")
    right_branching: Optional[str] = typer.Option(None, "--right-branching", metavar="<weight|auto>", help=f"With --teacher or --seeds: the weight of a right-branching tree that votes beside the teachers (each weighs 1), or auto: a branching tree in the direction the teachers' trees lean (right- or left-branching; nothing assumes which way a language branches), of weight K × |the K teachers' agreement with right-branching trees − with left-branching ones| / their agreement with each other, on the validation text and each teacher's parse layer (its other layers vote but do not weigh it), 0 with one teacher, and none where a teacher votes with its span parser's trees (--second-round over a self-trained file: their lean was learned from an earlier round's votes). Default {SELF_TRAIN_DEFAULTS['right_branching']:g} with --teacher, {RECIPE_DEFAULTS['right_branching']} with --seeds.")
    second_round: bool = typer.Option(SELF_TRAIN_DEFAULTS["span_parser_teachers"], "--second-round", help="With --teacher: self-trained teachers teach with their span parsers' trees (a second round of self-training), not their language models'; so too for a focused PCFG (--family pcfg --teacher).")
    teacher_layers: Optional[str] = typer.Option(None, "--teacher-layers", metavar="<K,L,…>", help="With --teacher: each teacher votes with the trees of these layers of its language model (1-based, e.g. 2,3), each a voter of its own; default: its parse layer alone.")
    targets: VoteTargets = typer.Option(VoteTargets(SELF_TRAIN_DEFAULTS["targets"]), "--targets", help="With --teacher: what the span parser learns from the votes. shares: each span's share of the votes; tree: their consensus tree (the tree whose spans most voters have; scripts/span_votes.py), its spans 1 and every other span 0.")
    max_branching_agreement: float = typer.Option(SELF_TRAIN_DEFAULTS["max_branching_agreement"], "--max-branching-agreement", help="With --teacher or --seeds: a teacher whose trees of the validation text agree more than this (sentence F1, %) with right- or left-branching trees does not vote: it learned that rule, not the text's structure (where every teacher did, all vote). 100 lets every teacher vote.")
    min_relative_agreement: float = typer.Option(SELF_TRAIN_DEFAULTS["min_relative_agreement"], "--min-relative-agreement", help="With --teacher or --seeds: a teacher whose mean agreement with the other teachers' trees of the validation text (sentence F1) is below this share of the teachers' median does not vote: it learned little the others share (no gold tree is read; at least half of the teachers vote), e.g. 0.75. 0 lets every teacher vote.")
    lean_from: LeanFrom = typer.Option(LeanFrom(SELF_TRAIN_DEFAULTS["lean_from"]), "--lean-from", help="With --right-branching auto: where the branching voter's direction is read. trees: the way the teachers' trees of the validation text lean; word-order: only the part of that lean their trees lose when each sentence's words are shuffled (a lean that stays is the models' own, not the text's), and no voter where it has no sign all teachers share, or where their trees are mostly word frequency's (they agree with the trees of each word's rarity 15 points or more above random trees').")
    teacher_weights: TeacherWeights = typer.Option(TeacherWeights(SELF_TRAIN_DEFAULTS["teacher_weights"]), "--teacher-weights", help="How much each teacher's trees weigh in the vote. equal: each 1; agreement: each its mean agreement with the other teachers on the validation text above the agreement of random trees (no gold tree read), the weights averaging 1.")
    student_units: StudentUnits = typer.Option(StudentUnits(SELF_TRAIN_DEFAULTS["units"]), "--student-units", help="With --teacher or --seeds: what the span parser reads words by. host: as its host language model (the first teacher) reads them; ngrams: each word also by its character n-grams, so that no word is unknown to the parser the file ships; auto: ngrams where 5% or more of the training text's tokens are words seen once (or beyond the host's vocabulary), else host.")
    side_by_side: Optional[int] = typer.Option(RECIPE_DEFAULTS["side_by_side"], "--side-by-side", help="With --seeds: language models trained at once, one process each, the threads shared out between them. Default: one a thread where --threads is below the cores; else all --seeds at once where that is at most two a core, else even rounds of at most that many; 1 on a GPU.")
    max_ppl_ratio: Optional[float] = typer.Option(None, "--max-ppl-ratio", help=f"With --seeds: a language model whose validation perplexity is more than this many times the models' median does not vote (a failed run, not a weak seed; its file is kept beside --out); 0: every model votes. Default {RECIPE_DEFAULTS['max_ppl_ratio']:g}.")
    keep_intermediate: bool = typer.Option(RECIPE_DEFAULTS["keep_intermediate"], "--keep-intermediate", help="With --seeds: a finished recipe keeps its checkpoints, the language models' token files and the held-out split beside --out (only a rerun with a larger --time-budget reads them). By default they are removed once the recipe has finished; the language models, the span parser and the record stay.")
    focus_pcfgs: bool = typer.Option(RECIPE_DEFAULTS["focus_pcfgs"], "--focus-pcfgs/--no-focus-pcfgs", help="With --seeds and --families onlstm,pcfg: the PCFGs train once the language models have, each focused on the trees their votes propose (the --teacher of --family pcfg); without it, side by side with them on the text alone.")
    more_pcfgs: bool = typer.Option(RECIPE_DEFAULTS["more_pcfgs"], "--more-pcfgs/--no-more-pcfgs", help="With --seeds and focused PCFGs: where the PCFGs stop early and leave stage 1 time (a small text), more PCFGs train in it, in the rounds that fit: --seeds PCFGs reading rare words by their endings (OUT.pcfg-endings-seedS.onlstm, unfocused), then --seeds more focused ones; each votes. Where the PCFGs use their time, none do.")
    two_rounds: bool = typer.Option(RECIPE_DEFAULTS["second_round"], "--two-rounds/--one-round", help=f"With --seeds and focused PCFGs: the span parser trains in two thirds of the time the models leave and is kept beside --out (OUT.round1.onlstm); then a second span parser, on the votes of its trees and of the PCFGs, trains in the rest, until its validation loss has not improved for {SELF_TRAIN_DEFAULTS['patience']} epochs, and is written to --out. --one-round: the span parser on the models' votes is the last stage, in all their time.")
    families: Optional[str] = typer.Option(None, "--families", metavar="<auto|onlstm,pcfg>", help=f"With --seeds: the model families whose models teach, each trained with --seeds seeds side by side within the one --time-budget and each voting (e.g. onlstm,pcfg; a PCFG is written beside --out as OUT.pcfg-seedS.onlstm; pcfg-endings: unfocused PCFGs that read rare words by their endings). Default {RECIPE_DEFAULTS['families']}: onlstm,pcfg where the text has fewer than {RECIPE_DEFAULTS['pcfg_below_words_per_hour']:,.0f} words an hour of --time-budget, else onlstm.")
    seeds: int = typer.Option(RECIPE_DEFAULTS["seeds"], "--seeds", help=f"The self-training recipe in one command: this many language models (seeds --seed, --seed + 1, …; the Run, Language model and Text options apply to them, each written beside --out as OUT.lm-seedS.onlstm), then a span parser on the votes of their trees (each model's parse layer and the layer above it vote; a failed run, by --max-ppl-ratio, does not), written to --out. --time-budget is for the whole recipe: {RECIPE_DEFAULTS['lm_share']:.0%} for the language models, shared out in rounds of --side-by-side models, the rest for the span parser (the teachers' parse included). Without --valid, every 20th line of the corpus is held out to validate on. Rerun the same command to pick an interrupted recipe up where it stopped, or with a larger --time-budget to give a finished recipe's language models more time (those cut short go on; the span parser trains again). 1: one language model, no recipe.")

    def given(self, *names: str) -> dict:
        """Those of these options that were given: the others take the mode's config's defaults."""
        return {name: getattr(self, name) for name in names if getattr(self, name) is not None}


# The sections of `train --help`, in the order it shows them: the recipe first, what every mode shares next.
TRAIN_PANELS = {
    "Recipe (--seeds K)": ("seeds", "families", "focus_pcfgs", "more_pcfgs", "two_rounds", "side_by_side", "max_ppl_ratio",
                           "keep_intermediate"),
    "Run (every mode)": ("out", "valid", "time_budget", "epochs", "resume", "threads", "device", "checkpoint_every",
                         "seed", "lr", "batch_size", "clip", "loss_log"),
    "Model family (without --seeds)": ("family",),
    "Language model (--family onlstm, and the recipe's)": (
        "emb_size", "hidden_size", "layers", "chunk_size", "dropout", "dropout_h", "dropout_i", "dropout_e",
        "weight_drop", "master_input", "reverse", "optimizer", "lr_schedule", "average_steps", "weight_decay", "bptt",
        "parse_layer", "split"),
    "PCFG (--family pcfg)": ("nonterminals", "preterminals", "rank", "max_len", "patience"),
    "Student (--teacher, and the recipe's span parser)": ("teacher", "right_branching", "second_round",
                                                          "teacher_layers", "targets", "student_units",
                                                          "max_branching_agreement", "min_relative_agreement",
                                                          "lean_from", "teacher_weights"),
    "Text": ("lang", "tokenizer", "pretokenized", "keep_punct", "characters", "max_vocab", "min_freq", "units"),
}


@command_of(TrainOptions, TRAIN_PANELS)
@friendly_errors
@with_denormals_flushed  # before the language models start torch's threads: the recipe parses its PCFG teachers after
def train(o: TrainOptions):
    """Make a constituency parser from plain text, one sentence a line.

    The recipe, --seeds K (e.g. 4): K language models trained within the one --time-budget, then a span parser
    trained on the votes of their trees, written to --out (the language models beside it); on a small text for its
    budget neural PCFGs teach beside them (--families). Without --seeds: one model of --family, an ON-LSTM
    language model (it parses with its own distances) or a neural PCFG, under torchrun on several processes.
    With --teacher FILE: a student, a span parser trained on the trees that FILE's model gives the corpus (with
    --family pcfg: a PCFG whose likelihood is summed over the trees its --teacher files propose, parse-focusing)."""
    check_mode(o)
    check_run_files(o.corpus, o.out, o.valid, None if o.seeds > 1 else o.resume, o.loss_log, o.teacher or [])
    seconds, notes = given_budget(o.time_budget, recipe=o.seeds > 1)
    notes += unitless_warning("--checkpoint-every", o.checkpoint_every)
    budget = Budget(seconds, Invocation.started or time.time())  # the run's one budget
    with holding(o.out, make_folder=o.seeds == 1):
        if o.family == Family.pcfg:
            result = pcfg_command(o, budget, notes)
        elif o.teacher:
            result = self_train_command(o, budget, notes)
        else:
            result = language_models(o, budget, notes)
    if result.interrupted:
        raise typer.Exit(128 + int(result.stop_signal or signal.SIGINT))  # 130 for Ctrl-C, 143 for SIGTERM


def check_one_process(o: TrainOptions) -> None:
    """Under torchrun one model trains on all the processes, a language model or a PCFG: anything else would train
    once in each of them, each writing the same files. The first process says so; the others exit without a word."""
    from onlstm_cli.training.run.distributed import launched_rank, launched_world_size
    if launched_world_size() > 1 and (o.teacher or o.seeds > 1):
        if launched_rank() != 0:
            raise typer.Exit(2)
        what = ("a focused PCFG (--family pcfg --teacher)" if o.family == Family.pcfg and o.teacher
                else "a span parser (--teacher)" if o.teacher else "the recipe (--seeds K)")
        raise UserError(f"torchrun trains one language model or PCFG on all its processes; {what} trains in one "
                        "process: start it without torchrun")


def voter_options(o: TrainOptions) -> dict:
    """The options that choose which teachers vote and how, by SelfTrainConfig's names: every mode with teachers
    (the recipe, --teacher, a focused PCFG's --teacher) takes them alike."""
    return {"max_branching_agreement": o.max_branching_agreement, "min_relative_agreement": o.min_relative_agreement,
            "lean_from": o.lean_from.value, "teacher_weights": o.teacher_weights.value}


def check_mode(o: TrainOptions) -> None:
    """`train` makes one of three things (a language model, a recipe, a span parser on --teacher): options of
    another are refused in one line."""
    seeds, teacher = o.seeds, bool(o.teacher)
    check_one_process(o)
    if seeds < 1:
        RecipeConfig(seeds=seeds).check()  # refused in the recipe's words
    if teacher and seeds > 1:
        raise UserError("--seeds trains its own teachers: give either --seeds or --teacher")
    if not teacher and (o.second_round or o.teacher_layers or o.targets.value != SELF_TRAIN_DEFAULTS["targets"]):
        raise UserError("--second-round, --teacher-layers and --targets are for the span parser of --teacher")
    if o.max_ppl_ratio is not None and seeds == 1:
        raise UserError("--max-ppl-ratio chooses which of the --seeds language models vote: give --seeds K (K ≥ 2)")
    if o.keep_intermediate and seeds == 1:
        raise UserError("--keep-intermediate keeps the files of a recipe: give --seeds K (K ≥ 2)")
    if o.student_units.value != SELF_TRAIN_DEFAULTS["units"] and seeds == 1 and not teacher:
        raise UserError("--student-units is for a span parser: give --seeds K (K ≥ 2) or --teacher")
    for name, value in voter_options(o).items():
        if value != SELF_TRAIN_DEFAULTS[name] and seeds == 1 and not teacher:
            raise UserError(f"--{name.replace('_', '-')} is for a span parser's teachers: give --seeds K (K ≥ 2) or "
                            "--teacher")
    if o.family == Family.pcfg and teacher and (o.targets.value != SELF_TRAIN_DEFAULTS["targets"]
                                               or o.student_units.value != SELF_TRAIN_DEFAULTS["units"]
                                               or o.min_relative_agreement != SELF_TRAIN_DEFAULTS["min_relative_agreement"]):
        raise UserError("--targets, --student-units and --min-relative-agreement are for a span "
                        "parser: a PCFG's --teacher files focus its likelihood on their trees")
    if o.family == Family.pcfg and seeds > 1:
        raise UserError("--family trains one model; a recipe names its teachers' families with --families "
                        "(--seeds K --families onlstm,pcfg)")
    if o.families is not None and seeds == 1:
        raise UserError("--families names the families of a recipe's teachers: give --seeds K (K ≥ 2)")
    if o.family == Family.pcfg and o.units.value not in PCFG_UNIT_CHOICES:
        raise UserError(f"a PCFG reads words by {' or '.join(PCFG_UNIT_CHOICES)}, not --units {o.units.value}")
    if o.family != Family.pcfg and o.units.value not in LM_UNIT_CHOICES:
        raise UserError(f"--units {o.units.value} is for a PCFG (--family pcfg); a language model reads words by "
                        f"{', '.join(LM_UNIT_CHOICES)}")


def language_models(o: TrainOptions, budget: Budget, notes: list):
    """One language model (train_model), or with --seeds K the recipe (run_recipe), each checking the configs it
    is given; `notes` and what it took for the user, then what its file is, on stderr."""
    from onlstm_cli.errors import RankZeroFailed
    from onlstm_cli.text.languages import corpus_language
    from onlstm_cli.training.run.distributed import launched_rank
    lang, tokenizer, note = corpus_language(o.corpus, o.lang, o.tokenizer, o.characters)
    took = None if o.resume is not None else note  # a resumed run reads as its checkpoint says
    unvalidated = validation_note(o.valid) if o.seeds == 1 else None  # the recipe holds lines out itself
    log = FirstLine([*notes, took, unvalidated], err_line)
    model_config = dict(emb_size=o.emb_size, hidden_size=o.hidden_size, n_layers=o.layers, chunk_size=o.chunk_size,
                        dropout=o.dropout, dropout_h=o.dropout_h, dropout_i=o.dropout_i, dropout_e=o.dropout_e,
                        weight_drop=o.weight_drop, master_input=o.master_input.value, reverse=o.reverse)
    train_config = TrainConfig(**o.given("epochs", "batch_size", "lr", "clip"), time_budget=budget.seconds, bptt=o.bptt,
                               optimizer=o.optimizer, lr_schedule=o.lr_schedule.value,
                               average_steps=o.average_steps, weight_decay=o.weight_decay,
                               seed=o.seed, device=o.device, threads=o.threads,
                               checkpoint_every=parse_duration(o.checkpoint_every, "--checkpoint-every"),
                               loss_log=str(o.loss_log) if o.loss_log else None)
    lm_options = dict(tokenizer=tokenizer, lang=lang, pretokenized=o.pretokenized, keep_punct=o.keep_punct,
                      max_vocab=o.max_vocab, min_freq=o.min_freq, parse_layer=o.parse_layer, units=o.units.value,
                      split=o.split.value if o.split else None)
    with run_reporter(log) as reporter:
        if o.seeds > 1:
            from onlstm_cli.training.recipe.runner import run_recipe
            recipe = RecipeConfig(seeds=o.seeds, side_by_side=o.side_by_side, keep_intermediate=o.keep_intermediate,
                                  focus_pcfgs=o.focus_pcfgs, more_pcfgs=o.more_pcfgs, second_round=o.two_rounds,
                                  **o.given("right_branching", "max_ppl_ratio"),
                                  **({"families": family_list(o.families)} if o.families is not None else {}))
            result = run_recipe(o.corpus, o.out, o.valid, model_config, train_config, lm_options, recipe=recipe,
                                self_train=SelfTrainConfig(seed=o.seed, units=o.student_units.value,
                                                           **voter_options(o)),
                                resume=o.resume, reporter=reporter, log=log, budget=budget)
        else:
            from onlstm_cli.training.lm.train import train_model
            try:
                result = train_model(o.corpus, o.out, model_config, train_config, valid=o.valid, resume=o.resume,
                                     reporter=reporter, budget=budget, **lm_options)
            except RankZeroFailed:
                raise typer.Exit(2)  # rank 0 has said why
    if launched_rank() == 0:  # what the model file is, validated or why not (under torchrun, the first process says)
        log(result.summary() if o.seeds > 1 else result.summary(o.valid))
    return result


def pcfg_command(o: TrainOptions, budget: Budget, notes: list):
    """`train --family pcfg`: one neural PCFG (train_pcfg checks its configs); `notes` and what it took for the
    user, then how it ended, on stderr."""
    from onlstm_cli.config import PcfgTrainConfig
    from onlstm_cli.errors import RankZeroFailed
    from onlstm_cli.text.languages import corpus_language
    from onlstm_cli.training.pcfg.train import train_pcfg
    from onlstm_cli.training.run.distributed import launched_rank
    lang, tokenizer, note = corpus_language(o.corpus, o.lang, o.tokenizer, o.characters)
    if o.resume is not None or o.teacher:  # read as the checkpoint says, or as the teachers' language model reads
        note = None
    log = FirstLine([*notes, note, validation_note(o.valid)], err_line)
    train = PcfgTrainConfig(**o.given("epochs", "batch_size", "lr", "clip"), time_budget=budget.seconds,
                            max_len=o.max_len, patience=o.patience, seed=o.seed, device=o.device, threads=o.threads,
                            checkpoint_every=parse_duration(o.checkpoint_every, "--checkpoint-every"))
    endings = ENDING_CHARS if o.units.value == "endings" else 0
    options = dict(config=dict(nonterminals=o.nonterminals, preterminals=o.preterminals, rank=o.rank, endings=endings),
                   train=train, valid=o.valid, max_vocab=o.max_vocab, min_freq=o.min_freq, resume=o.resume,
                   budget=budget)
    with run_reporter(log) as reporter:
        if o.teacher:  # parse-focusing: the teachers vote as a span parser's do; the text is read as they read it
            from onlstm_cli.induction.models import ModelCache, resolve_model
            from onlstm_cli.training.student.focus import train_focused_pcfg
            cache = ModelCache("cpu")
            votes = SelfTrainConfig(**o.given("right_branching"), **voter_options(o),
                                    teacher_layers=layer_list(o.teacher_layers) if o.teacher_layers else (),
                                    span_parser_teachers=o.second_round)
            result = train_focused_pcfg(o.corpus, o.out, [cache.get(resolve_model(name)) for name in o.teacher],
                                        votes_config=votes, reporter=reporter, **options)
        else:
            try:
                result = train_pcfg(o.corpus, o.out, tokenizer=tokenizer, lang=lang, pretokenized=o.pretokenized,
                                    keep_punct=o.keep_punct, reporter=reporter, **options)
            except RankZeroFailed:
                raise typer.Exit(2)  # rank 0 has said why
    if launched_rank() == 0:  # under torchrun, the first process says how it ended
        log(result.summary(o.valid))
    return result


def family_list(text: str) -> tuple[str, ...]:
    """'onlstm,pcfg' → ("onlstm", "pcfg"), 'auto' → ("auto",); RecipeConfig.check and the recipe check each name."""
    return tuple(part.strip() for part in text.split(",") if part.strip())


def layer_list(text: str) -> tuple[int, ...]:
    """'2,3' → (2, 3): distinct layers, 1-based."""
    try:
        layers = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise UserError(f"--teacher-layers {text!r}: expected layer numbers separated by commas, e.g. 2,3") from None
    if min(layers) < 1 or len(set(layers)) != len(layers):
        raise UserError(f"--teacher-layers {text!r}: layers are numbered from 1, each given once")
    return layers


def self_train_command(o: TrainOptions, budget: Budget, notes: list):
    """`train --teacher`: the span parser of student/train.py (self_train checks its config); `notes`, then how it
    ended, on stderr."""
    from onlstm_cli.induction.models import ModelCache, resolve_model
    from onlstm_cli.training.lm.train import use_threads
    from onlstm_cli.training.student.train import self_train
    if o.valid is None:
        raise UserError("--teacher needs --valid: the teacher's trees of the validation text choose the epoch kept")
    config = SelfTrainConfig(**o.given("epochs", "batch_size", "lr", "right_branching"), seed=o.seed,
                             span_parser_teachers=o.second_round, targets=o.targets.value, units=o.student_units.value,
                             teacher_layers=layer_list(o.teacher_layers) if o.teacher_layers else (),
                             **voter_options(o))
    use_threads(o.threads)
    cache = ModelCache("cpu")
    log = FirstLine(notes, err_line)
    result = self_train(o.corpus, o.out, [cache.get(resolve_model(name)) for name in o.teacher], o.valid,
                        train=config, budget=budget, resume=o.resume, log=log)
    log(self_train_summary(result))
    return result
