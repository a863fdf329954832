"""The `onlstm` command: wires the modules together; no method logic lives here.

torch is imported inside the commands, so `onlstm --help` stays fast; the `train` options take their
defaults from the torch-free config dataclasses (config.py).
"""
from __future__ import annotations

import contextlib
import functools
import os
import re
import signal
import sys
from dataclasses import MISSING, fields
from enum import Enum
from pathlib import Path
from typing import List, Optional

import typer

from onlstm_cli.config import (DEFAULT_MAX_VOCAB, DEFAULT_MIN_FREQ, ModelConfig, RecipeConfig, SelfTrainConfig,
                               TrainConfig, voter_weight)
from onlstm_cli.errors import OnlstmError, UserError
from onlstm_cli.cli import parse_progress
from onlstm_cli.cli.help_format import PlainGroup
from onlstm_cli.console import stdout_closed, stdout_console
from onlstm_cli.text.input_lines import read_input_batches

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False, cls=PlainGroup,
                  help="Unsupervised constituency trees from Ordered-Neurons LSTM language models.")


def _version(value: bool):
    if value:
        from onlstm_cli import __version__
        typer.echo(f"onlstm {__version__}")
        raise typer.Exit()


@app.callback()
def root(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                      help="Print the version and exit.")):
    """Unsupervised constituency trees from Ordered-Neurons LSTM language models."""


def err_line(line: str) -> None:
    """A progress line of a long run, on stderr (stdout stays for results)."""
    typer.echo(line, err=True)


def fail(message: str, code: int = 2) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def friendly_errors(command):
    """Turn every expected failure into one line on stderr and a non-zero exit code, never a traceback."""
    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except typer.Exit:
            raise
        except BrokenPipeError:
            stdout_closed()
        except KeyboardInterrupt:
            fail("interrupted", 130)
        except OnlstmError as e:
            fail(str(e))
        except Exception as e:  # noqa: BLE001 — anything else is still one line, never a traceback
            name = type(e).__name__
            if isinstance(e, (OSError, UnicodeError)):
                fail(str(e).splitlines()[0] if str(e) else name)
            if os.environ.get("ONLSTM_DEBUG"):
                raise
            fail(f"internal error ({name}: {str(e).splitlines()[0] if str(e) else ''}); "
                 "set ONLSTM_DEBUG=1 to see the traceback", 1)
    return wrapper


def parse_duration(text: str | None, option: str = "--time-budget") -> float | None:
    """'90', '90s', '45m', '1.5h' → seconds; None or 'none' → no limit."""
    if text is None or text.strip().lower() in ("", "none"):
        return None
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([smh]?)\s*", text.lower())
    if not m:
        raise UserError(f"{option} {text!r}: expected a duration such as 3600, 45m or 1.5h")
    seconds = float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[m.group(2)]
    if seconds <= 0:
        raise UserError(f"{option} {text!r} must be positive ('none' for no limit)")
    return seconds


def detect_lang(path: Path, n_lines: int = 200) -> str:
    from onlstm_cli.text.vocab import has_cjk
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            head = "".join(line for _, line in zip(range(n_lines), f))
    except OSError as e:
        raise UserError(f"cannot read {path}: {e.strerror}") from None
    return "zh" if has_cjk(head) else "en"


class MasterInput(str, Enum):
    paper = "paper"
    symmetric = "symmetric"


class SplitRule(str, Enum):
    paper = "paper"
    symmetric = "symmetric"


class VoteTargets(str, Enum):
    shares = "shares"
    tree = "tree"


# The `train` options' defaults are the config dataclasses' (one place for each).
MODEL_DEFAULTS = {f.name: f.default for f in fields(ModelConfig) if f.default is not MISSING}
TRAIN_DEFAULTS = {f.name: f.default for f in fields(TrainConfig)}
SELF_TRAIN_DEFAULTS = {f.name: f.default for f in fields(SelfTrainConfig)}
RECIPE_DEFAULTS = {f.name: f.default for f in fields(RecipeConfig)}


def duration_text(seconds: float | None) -> str:
    """3600 → '1h', 2700 → '45m', 90 → '90s', None → 'none' (what parse_duration reads back)."""
    if seconds is None:
        return "none"
    for unit, size in (("h", 3600), ("m", 60)):
        if seconds % size == 0:
            return f"{seconds / size:g}{unit}"
    return f"{seconds:g}s"


@app.command()
@friendly_errors
def train(
    corpus: Path = typer.Argument(..., help="UTF-8 text, one sentence a line."),
    out: Path = typer.Option(Path("model.onlstm"), "--out", "-o", help="Where the best model (by validation perplexity) goes; a .ckpt for --resume and the corpus as ids (.tokens) are written beside it."),
    valid: Optional[Path] = typer.Option(None, "--valid", help="Validation text (same format); picks the model to keep."),
    resume: Optional[Path] = typer.Option(None, "--resume", help="Continue from a checkpoint (OUT.ckpt), optimizer state included. Give the corpus, --valid and the run's options again (options that change the model or the data, and the global batch = processes × --batch-size, must be the checkpoint's); --epochs and --time-budget are totals over all the runs."),
    lang: str = typer.Option("auto", "--lang", help="en, zh or another code; auto: zh if the text has CJK characters, else en."),
    tokenizer: str = typer.Option("auto", "--tokenizer", help="ptb, jieba, unicode (words and punctuation apart by Unicode class) or whitespace; auto: ptb for en, jieba for zh, unicode otherwise."),
    pretokenized: bool = typer.Option(False, "--pretokenized", help="The corpus is already split into tokens by spaces."),
    keep_punct: bool = typer.Option(False, "--keep-punct", help="Train on punctuation tokens too (evaluation ignores them)."),
    characters: bool = typer.Option(False, "--characters", help="Read CJK words a character at a time (no unknown words whatever the segmentation; a word's distance is its first character's). Stored in the model file."),
    max_vocab: int = typer.Option(DEFAULT_MAX_VOCAB, "--max-vocab", help="Largest vocabulary, <unk> and <eos> included."),
    min_freq: int = typer.Option(DEFAULT_MIN_FREQ, "--min-freq", help="Words seen fewer times become <unk>."),
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
    teacher: Optional[List[str]] = typer.Option(None, "--teacher", help="Self-training: instead of a language model, train a span parser (BiLSTM span scores, CKY) on the trees this model (a .onlstm file or en, zh) gives the corpus; the file written holds both and parses with the span parser. Repeated, the teachers vote: a span's target is the share of their trees that have it. Needs --valid; the options that apply are --out, --valid, --resume, --epochs, --lr, --batch-size, --seed, --time-budget, --threads, --right-branching, --second-round, --teacher-layers, --targets."),
    right_branching: Optional[str] = typer.Option(None, "--right-branching", metavar="<weight|auto>", help=f"With --teacher or --seeds: the weight of a right-branching tree that votes beside the teachers (each weighs 1), or auto: K × (the K teachers' agreement with right-branching trees − with left-branching ones) / their agreement with each other, on the validation text and each teacher's parse layer (its other layers vote but do not weigh it), 0 where that is negative or with one teacher. Default {SELF_TRAIN_DEFAULTS['right_branching']:g} with --teacher, {RECIPE_DEFAULTS['right_branching']} with --seeds."),
    second_round: bool = typer.Option(SELF_TRAIN_DEFAULTS["span_parser_teachers"], "--second-round", help="With --teacher: self-trained teachers teach with their span parsers' trees (a second round of self-training), not their language models'."),
    teacher_layers: Optional[str] = typer.Option(None, "--teacher-layers", metavar="<K,L,…>", help="With --teacher: each teacher votes with the trees of these layers of its language model (1-based, e.g. 2,3), each a voter of its own; default: its parse layer alone."),
    targets: VoteTargets = typer.Option(VoteTargets(SELF_TRAIN_DEFAULTS["targets"]), "--targets", help="With --teacher: what the span parser learns from the votes. shares: each span's share of the votes; tree: their consensus tree (the tree whose spans most voters have; scripts/span_votes.py), its spans 1 and every other span 0."),
    side_by_side: Optional[int] = typer.Option(RECIPE_DEFAULTS["side_by_side"], "--side-by-side", help="With --seeds: language models trained at once, one process each, the threads shared out between them. Default: one a thread of --threads (one a core without it), at most --seeds; 1 on a GPU."),
    max_ppl_ratio: Optional[float] = typer.Option(None, "--max-ppl-ratio", help=f"With --seeds: a language model whose validation perplexity is more than this many times the models' median does not vote (a failed run, not a weak seed; its file is kept beside --out); 0: every model votes. Default {RECIPE_DEFAULTS['max_ppl_ratio']:g}."),
    seeds: int = typer.Option(RECIPE_DEFAULTS["seeds"], "--seeds", help=f"The self-training recipe in one command: this many language models (seeds --seed, --seed + 1, …; every option above applies to them, each written beside --out as OUT.lm-seedS.onlstm), then a span parser on the votes of their trees (each model's parse layer and the layer above it vote; a failed run, by --max-ppl-ratio, does not), written to --out. --time-budget is for the whole recipe: {RECIPE_DEFAULTS['lm_share']:.0%} for the language models, shared out in rounds of --side-by-side models, the rest for the span parser (the teachers' parse included). Without --valid, every 20th line of the corpus is held out to validate on. Rerun the same command to pick an interrupted recipe up where it stopped, or with a larger --time-budget to give a finished recipe's language models more time (those cut short go on; the span parser trains again). 1: one language model, no recipe."),
):
    """Train an ON-LSTM language model on plain text (on several processes when started by torchrun)."""
    budget = parse_duration(time_budget)
    check_mode(seeds, bool(teacher), second_round or bool(teacher_layers)
               or targets.value != SELF_TRAIN_DEFAULTS["targets"], recipe_options=max_ppl_ratio is not None)
    if teacher:
        right_branching = SELF_TRAIN_DEFAULTS["right_branching"] if right_branching is None else right_branching
        return self_train_command(corpus, out, valid, teacher, resume, epochs, lr, batch_size, seed, budget, threads,
                                  right_branching, second_round, targets.value, teacher_layers)
    model_config, train_config, lm_options = lm_configs(locals())

    from onlstm_cli.training.distributed import launched_rank
    from onlstm_cli.training.train import LineReporter, NullReporter, train_model
    from onlstm_cli.errors import RankZeroFailed
    from onlstm_cli.training.train_report import RichReporter

    main_process = launched_rank() == 0  # under torchrun, rank 0 speaks for the run
    reporter = NullReporter() if not main_process else RichReporter() if sys.stderr.isatty() else LineReporter()
    with reporter:
        if seeds > 1:
            from onlstm_cli.training.recipe import run_recipe
            result = run_recipe(corpus, out, valid, model_config, train_config, lm_options, seeds, right_branching,
                                resume, reporter, log=err_line, side_by_side=side_by_side,
                                max_ppl_ratio=RECIPE_DEFAULTS["max_ppl_ratio"] if max_ppl_ratio is None
                                else max_ppl_ratio)
        else:
            try:
                result = train_model(corpus, out, model_config, train_config, valid=valid, resume=resume,
                                     reporter=reporter, **lm_options)
            except RankZeroFailed:
                raise typer.Exit(2)  # rank 0 has said why
    if main_process:  # what the model file is: validated, or why not
        typer.echo(result.summary() if seeds > 1 else result.summary(valid), err=True)
    if result.interrupted:
        raise typer.Exit(128 + int(result.stop_signal or signal.SIGINT))  # 130 for Ctrl-C, 143 for SIGTERM


def lm_configs(o: dict) -> tuple[dict, TrainConfig, dict]:
    """From `train`'s options (its locals), checked, with the language models' defaults where --teacher has its
    own: the model's config, the training config and the rest of train_model's arguments (tokenizer, language,
    vocabulary, parse layer, split rule)."""
    o = {**o, **{name: TRAIN_DEFAULTS[name] for name in ("epochs", "lr", "batch_size") if o[name] is None}}
    check_lm_options(o)
    from onlstm_cli.text.vocab import Tokenizer, default_tokenizer
    lang = detect_lang(o["corpus"]) if o["lang"] == "auto" else o["lang"]
    tok = default_tokenizer(lang) if o["tokenizer"] == "auto" else Tokenizer(o["tokenizer"])
    tok.characters = o["characters"]
    model_config = dict(emb_size=o["emb_size"], hidden_size=o["hidden_size"], n_layers=o["layers"],
                        chunk_size=o["chunk_size"], master_input=o["master_input"].value, reverse=o["reverse"],
                        **{k: o[k] for k in ("dropout", "dropout_h", "dropout_i", "dropout_e", "weight_drop")})
    train_config = TrainConfig(epochs=o["epochs"], time_budget=o["budget"], batch_size=o["batch_size"],
                               bptt=o["bptt"], optimizer=o["optimizer"], lr=o["lr"], weight_decay=o["weight_decay"],
                               clip=o["clip"], seed=o["seed"], device=o["device"], threads=o["threads"],
                               checkpoint_every=parse_duration(o["checkpoint_every"], "--checkpoint-every"),
                               loss_log=str(o["loss_log"]) if o["loss_log"] else None)
    lm_options = dict(tokenizer=tok, lang=lang, pretokenized=o["pretokenized"], keep_punct=o["keep_punct"],
                      max_vocab=o["max_vocab"], min_freq=o["min_freq"], parse_layer=o["parse_layer"],
                      split=o["split"].value if o["split"] else None)
    return model_config, train_config, lm_options


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
    if o["tokenizer"] not in ("auto", "ptb", "jieba", "unicode", "whitespace"):
        raise UserError(f"--tokenizer {o['tokenizer']!r}: expected auto, ptb, jieba, unicode or whitespace")
    if o["device"] not in ("auto", "cpu", "cuda"):
        raise UserError(f"--device {o['device']!r}: expected auto, cpu or cuda")
    if o["emb_size"] % o["chunk_size"] or o["hidden_size"] % o["chunk_size"]:
        raise UserError(f"--emb-size and --hidden-size must be multiples of --chunk-size ({o['chunk_size']})")


def check_mode(seeds: int, teacher: bool, span_parser_options: bool, recipe_options: bool = False) -> None:
    """`train` makes one of three things (a language model, a recipe, a span parser on --teacher): options of
    another are refused in one line."""
    if seeds < 1:
        raise UserError("--seeds must be at least 1")
    if teacher and seeds > 1:
        raise UserError("--seeds trains its own teachers: give either --seeds or --teacher")
    if not teacher and span_parser_options:
        raise UserError("--second-round, --teacher-layers and --targets are for the span parser of --teacher")
    if recipe_options and seeds == 1:
        raise UserError("--max-ppl-ratio chooses which of the --seeds language models vote: give --seeds K (K ≥ 2)")


def layer_list(text: str) -> tuple[int, ...]:
    """'2,3' → (2, 3): distinct layers, 1-based."""
    try:
        layers = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise UserError(f"--teacher-layers {text!r}: expected layer numbers separated by commas, e.g. 2,3") from None
    if min(layers) < 1 or len(set(layers)) != len(layers):
        raise UserError(f"--teacher-layers {text!r}: layers are numbered from 1, each given once")
    return layers


def self_train_command(corpus: Path, out: Path, valid: Path | None, teachers: list[str], resume: Path | None,
                       epochs: int | None, lr: float | None, batch_size: int | None, seed: int,
                       budget: float | None, threads: int | None, right_branching: float | str,
                       second_round: bool, targets: str = SELF_TRAIN_DEFAULTS["targets"],
                       teacher_layers: str | None = None) -> None:
    """`train --teacher`: the span parser of self_training.py."""
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
                             teacher_layers=layer_list(teacher_layers) if teacher_layers else (), targets=targets)
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
    from onlstm_cli.induction.parser import ModelCache, resolve_model
    from onlstm_cli.training.self_training import self_train
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


class OutputFormat(str, Enum):
    bracket = "bracket"
    json = "json"
    nltk = "nltk"
    tree = "tree"
    svg = "svg"
    html = "html"


ENSEMBLE_HELP = ("Combine the distances of every model in an ensemble file, as the file says (averaged as they are, "
                 "or as standard scores or ranks per sentence; see scripts/ship_model.py --member); --no-ensemble "
                 "uses its first model only.")


@app.command()
@friendly_errors
def parse(
    files: Optional[List[Path]] = typer.Argument(None, help="Text files, one sentence a line (default: stdin)."),
    model: Optional[str] = typer.Option(None, "--model", "-m", help="A .onlstm file or a bundled model (BUNDLED_MODELS); default: zh for lines with CJK characters, else en."),
    output_format: Optional[OutputFormat] = typer.Option(None, "--format", "-f", help="bracket, json, nltk (ASCII drawing), tree (rich), svg (a picture per sentence: tree, distance bars, split order; one a line, or files with --out-dir) or html (one page for all lines); default: tree on a terminal, else bracket."),
    out_dir: Optional[Path] = typer.Option(None, "--out-dir", help="With --format svg: write line-000001.svg … into this folder instead of stdout."),
    distances: bool = typer.Option(False, "--distances", "-d", help="Show each word's distance."),
    layer: Optional[int] = typer.Option(None, "--layer", help="Layer (1-based) whose distances parse; default: the model's (a self-trained file: its span parser, whose trees --split does not change)."),
    split: Optional[SplitRule] = typer.Option(None, "--split", help="paper: the ON-LSTM rule (the largest-distance word k opens the right part and is split off first); symmetric: distance k is the boundary before word k, the left and right parts treated alike. Default: the model's."),
    pretokenized: bool = typer.Option(False, "--pretokenized", help="Split lines on spaces only (normalization still applies)."),
    batch_size: int = typer.Option(64, "--batch-size", help="Sentences per forward pass."),
    device: str = typer.Option("cpu", "--device", help="cpu, cuda or auto."),
    ensemble: bool = typer.Option(True, "--ensemble/--no-ensemble", help=ENSEMBLE_HELP),
    jobs: Optional[int] = typer.Option(None, "--jobs", "-j", help="Worker processes, each with its own copy of the model; the output is the same, in input order. Default: 1 on a machine of up to 2 cores (its threads already share the work), else one per 2 cores."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write the output to this file instead of stdout: whole, when parsing is done (a failed or interrupted run leaves the file as it was); a symbolic link is refused, not written through."),
):
    """Parse sentences (one a line) into unlabeled binary trees.

    Output line N answers input line N; from a pipe, each line is answered as soon as it has come. Control
    characters in the input (NUL, ESC, DEL, …) are read as spaces.

    Pictures: --format svg (one SVG a line, or with --out-dir DIR one file a sentence), --format html (one
    page for all lines, to open in a browser); `onlstm evaluate --html report.html` draws the model's trees
    beside the gold ones.
    """
    from onlstm_cli.fast import PARSE_KERNEL_CACHE, size_kernel_cache
    from onlstm_cli.induction.line_parser import BLOCK, LineParser
    from onlstm_cli.induction.parallel import check_jobs, default_jobs, parse_in_workers

    size_kernel_cache(PARSE_KERNEL_CACHE)
    if batch_size < 1:
        raise UserError("--batch-size must be at least 1")
    jobs = default_jobs() if jobs is None else check_jobs(jobs)
    if layer is not None and layer < 1:
        raise UserError("--layer must be at least 1")
    if files is None and sys.stdin is None:  # started with stdin closed (`onlstm parse <&-`)
        raise UserError("no input: stdin is closed; pipe sentences into 'onlstm parse' or give file names")
    if output is None and sys.stdout is None:
        raise UserError("stdout is closed; give --output FILE")
    if output is not None and out_dir is not None:
        raise UserError("--output and --out-dir: give one (--out-dir writes a file per sentence)")
    if files is None and sys.stdin.isatty():
        raise UserError("no input: pipe sentences into 'onlstm parse' or give file names")
    if out_dir is not None and output_format != OutputFormat.svg:
        raise UserError("--out-dir goes with --format svg")
    # a bad --model fails before any input is read
    parser = LineParser.load(model, device=device, batch_size=batch_size, layer=layer,
                             split=split.value if split else None, pretokenized=pretokenized, ensemble=ensemble,
                             warn=False)  # warned below, in this process, whichever processes parse
    fmt = output_format or (OutputFormat.tree if output is None and sys.stdout.isatty() else OutputFormat.bracket)
    # each batch is answered (written and flushed) before the next is read: from a pipe, a batch is what
    # has arrived, so output keeps up with input line by line (see read_input_batches)
    lines = read_input_batches(files or [], BLOCK)
    batches = parser.parse_batches(lines) if jobs == 1 else parse_in_workers(parser, lines, jobs, BLOCK)
    if parse_progress.wanted(output is not None):
        batches = parse_progress.with_progress(batches)
    batches = parser.unreadable_warnings(batches, lambda message: typer.echo(f"warning: {message}", err=True))
    with parse_output(output) as out:
        refused = write_parsed(batches, parser, out, fmt, distances, out_dir)
    if refused:
        raise UserError(f"{refused} input line{'s' if refused > 1 else ''} not parsed (see above); every other "
                        "line was answered")


@contextlib.contextmanager
def parse_output(path: Path | None):
    """stdout, or for --output a file written whole when the block ends (modelfile.atomic_file): a failed or
    interrupted parse leaves the old file, not half of a new one."""
    if path is None:
        yield sys.stdout
        return
    from onlstm_cli.modelfile import atomic_file
    with atomic_file(path, "w", refuse_symlink=True) as f:
        yield f


def write_parsed(batches, parser, out, fmt: OutputFormat, distances: bool, out_dir: Path | None) -> int:
    """Write each batch's answers to `out` as they come, flushed after each batch; the number of lines refused."""
    from onlstm_cli.text.formats import distances_text, to_ascii, to_bracket, to_json, to_rich
    from onlstm_cli.errors import TreeTooDeepError
    if fmt in (OutputFormat.svg, OutputFormat.html):
        from onlstm_cli.pictures.picture_files import write_pictures
        write_pictures(batches, parser, out, html=fmt == OutputFormat.html, out_dir=out_dir)
        return 0
    console = stdout_console(file=out) if fmt == OutputFormat.tree else None
    number, refused = 0, 0  # input lines so far, for messages; lines not parsed
    for batch in batches:
        for sentence in batch:
            number += 1
            if sentence.error:
                typer.echo(f"error: input line {number}: {sentence.error}", err=True)
                refused += 1
            if sentence.tree is None:
                out.write("\n")
                continue
            shown = distances_text(sentence.tokens, sentence.distances) if distances else ""
            if fmt == OutputFormat.bracket:
                out.write(to_bracket(sentence.tree) + (f"\t{shown}" if distances else "") + "\n")
            elif fmt == OutputFormat.json:
                out.write(to_json(sentence.tree, sentence.distances) + "\n")
            elif fmt == OutputFormat.nltk:
                try:
                    drawing = to_ascii(sentence.tree)
                except TreeTooDeepError as e:
                    raise UserError(f"input line {number}: {e}") from None
                out.write(drawing.rstrip("\n") + "\n")
                if distances:
                    out.write(f"distances: {shown}\n")
            else:
                console.print(to_rich(sentence.tree))
                if distances:
                    console.print(f"distances: {shown}", markup=False)
        out.flush()
    return refused


@app.command()
@friendly_errors
def info(
    model: str = typer.Argument(..., help="A .onlstm file or a bundled model (BUNDLED_MODELS)."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
):
    """What a model holds: sizes, training data and recipe, validation perplexity, span parser, and the
    figures of its model card (NAME.md beside the file), if it has one."""
    import json

    from onlstm_cli.info import info_text, model_info
    report = model_info(model)
    typer.echo(json.dumps(report, ensure_ascii=False, indent=2, default=str) if as_json else info_text(report))


BASELINE_ROWS = (("right", "right-branching"), ("left", "left-branching"), ("balanced", "balanced"),
                 ("random", "random"))


@app.command()
@friendly_errors
def evaluate(
    gold: Path = typer.Option(..., "--gold", "-g", help="Gold trees: bracketed trees (one a line or .mrg files, or a folder of them) or CoNLL-U."),
    model: Optional[str] = typer.Option(None, "--model", "-m", help="A .onlstm file or a bundled model (BUNDLED_MODELS); default: by the gold text's script."),
    pred: Optional[Path] = typer.Option(None, "--pred", help="Score these trees (one bracketed tree a line) instead of a model's."),
    layer: Optional[int] = typer.Option(None, "--layer", help="Layer (1-based) whose distances parse; default: the model's (a self-trained file: its span parser, whose trees --split does not change)."),
    all_layers: bool = typer.Option(False, "--all-layers", help="Also score every layer of the model."),
    split: Optional[SplitRule] = typer.Option(None, "--split", help="paper: the ON-LSTM rule (the largest-distance word k opens the right part and is split off first); symmetric: distance k is the boundary before word k, the left and right parts treated alike. Default: the model's (paper with --pred)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the random-tree baseline."),
    device: str = typer.Option("cpu", "--device", help="cpu, cuda or auto."),
    text: Optional[List[Path]] = typer.Option(None, "--text", help="Also report the model's perplexity on this text (one sentence a line, read as in training); may be repeated."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
    ensemble: bool = typer.Option(True, "--ensemble/--no-ensemble", help=ENSEMBLE_HELP),
    html: Optional[Path] = typer.Option(None, "--html", help="Also write the report as one self-contained page: the table, charts (F1 by length, per layer, label recall) and example trees beside the gold ones."),
    examples: int = typer.Option(3, "--examples", help="With --html: how many example sentences to draw beside their gold trees (the best, the worst and evenly between by sentence F1)."),
):
    """Unlabeled F1 against gold trees, beside right/left-branching, balanced and random trees."""
    import json

    from onlstm_cli.text.treebanks import read_gold, read_predicted
    from onlstm_cli.evaluation.metrics import evaluate as score
    from onlstm_cli.pictures.picture_files import check_destination, warn_once_about_cjk, write_text_atomic
    from onlstm_cli.trees import baseline_trees

    if html is not None:
        check_destination(html)  # before the evaluation, which may take minutes
    sentences = read_gold(gold)
    report = {"gold": str(gold), "sentences": len(sentences), "split": split.value if split else "paper",
              "systems": {}}
    systems = report["systems"]
    shown = None  # (trees, distances) of the first system, for the examples of --html
    if pred is not None:
        shown = (read_predicted(pred, sentences), None)
        systems["pred"] = score(sentences, shown[0])
        report["pred"] = str(pred)
    else:
        from onlstm_cli.evaluation.model_scores import score_model
        fields, model_systems, shown = score_model(sentences, model, layer=layer, split=split.value if split else None,
                                                   all_layers=all_layers, device=device, ensemble=ensemble, text=text)
        report.update(fields)
        systems.update(model_systems)
    words = [s.words for s in sentences]
    for name, label in BASELINE_ROWS:
        systems[label] = score(sentences, baseline_trees(words, name, seed))
    report["upper_bound"] = next(iter(systems.values()))["upper_bound"]
    if html is not None:
        from onlstm_cli.pictures.report_page import choose_examples, report_html
        warn_once_about_cjk(word for sentence in sentences for word in sentence.words)
        chosen = choose_examples(sentences, shown[0], shown[1], system=next(iter(systems)), count=examples)
        write_text_atomic(html, report_html(report, chosen), refuse_symlink=True)
    if as_json:
        typer.echo(json.dumps(report, ensure_ascii=False, indent=2))
    else:
        from onlstm_cli.evaluation.report_text import print_report
        print_report(report)


def main() -> None:
    app()
