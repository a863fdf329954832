"""`onlstm train`: a language model, the recipe (--seeds K), or a span parser on teachers' trees (--teacher)."""
from __future__ import annotations

import contextlib
import signal
import sys
from pathlib import Path
from typing import List, Optional

import typer

from onlstm_cli.cli.app import Invocation, err_line
from onlstm_cli.cli.options import (MODEL_DEFAULTS, RECIPE_DEFAULTS, SELF_TRAIN_DEFAULTS, TRAIN_DEFAULTS, LrSchedule, MasterInput, StudentUnits, Units,
                                    SplitRule, VoteTargets, duration_text, parse_duration)
from onlstm_cli.config import DEFAULT_MAX_VOCAB, DEFAULT_MIN_FREQ, DEFAULT_UNITS, SelfTrainConfig, TrainConfig, voter_weight
from onlstm_cli.cli.app import friendly_errors
from onlstm_cli.errors import UserError
from onlstm_cli.files import check_outputs, check_readable_file, output_lock, same_file


@friendly_errors
def train(
    corpus: Path = typer.Argument(..., help="UTF-8 text, one sentence a line."),
    out: Path = typer.Option(Path("model.onlstm"), "--out", "-o", help="Where the best model (by validation perplexity) goes; a .ckpt for --resume and the corpus as ids (.tokens) are written beside it."),
    valid: Optional[Path] = typer.Option(None, "--valid", help="Validation text (same format); picks the model to keep."),
    resume: Optional[Path] = typer.Option(None, "--resume", help="Continue from a checkpoint (OUT.ckpt), optimizer state included. Give the corpus, --valid and the run's options again (options that change the model or the data, and the global batch = processes × --batch-size, must be the checkpoint's); --epochs and --time-budget are totals over all the runs."),
    lang: str = typer.Option("auto", "--lang", help="en, zh or another code; auto: zh if the text has CJK characters, else en."),
    tokenizer: str = typer.Option("auto", "--tokenizer", help="ptb, jieba, unicode (words and punctuation apart by Unicode class) or whitespace; auto: ptb for en, jieba for zh, unicode otherwise."),
    pretokenized: bool = typer.Option(False, "--pretokenized", help="The corpus is already split into tokens by spaces."),
    keep_punct: bool = typer.Option(False, "--keep-punct", help="Train on punctuation tokens too (parse and evaluate then read them; scored trees leave them out)."),
    characters: bool = typer.Option(False, "--characters", help="Read CJK words a character at a time (no unknown words whatever the segmentation; a word's distance is its first character's). Stored in the model file."),
    max_vocab: int = typer.Option(DEFAULT_MAX_VOCAB, "--max-vocab", help="Largest vocabulary, <unk> and <eos> included."),
    min_freq: int = typer.Option(DEFAULT_MIN_FREQ, "--min-freq", help="Words seen fewer times become <unk>."),
    units: Units = typer.Option(Units(DEFAULT_UNITS), "--units", help="What the language models read words by (the span parser: --student-units): words; ngrams (each word also by its character n-grams, so that no word is unknown; --max-vocab words keep their own row); auto: ngrams where 5% or more of the corpus's tokens are words seen once. On Turkish, n-grams did not lift the trees (docs/experiments/units.md)."),
    emb_size: int = typer.Option(MODEL_DEFAULTS["emb_size"], "--emb-size", help="Embedding size (paper: 400)."),
    hidden_size: int = typer.Option(MODEL_DEFAULTS["hidden_size"], "--hidden-size", help="Hidden size of the inner layers (paper: 1150)."),
    layers: int = typer.Option(MODEL_DEFAULTS["n_layers"], "--layers", help="Number of ON-LSTM layers."),
    chunk_size: int = typer.Option(MODEL_DEFAULTS["chunk_size"], "--chunk-size", help="Neurons per master-gate level."),
    dropout: float = typer.Option(MODEL_DEFAULTS["dropout"], "--dropout", help="Locked dropout on the last layer's output."),
    dropout_h: float = typer.Option(MODEL_DEFAULTS["dropout_h"], "--dropout-h", help="Locked dropout between layers."),
    dropout_i: float = typer.Option(MODEL_DEFAULTS["dropout_i"], "--dropout-i", help="Locked dropout on the embeddings."),
    dropout_e: float = typer.Option(MODEL_DEFAULTS["dropout_e"], "--dropout-e", help="Embedding dropout, whole words."),
    weight_drop: float = typer.Option(MODEL_DEFAULTS["weight_drop"], "--weight-drop", help="DropConnect on the recurrent weights."),
    master_input: MasterInput = typer.Option(MasterInput(MODEL_DEFAULTS["master_input"]), "--master-input", help="paper: 1 − cumax; symmetric: the seed's reverse cumsum."),
    reverse: bool = typer.Option(MODEL_DEFAULTS["reverse"], "--reverse", help="Read each sentence right to left (a model to combine with a left-to-right one; stored in the model file)."),
    optimizer: str = typer.Option(TRAIN_DEFAULTS["optimizer"], "--optimizer", help="sgd; ntasgd (the paper's: SGD, then the running average of the weights once validation stalls); or adam (try --lr 0.002)."),
    lr_schedule: LrSchedule = typer.Option(LrSchedule(TRAIN_DEFAULTS["lr_schedule"]), "--lr-schedule", help=f"constant: --lr throughout; cosine: the rate falls along half a cosine from --lr to 0 by the end of the run (its --time-budget or its --epochs, whichever comes first); plateau: the rate is divided by {TRAIN_DEFAULTS['anneal_factor']:g} after {TRAIN_DEFAULTS['anneal_after']} epochs in a row without a better validation perplexity."),
    lr: Optional[float] = typer.Option(None, "--lr", help=f"Learning rate (default {TRAIN_DEFAULTS['lr']:g}; with --teacher {SELF_TRAIN_DEFAULTS['lr']:g}, Adam)."),
    weight_decay: float = typer.Option(TRAIN_DEFAULTS["weight_decay"], "--weight-decay", help="L2 penalty on all weights (the paper's 1.2e-6)."),
    clip: float = typer.Option(TRAIN_DEFAULTS["clip"], "--clip", help="Gradient norm clipping."),
    batch_size: Optional[int] = typer.Option(None, "--batch-size", help=f"Sequences per step in each process (with torchrun, the global batch is processes × this); default {TRAIN_DEFAULTS['batch_size']}, with --teacher {SELF_TRAIN_DEFAULTS['batch_size']} sentences."),
    bptt: int = typer.Option(TRAIN_DEFAULTS["bptt"], "--bptt", help="Mean window length of truncated back-propagation."),
    seed: int = typer.Option(TRAIN_DEFAULTS["seed"], "--seed", help="Random seed of the initial weights, dropout masks and windows (the same seed and options give the same model)."),
    epochs: Optional[int] = typer.Option(None, "--epochs", help=f"Most epochs (default {TRAIN_DEFAULTS['epochs']}: the time budget usually ends training first; with --teacher {SELF_TRAIN_DEFAULTS['epochs']}, fewer when validation stops improving)."),
    time_budget: Optional[str] = typer.Option(duration_text(TRAIN_DEFAULTS["time_budget"]), "--time-budget", help="Stop after this long (3600, 45m, 1.5h; 'none' for no limit)."),
    device: str = typer.Option(TRAIN_DEFAULTS["device"], "--device", help="auto, cpu or cuda."),
    threads: Optional[int] = typer.Option(TRAIN_DEFAULTS["threads"], "--threads", help="CPU threads for torch (default: all cores)."),
    checkpoint_every: str = typer.Option(duration_text(TRAIN_DEFAULTS["checkpoint_every"]), "--checkpoint-every", help="Time between checkpoints within an epoch (300, 5m, 1h): the most work a crash can lose. A checkpoint is also written at the end of every epoch."),
    parse_layer: Optional[int] = typer.Option(None, "--parse-layer", help="Layer (1-based) whose distances parse; default: the middle one."),
    split: Optional[SplitRule] = typer.Option(None, "--split", help="The split rule the model parses with by default (parse --split changes it); default: symmetric for zh, paper otherwise. With --seeds, the teachers' trees are built with it."),
    loss_log: Optional[Path] = typer.Option(TRAIN_DEFAULTS["loss_log"], "--loss-log", help="Append each step's training loss (averaged over processes) to this file: epoch, position, loss, tab-separated."),
    teacher: Optional[List[str]] = typer.Option(None, "--teacher", help="Self-training: instead of a language model, train a span parser (BiLSTM span scores, CKY) on the trees this model (a .onlstm file or en, zh) gives the corpus; the file written holds both and parses with the span parser. Repeated, the teachers vote: a span's target is the share of their trees that have it. Needs --valid; the options that apply are --out, --valid, --resume, --epochs, --lr, --batch-size, --seed, --time-budget, --threads, --right-branching, --second-round, --teacher-layers, --targets, --student-units."),
    right_branching: Optional[str] = typer.Option(None, "--right-branching", metavar="<weight|auto>", help=f"With --teacher or --seeds: the weight of a right-branching tree that votes beside the teachers (each weighs 1), or auto: a branching tree in the direction the teachers' trees lean (right- or left-branching; nothing assumes which way a language branches), of weight K × |the K teachers' agreement with right-branching trees − with left-branching ones| / their agreement with each other, on the validation text and each teacher's parse layer (its other layers vote but do not weigh it), 0 with one teacher. Default {SELF_TRAIN_DEFAULTS['right_branching']:g} with --teacher, {RECIPE_DEFAULTS['right_branching']} with --seeds."),
    second_round: bool = typer.Option(SELF_TRAIN_DEFAULTS["span_parser_teachers"], "--second-round", help="With --teacher: self-trained teachers teach with their span parsers' trees (a second round of self-training), not their language models'."),
    teacher_layers: Optional[str] = typer.Option(None, "--teacher-layers", metavar="<K,L,…>", help="With --teacher: each teacher votes with the trees of these layers of its language model (1-based, e.g. 2,3), each a voter of its own; default: its parse layer alone."),
    targets: VoteTargets = typer.Option(VoteTargets(SELF_TRAIN_DEFAULTS["targets"]), "--targets", help="With --teacher: what the span parser learns from the votes. shares: each span's share of the votes; tree: their consensus tree (the tree whose spans most voters have; scripts/span_votes.py), its spans 1 and every other span 0."),
    student_units: StudentUnits = typer.Option(StudentUnits(SELF_TRAIN_DEFAULTS["units"]), "--student-units", help="With --teacher or --seeds: what the span parser reads words by. host: as its host language model (the first teacher) reads them; ngrams: each word also by its character n-grams, so that no word is unknown to the parser the file ships; auto: ngrams where 5% or more of the training text's tokens are words seen once (or beyond the host's vocabulary), else host."),
    side_by_side: Optional[int] = typer.Option(RECIPE_DEFAULTS["side_by_side"], "--side-by-side", help="With --seeds: language models trained at once, one process each, the threads shared out between them. Default: one a thread where --threads is below the cores; else all --seeds at once where that is at most two a core, else even rounds of at most that many; 1 on a GPU."),
    max_ppl_ratio: Optional[float] = typer.Option(None, "--max-ppl-ratio", help=f"With --seeds: a language model whose validation perplexity is more than this many times the models' median does not vote (a failed run, not a weak seed; its file is kept beside --out); 0: every model votes. Default {RECIPE_DEFAULTS['max_ppl_ratio']:g}."),
    keep_intermediate: bool = typer.Option(RECIPE_DEFAULTS["keep_intermediate"], "--keep-intermediate", help="With --seeds: a finished recipe keeps its checkpoints, the language models' token files and the held-out split beside --out (only a rerun with a larger --time-budget reads them). By default they are removed once the recipe has finished; the language models, the span parser and the record stay."),
    seeds: int = typer.Option(RECIPE_DEFAULTS["seeds"], "--seeds", help=f"The self-training recipe in one command: this many language models (seeds --seed, --seed + 1, …; every option above applies to them, each written beside --out as OUT.lm-seedS.onlstm), then a span parser on the votes of their trees (each model's parse layer and the layer above it vote; a failed run, by --max-ppl-ratio, does not), written to --out. --time-budget is for the whole recipe: {RECIPE_DEFAULTS['lm_share']:.0%} for the language models, shared out in rounds of --side-by-side models, the rest for the span parser (the teachers' parse included). Without --valid, every 20th line of the corpus is held out to validate on. Rerun the same command to pick an interrupted recipe up where it stopped, or with a larger --time-budget to give a finished recipe's language models more time (those cut short go on; the span parser trains again). 1: one language model, no recipe."),
):
    """Train an ON-LSTM language model on plain text (on several processes when started by torchrun)."""
    check_mode(locals())
    check_train_files(corpus, out, valid, None if seeds > 1 else resume, loss_log, teacher or [])
    with holding(out, make_folder=seeds == 1):
        if teacher:
            return self_train_command(locals())
        result = train_language_models(locals())
    if result.interrupted:
        raise typer.Exit(128 + int(result.stop_signal or signal.SIGINT))  # 130 for Ctrl-C, 143 for SIGTERM


def holding(out: Path, make_folder: bool):
    """The run holds --out until it ends (files.output_lock): a second run on the same --out is refused, not left
    to replace it. Under torchrun the first process holds it. A language model's run makes --out's folder, as
    training does (run_checks.check_destination); the recipe refuses a folder that is not there."""
    from onlstm_cli.training.lm.distributed import launched_rank
    if launched_rank() != 0:
        return contextlib.nullcontext()
    if make_folder:
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise UserError(f"cannot make the folder of --out {out}: {(e.strerror or type(e).__name__).lower()}")
    return output_lock(out)


class FirstLine:
    """A line said once, before the first thing a run says: after the checks that refuse a run in one line."""

    def __init__(self, line: str | None, say):
        self.line, self.say = line, say

    def __call__(self, text: str) -> None:
        self.flush()
        self.say(text)

    def flush(self) -> None:
        if self.line:
            self.say(self.line)
            self.line = None


class SaysFirst:
    """A training reporter whose first line is preceded by `first`'s."""

    def __init__(self, reporter, first: FirstLine):
        self.reporter, self.first = reporter, first

    def __getattr__(self, name):
        return getattr(self.reporter, name)

    def __enter__(self):
        self.reporter.__enter__()
        return self

    def __exit__(self, *exc):
        return self.reporter.__exit__(*exc)

    def message(self, text: str) -> None:
        self.first.flush()
        self.reporter.message(text)

    def start_epoch(self, epoch: int, n_tokens: int) -> None:
        self.first.flush()
        self.reporter.start_epoch(epoch, n_tokens)


def train_language_models(o: dict):
    """`train`'s options (its locals): one language model, or with --seeds K the recipe; what its file is, on
    stderr at the end."""
    model_config, train_config, lm_options, note = lm_configs(o)
    corpus, out, valid, resume, seeds, log = o["corpus"], o["out"], o["valid"], o["resume"], o["seeds"], \
        FirstLine(note, err_line)
    from onlstm_cli.errors import RankZeroFailed
    from onlstm_cli.training.lm.distributed import launched_rank
    from onlstm_cli.training.lm.train import LineReporter, NullReporter, train_model
    from onlstm_cli.training.lm.report import RichReporter

    main_process = launched_rank() == 0  # under torchrun, rank 0 speaks for the run
    reporter = NullReporter() if not main_process else RichReporter() if sys.stderr.isatty() else LineReporter()
    with SaysFirst(reporter, log) as reporter:
        if seeds > 1:
            from onlstm_cli.training.recipe.runner import run_recipe
            ratio = RECIPE_DEFAULTS["max_ppl_ratio"] if o["max_ppl_ratio"] is None else o["max_ppl_ratio"]
            result = run_recipe(corpus, out, valid, model_config, train_config, lm_options, seeds,
                                o["right_branching"], resume, reporter, log=log, side_by_side=o["side_by_side"],
                                max_ppl_ratio=ratio, keep_intermediate=o["keep_intermediate"],
                                self_train=SelfTrainConfig(seed=train_config.seed, units=o["student_units"].value),
                                started=Invocation.started)
        else:
            try:
                result = train_model(corpus, out, model_config, train_config, valid=valid, resume=resume,
                                     reporter=reporter, **lm_options)
            except RankZeroFailed:
                raise typer.Exit(2)  # rank 0 has said why
    if main_process:  # what the model file is: validated, or why not
        log(result.summary() if seeds > 1 else result.summary(valid))
    return result


def check_train_files(corpus: Path, out: Path, valid: Path | None, resume: Path | None, loss_log: Path | None,
                      teachers: list[str]) -> None:
    """The files `train` reads can be read, and none of them is a file it writes (files.check_outputs), before
    anything is read or written. `resume` is None for the recipe, which may name its own --out."""
    check_readable_file(corpus, "corpus")
    for path, what in ((valid, "validation file"), (resume, "checkpoint")):
        if path is not None:
            check_readable_file(path, what)
    if loss_log is not None and loss_log.is_symlink():
        raise UserError(f"--loss-log {loss_log} is a symbolic link; not writing through it (give the file it "
                        "points to)")
    from onlstm_cli.induction.models import model_inputs
    from onlstm_cli.training.lm.checks import checkpoint_path, run_outputs
    teacher_files = [(f"--teacher {name}", path) for name in teachers for _, path in model_inputs(name)]
    outputs = [(name, path) for name, path in run_outputs(out)  # a resumed run rewrites the checkpoint it reads
               if resume is None or path != checkpoint_path(out) or not same_file(path, resume)]
    check_outputs([("the corpus", corpus), ("--valid", valid), ("--resume", resume), *teacher_files],
                  [*outputs, ("--loss-log", loss_log)])  # the recipe checks its own files (run_recipe)


def lm_configs(o: dict) -> tuple[dict, TrainConfig, dict, str | None]:
    """From `train`'s options (its locals), checked, with the language models' defaults where --teacher has its
    own: the model's config, the training config and the rest of train_model's arguments (tokenizer, language,
    vocabulary, parse layer, split rule), and the line that says which language and tokenizer it took."""
    o = {**o, **{name: TRAIN_DEFAULTS[name] for name in ("epochs", "lr", "batch_size") if o[name] is None},
         "budget": parse_duration(o["time_budget"])}
    check_lm_options(o)
    from onlstm_cli.text.tokenizers import Tokenizer
    from onlstm_cli.text.languages import assumed_note, check_lang, default_tokenizer, detect_lang
    lang, mix = detect_lang(o["corpus"]) if o["lang"] == "auto" else (check_lang(o["lang"]), None)
    tok = default_tokenizer(lang) if o["tokenizer"] == "auto" else Tokenizer(o["tokenizer"])
    tok.characters = o["characters"]
    assumed = assumed_note(lang, given=o["lang"] != "auto", mix=mix)
    note = None if o["resume"] is not None else (  # a resumed run reads as its checkpoint says
        f"language {lang}, tokenizer {tok.kind}{' (characters)' if tok.characters else ''}"
        + (f": {assumed}" if assumed else "") + "; --lang and --tokenizer change them")
    model_config = dict(emb_size=o["emb_size"], hidden_size=o["hidden_size"], n_layers=o["layers"],
                        chunk_size=o["chunk_size"], master_input=o["master_input"].value, reverse=o["reverse"],
                        **{k: o[k] for k in ("dropout", "dropout_h", "dropout_i", "dropout_e", "weight_drop")})
    train_config = TrainConfig(epochs=o["epochs"], time_budget=o["budget"], batch_size=o["batch_size"],
                               bptt=o["bptt"], optimizer=o["optimizer"], lr=o["lr"], lr_schedule=o["lr_schedule"].value,
                               weight_decay=o["weight_decay"], clip=o["clip"],
                               seed=o["seed"], device=o["device"], threads=o["threads"],
                               checkpoint_every=parse_duration(o["checkpoint_every"], "--checkpoint-every"),
                               loss_log=str(o["loss_log"]) if o["loss_log"] else None)
    lm_options = dict(tokenizer=tok, lang=lang, pretokenized=o["pretokenized"], keep_punct=o["keep_punct"],
                      max_vocab=o["max_vocab"], min_freq=o["min_freq"], parse_layer=o["parse_layer"],
                      units=o["units"].value,
                      split=o["split"].value if o["split"] else None)
    return model_config, train_config, lm_options, note


def check_lm_options(o: dict) -> None:
    """`train`'s language-model options (the command's locals, defaults filled in), each bad one a one-line
    UserError before anything is read or trained."""
    if not o["corpus"].is_file():
        raise UserError(f"corpus not found: {o['corpus']}")
    if o["valid"] is not None and not o["valid"].is_file():
        raise UserError(f"validation file not found: {o['valid']}")
    for name in ("batch_size", "bptt", "epochs", "layers", "emb_size", "hidden_size", "chunk_size"):
        if o[name] < 1:
            raise UserError(f"--{name.replace('_', '-')} must be at least 1")
    for name in ("dropout", "dropout_h", "dropout_i", "dropout_e", "weight_drop"):
        if not 0 <= o[name] < 1:
            raise UserError(f"--{name.replace('_', '-')} must be in [0, 1)")
    if o["lr"] <= 0:
        raise UserError("--lr must be positive")
    for name in ("clip", "weight_decay"):
        if o[name] < 0:
            raise UserError(f"--{name.replace('_', '-')} must be at least 0")
    if o["max_vocab"] < 3:
        raise UserError("--max-vocab must be at least 3 (<unk>, <eos> and one word)")
    if o["min_freq"] < 1:
        raise UserError("--min-freq must be at least 1")
    if o["optimizer"] not in ("adam", "sgd", "ntasgd"):
        raise UserError(f"--optimizer {o['optimizer']!r}: expected sgd, ntasgd or adam")
    if o["threads"] is not None and o["threads"] < 1:
        raise UserError("--threads must be at least 1")
    if parse_duration(o["checkpoint_every"], "--checkpoint-every") is None:
        raise UserError("--checkpoint-every needs a duration, such as 300, 5m or 1h")
    from onlstm_cli.text.tokenizers import TOKENIZERS
    if o["tokenizer"] != "auto" and o["tokenizer"] not in TOKENIZERS:
        raise UserError(f"--tokenizer {o['tokenizer']!r}: expected auto, {', '.join(TOKENIZERS)}")
    if o["device"] not in ("auto", "cpu", "cuda"):
        raise UserError(f"--device {o['device']!r}: expected auto, cpu or cuda")
    if o["emb_size"] % o["chunk_size"] or o["hidden_size"] % o["chunk_size"]:
        raise UserError(f"--emb-size and --hidden-size must be multiples of --chunk-size ({o['chunk_size']})")


def check_mode(o: dict) -> None:
    """`train` makes one of three things (a language model, a recipe, a span parser on --teacher): options of
    another, in `train`'s options (its locals), are refused in one line."""
    seeds, teacher = o["seeds"], bool(o["teacher"])
    if seeds < 1:
        raise UserError("--seeds must be at least 1")
    if teacher and seeds > 1:
        raise UserError("--seeds trains its own teachers: give either --seeds or --teacher")
    if not teacher and (o["second_round"] or o["teacher_layers"] or o["targets"].value != SELF_TRAIN_DEFAULTS["targets"]):
        raise UserError("--second-round, --teacher-layers and --targets are for the span parser of --teacher")
    if o["max_ppl_ratio"] is not None and seeds == 1:
        raise UserError("--max-ppl-ratio chooses which of the --seeds language models vote: give --seeds K (K ≥ 2)")
    if o["keep_intermediate"] and seeds == 1:
        raise UserError("--keep-intermediate keeps the files of a recipe: give --seeds K (K ≥ 2)")
    if o["student_units"].value != SELF_TRAIN_DEFAULTS["units"] and seeds == 1 and not teacher:
        raise UserError("--student-units is for a span parser: give --seeds K (K ≥ 2) or --teacher")


def layer_list(text: str) -> tuple[int, ...]:
    """'2,3' → (2, 3): distinct layers, 1-based."""
    try:
        layers = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise UserError(f"--teacher-layers {text!r}: expected layer numbers separated by commas, e.g. 2,3") from None
    if min(layers) < 1 or len(set(layers)) != len(layers):
        raise UserError(f"--teacher-layers {text!r}: layers are numbered from 1, each given once")
    return layers


def self_train_command(o: dict) -> None:
    """`train --teacher`: the span parser of student/train.py, from `train`'s options (its locals)."""
    corpus, out, valid, teachers, resume, seed, threads, second_round, teacher_layers = (
        o["corpus"], o["out"], o["valid"], o["teacher"], o["resume"], o["seed"], o["threads"], o["second_round"],
        o["teacher_layers"])
    epochs, lr, batch_size, budget = o["epochs"], o["lr"], o["batch_size"], parse_duration(o["time_budget"])
    right_branching = SELF_TRAIN_DEFAULTS["right_branching"] if o["right_branching"] is None else o["right_branching"]
    if not corpus.is_file():
        raise UserError(f"corpus not found: {corpus}")
    if valid is None:
        raise UserError("--teacher needs --valid: the teacher's trees of the validation text choose the epoch kept")
    if not valid.is_file():
        raise UserError(f"validation file not found: {valid}")
    if resume is not None and not resume.is_file():
        raise UserError(f"checkpoint not found: {resume}")
    try:  # the recipe checks its own (run_recipe)
        right_branching = voter_weight(right_branching)
    except ValueError as e:
        raise UserError(str(e)) from None
    config = SelfTrainConfig(seed=seed, right_branching=right_branching, span_parser_teachers=second_round,
                             teacher_layers=layer_list(teacher_layers) if teacher_layers else (),
                             targets=o["targets"].value, units=o["student_units"].value)
    if config.teacher_layers and second_round:
        raise UserError("--teacher-layers picks language-model layers; --second-round teaches with span parsers")
    for name, value, field in (("--epochs", epochs, "epochs"), ("--batch-size", batch_size, "batch_size"),
                               ("--lr", lr, "lr")):
        if value is not None:
            if value <= 0:
                raise UserError(f"{name} must be positive")
            setattr(config, field, value)
    if threads is not None:
        if threads < 1:
            raise UserError("--threads must be at least 1")
        import torch
        torch.set_num_threads(threads)
    from onlstm_cli.induction.models import ModelCache, resolve_model
    from onlstm_cli.training.student.train import self_train
    cache = ModelCache("cpu")
    loaded = [cache.get(resolve_model(name)) for name in teachers]
    result = self_train(corpus, out, loaded, valid, train=config, time_budget=budget, resume=resume,
                        log=err_line)
    how = ("interrupted" if result.interrupted else "stopped: validation no longer improving"
           if result.stopped_early else "time budget reached" if result.stopped_by_time else "done")
    best = f"best validation loss {result.best_valid_loss:.4f}; model: {result.out}" if result.out.exists() \
        else "no epoch validated yet, so no model"
    typer.echo(f"{how}: {result.epochs_done} epochs in {result.seconds / 60:.1f} min; {best}; checkpoint: "
               f"{result.checkpoint}", err=True)
    if result.interrupted:
        raise typer.Exit(128 + int(result.stop_signal or signal.SIGINT))
