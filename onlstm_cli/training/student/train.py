"""Self-training: a span parser (span/model.py) learns the trees its teachers give plain text.

A teacher is anything with a name, a tokenizer and its voters' trees of a batch of sentences (induction/teachers.py):
an ON-LSTM model file votes with its layers' trees as `onlstm parse` builds them. The span parser learns the share
of the votes each span gets (training/student/votes.py); no gold tree is used: the epoch kept is the one with the lowest loss
on the votes of the validation text. The file written is the host's language model (the first teacher's that has
one: its vocabulary, tokenizer and layers, for perplexity and `--layer`) with the span parser beside it, which
`parse` then uses by default (modelfile.py); where no teacher is a language model, it is the span parser alone with a
vocabulary of the corpus (kind "span"). An epoch-end checkpoint beside it lets an interrupted run resume.
"""
from __future__ import annotations

import math
import random
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F

from onlstm_cli import __version__
from onlstm_cli.config import DEFAULT_UNIT_BUCKETS, STUDENT_UNIT_CHOICES, SelfTrainConfig, SpanParserConfig
from onlstm_cli.errors import ModelFileError, TrainingError
from onlstm_cli.modelfile import (CHECKPOINT_FORMAT, FORMAT_VERSION, LoadedModel, atomic_save, model_archive,
                                  read_archive, span_archive, stored_weights)
from onlstm_cli.induction.teachers import Teacher, as_teacher
from onlstm_cli.training.run.files import Saves, check_destination, checkpoint_path
from onlstm_cli.training.run.clock import Budget, Clock
from onlstm_cli.training.run.guard import DivergenceGuard, epochs_since_best
from onlstm_cli.training.run.identity import first_change
from onlstm_cli.training.student.votes import Votes, votes_of
from onlstm_cli.span.model import SpanParser, padded, padded_units, trainable_spans
from onlstm_cli.signals import StopSignals


@dataclass
class SelfTrainResult:
    out: Path
    checkpoint: Path
    epochs_done: int              # epochs validated (the last one may have been cut short by the budget)
    best_valid_loss: float
    seconds: float
    stopped_early: bool           # validation stopped improving
    stopped_by_time: bool = False
    interrupted: bool = False
    stop_signal: int = 0
    teacher_agreement: list | None = None  # with several teachers: each one's mean agreement with the others (%)
    right_branching: float = 0.0  # the right-branching voter's weight the run used (AUTO's included)
    left_branching: float = 0.0   # the left-branching voter's (AUTO, where the teachers lean left)
    votes: Votes | None = None    # the teachers' votes it learned (student/check.py reads their validation part)


def span_targets(spans: list[dict], batch: list[int], size: int) -> torch.Tensor:
    target = torch.zeros(len(batch), size, size)
    for row, k in enumerate(batch):
        for (i, j), share in spans[k].items():
            target[row, i, j] = share
    return target


def batch_loss(parser: SpanParser, ids_of: list[list[int]], spans: list[dict], batch: list[int],
               eos_id: int, words_of: list | None = None) -> tuple[torch.Tensor, int]:
    """Mean binary cross-entropy over the spans a tree decides, and how many there were. `words_of`: the
    sentences' words, which a parser of n-grams reads (the vocabulary lacks some words of the validation text)."""
    ids, lengths = padded(ids_of, batch, eos_id)
    units = None
    if parser.unit_embed is not None and words_of is not None:
        units = padded_units([words_of[k] for k in batch], parser.unit_embed.buckets, ids.shape, ids.device)
    scores = parser(ids, lengths, units)
    mask = trainable_spans(lengths, scores.shape[1])
    target = span_targets(spans, batch, scores.shape[1])
    count = int(mask.sum())
    if count == 0:
        return scores.sum() * 0.0, 0
    return F.binary_cross_entropy_with_logits(scores[mask], target[mask]), count


def length_batches(ids_of: list[list[int]], batch_size: int, rng: random.Random | None) -> list[list[int]]:
    """Batches of sentences of about the same length (little padding), in random order when rng is given."""
    order = sorted(range(len(ids_of)), key=lambda k: (len(ids_of[k]), rng.random() if rng else 0))
    batches = [order[s:s + batch_size] for s in range(0, len(order), batch_size)]
    if rng:
        rng.shuffle(batches)
    return batches


def validation_loss(parser: SpanParser, ids_of, spans, eos_id: int, batch_size: int,
                    words_of: list | None = None) -> float:
    parser.eval()
    total, count = 0.0, 0
    with torch.inference_mode():
        for batch in length_batches(ids_of, batch_size, None):
            loss, n = batch_loss(parser, ids_of, spans, batch, eos_id, words_of)
            total, count = total + float(loss) * n, count + n
    return total / max(count, 1)


def student_archive(teacher: LoadedModel, parser: SpanParser, meta: dict) -> dict:
    """The student's file: its host's language model with the span parser beside it, or where the host has none
    (no teacher was a language model), the span parser alone (modelfile.span_archive)."""
    if teacher.model is None:
        return span_archive(parser, teacher.vocab, teacher.tokenizer, teacher.lang, teacher.meta["data"], meta)
    archive = model_archive(teacher.model, teacher.vocab, teacher.tokenizer, teacher.lang, teacher.parse_layer,
                            teacher.meta, split=teacher.split)
    archive["span_parser"] = {"config": parser.config.to_dict(), "meta": meta, "state_dict": stored_weights(parser)}
    return archive


def run_identity(corpus, valid, out: Path, teachers: list[Teacher], config: SpanParserConfig,
                 train: SelfTrainConfig) -> dict:
    """What a resumed run must share with the run that wrote its checkpoint (else its epochs, batches and
    best loss mean nothing): the files, the teachers, the student's sizes and the way batches are drawn."""
    return {"corpus": str(Path(corpus).resolve()), "valid": str(Path(valid).resolve()), "out": str(out.resolve()),
            "teachers": [str(Path(t.name).resolve()) for t in teachers], "span_parser": config.to_dict(),
            "batch_size": train.batch_size, "max_len": train.max_len, "seed": train.seed,
            "right_branching": train.right_branching, "span_parser_teachers": train.span_parser_teachers,
            "teacher_layers": list(train.teacher_layers), "extra_layers": train.extra_layers,
            "targets": train.targets}


# the CLI's words for each part of a run's identity
IDENTITY_NAMES = {"corpus": "the corpus", "valid": "--valid", "out": "--out", "teachers": "the teachers (--teacher)",
                  "span_parser": "the span parser's sizes", "batch_size": "--batch-size", "max_len": "the longest "
                  "training sentence", "seed": "--seed", "right_branching": "the right-branching voter's weight",
                  "span_parser_teachers": "--second-round", "teacher_layers": "--teacher-layers",
                  "extra_layers": "the layers beside each teacher's parse layer that vote",
                  "targets": "--targets"}


def check_resumable(state: dict, identity: dict, resume) -> None:
    change = first_change(state.get("identity", {}), identity)
    if change is not None:
        key, before, value = change
        raise TrainingError(f"{resume} is the checkpoint of a run with other {IDENTITY_NAMES[key]} "
                            f"({before} here: {value}); resume it with the run's own options, or start anew")


@dataclass
class Progress:
    """Where a self-training run stands; its checkpoint holds this with the weights and optimizer."""
    epoch: int = 1                 # the epoch being trained
    step: int = 0                  # batches of it done
    batches: list | None = None    # the epoch's batches, in their order (drawn at its start)
    best: float = math.inf
    history: list = field(default_factory=list)
    seconds: float = 0.0           # time spent by earlier runs of a resumed training
    sentences: int | None = None   # the training sentences the teachers parsed (the votes'), once known


def self_train(corpus: str | Path, out: str | Path, teacher, valid: str | Path,
               config: SpanParserConfig | None = None, train: SelfTrainConfig | None = None,
               budget: Budget | float | None = None, resume: str | Path | None = None, log=print,
               recipe: dict | None = None, host: LoadedModel | None = None) -> SelfTrainResult:
    """Train a span parser on `teacher`'s trees of `corpus`, keep the epoch with the best validation loss.
    `teacher`: a loaded model file or a Teacher (induction/teachers.py), or a list of them. Several teachers
    vote: a span's target is the share of their voters' trees that have it. The file written holds `host`'s
    language model (default: the first teacher's that has one; with none, the student is a file of its own), the
    student reading its vocabulary. `resume`: the checkpoint of an interrupted run (`out` + ".ckpt"), written at the end of every epoch, every `train.checkpoint_every` seconds and on
    Ctrl-C or SIGTERM; it goes on at the batch where that run stopped. `budget` (run/clock.py, or seconds) counts
    everything, the teachers' parse included, over all runs of a resumed training. `recipe`: kept in the file's meta."""
    train = (train or SelfTrainConfig()).check()
    teachers = [as_teacher(t, train.teacher_layers, train.extra_layers, train.span_parser_teachers)
                for t in (teacher if isinstance(teacher, (list, tuple)) else [teacher])]
    host = host or next((t.host for t in teachers if t.host is not None), None) or reading_host(corpus, teachers)
    out = Path(out)
    check_destination(out)
    check_teachers(teachers, out, corpus, valid)
    budget, started = budget if isinstance(budget, Budget) else Budget(budget), time.time()
    torch.manual_seed(train.seed)
    rng = random.Random(train.seed)
    config = config or student_config(host, corpus, train.units, log)
    parser = SpanParser(config, host.vocab.itos)
    start_from(parser, host.word_vectors())
    optimizer = torch.optim.Adam(parser.parameters(), lr=train.lr)
    identity = run_identity(corpus, valid, out, teachers, config, train)
    progress = Progress()
    if resume is not None:
        progress = resumed(resume, identity, parser, optimizer, rng)
        log(f"resumed in epoch {progress.epoch} after {progress.step} batches (best validation loss "
            f"{progress.best:.4f})")
    clock = Clock(budget, progress.seconds + time.time() - started)  # its set-up counts too
    # Ctrl-C or SIGTERM from here on ends with a checkpoint; during the teachers' parse, at the next chunk, with
    # nothing written (votes.parsed_in_time)
    with StopSignals() as signals:
        parse_started = time.time()  # the teachers' parse is timed apart: `onlstm info` shows each stage
        # after the checks: the parse takes a while, at most half the time left where a budget is short
        left = clock.budget_left()
        deadline = None if left is None or resume is not None else parse_started + left / 2
        # the student's trees are cut at marks when it parses (its host's rule): so are the trees it learns
        data = votes_of(teachers, corpus, valid, train, log, host, deadline, progress.sentences,
                        cut_at_marks=host.cuts_at_marks(), stopped=lambda: signals.caught)
        progress.sentences = len(data.ids)  # a resumed run's batches index these: it parses the same ones
        run = _Run(parser, optimizer, rng, data, train, progress, identity, out, clock, log,
                   {"teacher": voting_names(teachers, data), "corpus": str(corpus), "valid": str(valid),
                    "train": asdict(train), "onlstm_version": __version__, "teacher_agreement": data.agreement,
                    "right_branching": data.right_branching, "left_branching": data.left_branching,
                    "parse_seconds": round(time.time() - parse_started, 1),
                    **({"lexical_agreement": data.lexical} if data.lexical is not None else {}),
                    **({"collapsed_teachers": [asdict(c) for c in data.collapsed]} if data.collapsed else {}),
                    **({"far_apart_teachers": [asdict(c) for c in data.far_apart]} if data.far_apart else {}),
                    **({"recipe": recipe} if recipe else {})},
                   host)
        return run.loop(signals)


def student_config(host: LoadedModel, corpus: str | Path, units: str, log=print) -> SpanParserConfig:
    """The span parser's sizes: it reads its host's vocabulary, and each word also by its character n-grams where
    the host does, or where `units` says (SelfTrainConfig.units): then a word the host reads as <unk> is still
    read by its stem and endings, as a word of an agglutinative language mostly is."""
    from onlstm_cli.text.corpus import count_as_trained
    from onlstm_cli.text.units import reads_ngrams, unseen_share
    if units not in STUDENT_UNIT_CHOICES:
        raise TrainingError(f"unknown student units {units!r}; choose from {', '.join(STUDENT_UNIT_CHOICES)}")
    buckets = host.unit_buckets
    if not buckets and units != "host":
        counts = count_as_trained(corpus, host)  # as the votes read it
        if units == "ngrams" or reads_ngrams(counts, len(host.vocab)):
            buckets = DEFAULT_UNIT_BUCKETS
            unknown = sum(n for word, n in counts.items() if word not in host.vocab.stoi) / sum(counts.values())
            log(f"the span parser also reads every word by its character n-grams, so that no word is unknown to it "
                f"(of the training tokens, {unseen_share(counts):.0%} are words seen once, {unknown:.0%} words its "
                "host reads as <unk>)")
    return SpanParserConfig(vocab_size=len(host.vocab), word_rows=0 if host.model is None else host.config.word_rows,
                            unit_buckets=buckets)


def start_from(parser: SpanParser, vectors) -> None:
    """The student starts from the words (and n-grams) its host's language model has learned, where their sizes
    are its own (`vectors`: LoadedModel.word_vectors)."""
    if vectors is None:
        return
    words, units = vectors
    if tuple(words.shape) == tuple(parser.embed.weight.shape):
        parser.embed.weight.data.copy_(words)
        if parser.unit_embed is not None and units is not None and units.shape == parser.unit_embed.weight.shape:
            parser.unit_embed.weight.data.copy_(units)


def voting_names(teachers: list[Teacher], votes: Votes) -> list[str]:
    """The teachers whose trees the votes hold: all but those left out (Votes.left_out)."""
    left_out = {c.teacher for c in votes.left_out()}
    return [t.name for t in teachers if t.name not in left_out]


def reading_host(corpus, teachers: list[Teacher]) -> LoadedModel:
    """Where no teacher is a language model, what the student reads by and is written with (a file of kind "span"):
    the teachers' tokenizer and language, and a vocabulary of the corpus's words as `train` makes one."""
    from onlstm_cli.config import DEFAULT_MAX_VOCAB, DEFAULT_MIN_FREQ
    from onlstm_cli.text.corpus import count_words
    from onlstm_cli.text.vocab import Vocabulary
    tokenizer = teachers[0].tokenizer
    vocab = Vocabulary.build(count_words(corpus, tokenizer), DEFAULT_MAX_VOCAB, DEFAULT_MIN_FREQ)
    data = {"pretokenized": False, "keep_punct": False, "punctuation": "boundaries"}
    return LoadedModel(None, vocab, tokenizer, next((t.lang for t in teachers if t.lang), ""), 0, {"data": data},
                       split="symmetric", kind="span")


def check_teachers(teachers: list[Teacher], out: Path, *inputs) -> None:
    first = teachers[0]
    for other in teachers:
        if other.tokenizer.characters:
            raise TrainingError(f"{other.name} reads characters: it cannot teach the span parser, which reads words")
        if other.tokenizer.to_dict() != first.tokenizer.to_dict():
            raise TrainingError(f"{other.name} tokenizes otherwise than {first.name}: teachers must read the "
                                "same words")
    for path in [*(t.name for t in teachers), *inputs]:
        if path and Path(path).exists() and Path(path).resolve() == out.resolve():
            raise TrainingError(f"--out {out} is an input of this run: write the model to another file")


def resumed(path, identity: dict, parser: SpanParser, optimizer, rng: random.Random) -> Progress:
    state = read_archive(path, CHECKPOINT_FORMAT).get("self_training")
    if state is None:
        raise TrainingError(f"{path} is a language model's checkpoint, not a span parser's (train --teacher)")
    check_resumable(state, identity, path)
    try:
        parser.load_state_dict(state["state_dict"])
    except RuntimeError:
        raise TrainingError(f"{path} holds a span parser of other sizes than this run's") from None
    optimizer.load_state_dict(state["optimizer"])
    rng.setstate(state["rng"])
    torch.set_rng_state(state["torch_rng"])
    done_epochs = state["epoch"] if "step" not in state else None  # a checkpoint of the older, epoch-end kind
    if done_epochs is not None:
        return Progress(done_epochs + 1, 0, None, state["best"], state["history"], state.get("seconds", 0.0))
    return Progress(state["epoch"], state["step"], state["batches"], state["best"], state["history"],
                    state.get("seconds", 0.0), state.get("sentences"))  # absent: every sentence was parsed


class _Run:
    """The training loop of one self-training run, in the pieces nanoGPT's loop has: steps, evaluation,
    checkpoints, stopping."""

    def __init__(self, parser, optimizer, rng, data: Votes, train: SelfTrainConfig, progress: Progress,
                 identity: dict, out: Path, clock: Clock, log, meta: dict, teacher):
        self.parser, self.optimizer, self.rng, self.data, self.train = parser, optimizer, rng, data, train
        self.progress, self.identity, self.out, self.clock = progress, identity, out, clock
        self.budget = clock.time_budget
        self.log, self.meta, self.teacher = log, meta, teacher
        self.checkpoint = checkpoint_path(out)
        self.saves, self.guard = Saves(log), DivergenceGuard(train.max_bad_steps)

    def seconds(self) -> float:
        return self.clock.seconds()

    def time_up(self) -> bool:
        return self.clock.time_up()

    def loop(self, signals: StopSignals) -> SelfTrainResult:
        p, stop = self.progress, None
        while p.epoch <= self.train.epochs and stop is None:
            stop = self.train_epoch(signals)
            if stop == "interrupt":
                break
            self.end_epoch()
            if epochs_since_best([h["valid_loss"] for h in p.history]) >= self.train.patience:
                stop = "patience"
            elif stop is None and self.time_up():
                stop = "time"
        if stop == "interrupt":
            self.save_checkpoint()
            self.log(f"interrupted in epoch {p.epoch} after {p.step} batches; resume with --resume "
                     f"{self.checkpoint}")
        if not self.out.exists() and stop != "interrupt":
            raise TrainingError("the time budget ended before a span parser could be validated and saved")
        if self.saves.unsaved is not None:
            raise TrainingError(f"training stopped, but its last save failed: {self.saves.unsaved}")
        return SelfTrainResult(self.out, self.checkpoint, len(p.history), p.best, self.seconds(), stop == "patience",
                               stop == "time", stop == "interrupt", int(signals.caught),
                               self.meta.get("teacher_agreement"), self.data.right_branching,
                               self.data.left_branching, self.data)

    def train_epoch(self, signals) -> str | None:
        """Trains the rest of the current epoch; "interrupt" or "time" when it stopped before its end."""
        p = self.progress
        if p.batches is None:
            p.batches, p.step = length_batches(self.data.ids, self.train.batch_size, self.rng), 0
        self.parser.train()
        last_checkpoint = time.monotonic()
        while p.step < len(p.batches):
            if signals.caught:
                return "interrupt"
            if self.time_up() and p.history:  # a first epoch always yields a model to keep
                return "time"
            if self.time_up() and p.step >= max(1, len(p.batches) // 10):
                return "time"  # the first epoch ends early too, once it has seen a tenth of the text
            self.step(p.batches[p.step])
            p.step += 1
            if len(p.batches) >= 40 and p.step % (len(p.batches) // 4) == 0 and p.step < len(p.batches):
                self.log(f"epoch {p.epoch}: {p.step}/{len(p.batches)} batches, {self.seconds() / 60:.1f} min"
                         + (f" of {self.budget / 60:.1f}" if self.budget else ""))
            if time.monotonic() - last_checkpoint >= self.train.checkpoint_every:
                self.save_checkpoint()
                last_checkpoint = time.monotonic()
        return None

    def step(self, batch: list[int]) -> None:
        loss, _ = batch_loss(self.parser, self.data.ids, self.data.spans, batch, self.data.eos_id,
                             self.data.sentences or None)
        self.optimizer.zero_grad()
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(self.parser.parameters(), self.train.clip)
        if not (math.isfinite(loss.item()) and bool(torch.isfinite(norm))):  # not applied: it would spoil the weights
            self.optimizer.zero_grad()
            kept = f"{self.out} keeps the best span parser so far; " if self.out.exists() else ""
            self.guard.bad_step(lambda steps: (
                f"self-training diverged in epoch {self.progress.epoch}: {steps} steps in a row had a loss or "
                f"gradient that is not a finite number; {kept}start again with a lower --lr"))
            return
        self.guard.good_step()
        self.optimizer.step()

    def end_epoch(self) -> None:
        """Validate (an epoch cut short by the budget too), keep the model if best, checkpoint, next epoch."""
        p = self.progress
        loss = validation_loss(self.parser, self.data.valid_ids, self.data.valid_spans, self.data.eos_id, 64,
                               self.data.valid_sentences or None)
        fraction = p.step / max(len(p.batches), 1)
        epochs = p.epoch - 1 + fraction
        p.history.append({"epoch": p.epoch, "epochs": round(epochs, 3), "valid_loss": round(loss, 5)})
        improved = loss < p.best
        self.log(f"epoch {p.epoch}{'' if fraction == 1 else f' ({fraction:.0%} of it)'}: validation loss "
                 f"{loss:.4f}{' (best)' if improved else ''}, {self.seconds() / 60:.1f} min")
        if improved:
            p.best = loss
            meta = {**self.meta, "epochs": round(epochs, 3), "valid_loss": round(loss, 5), "history": list(p.history),
                    "seconds": round(self.seconds(), 1)}
            self.saves(lambda: atomic_save(student_archive(self.teacher, self.parser, meta), self.out))
        p.epoch, p.step, p.batches = p.epoch + 1, 0, None
        self.save_checkpoint()

    def save_checkpoint(self) -> None:
        p = self.progress
        self.saves(lambda: atomic_save({"format": CHECKPOINT_FORMAT, "version": FORMAT_VERSION, "self_training": {
            "state_dict": self.parser.state_dict(), "optimizer": self.optimizer.state_dict(), "epoch": p.epoch,
            "step": p.step, "batches": p.batches, "best": p.best, "history": p.history, "rng": self.rng.getstate(),
            "torch_rng": torch.get_rng_state(), "seconds": self.seconds(), "identity": self.identity,
            "sentences": p.sentences}},
            self.checkpoint))


def checkpoint_seconds(ckpt: Path | None) -> float:
    """The time a span parser's checkpoint says its earlier runs trained (0 without one, or one unread: the
    span parser's own reading of it says why)."""
    if ckpt is None:
        return 0.0
    try:
        seconds = read_archive(ckpt, CHECKPOINT_FORMAT).get("self_training", {}).get("seconds", 0.0)
    except ModelFileError:
        return 0.0
    return float(seconds) if isinstance(seconds, (int, float)) else 0.0
