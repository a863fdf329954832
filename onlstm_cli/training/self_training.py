"""Self-training: a span parser (span_parser.py) learns the trees a teacher ON-LSTM model gives plain text.

The teacher (any model file: one model, an ensemble, either direction) parses every training and validation
sentence as `onlstm parse` would; the span parser is trained to tell the teacher's constituents from all
other spans. No gold tree is used: the epoch kept is the one with the lowest loss on the teacher's trees of
the validation text. The model file written is the teacher's first language model (its vocabulary,
tokenizer and layers, for perplexity and `--layer`) with the span parser beside it, which `parse` then
uses by default (modelfile.py). An epoch-end checkpoint beside it lets an interrupted run resume.
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
from onlstm_cli.config import AUTO, SelfTrainConfig, SpanParserConfig
from onlstm_cli.evaluation.metrics import mutual_agreement, pairwise_agreement
from onlstm_cli.text.coverage import coverage_warning
from onlstm_cli.text.corpus import read_corpus
from onlstm_cli.errors import TrainingError
from onlstm_cli.modelfile import (CHECKPOINT_FORMAT, FORMAT_VERSION, LoadedModel, atomic_save, model_archive,
                                  read_archive, stored_weights)
from onlstm_cli.induction.distances import sentence_distances, split_rule
from onlstm_cli.training.run_checks import check_destination, checkpoint_path
from onlstm_cli.span.model import SpanParser, cky, padded, trainable_spans
from onlstm_cli.signals import StopSignals
from onlstm_cli.trees import build_tree, tree_spans


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


def teacher_spans(teachers: list[LoadedModel], sentences: list[list[str]], batch_size: int = 64,
                  model_tokens: bool = True, right_branching: float = 0.0, span_parsers: bool = False) -> list[dict]:
    """Each (normalized) sentence's constituents (start, end) in the teachers' trees, with the share of the
    votes whose tree has it (1.0 for every span of a single teacher): the span parser's targets.
    `model_tokens`: the words are the teachers' tokenizer's own cut (as in training text; see
    parser.sentence_distances). `right_branching`: the weight of one more voter, the right-branching tree
    (each teacher weighs 1), a prior toward English-like trees that lifted ON-LSTM ensembles in the
    literature (docs/experiments/levers.md)."""
    trees = [teacher_trees(t, sentences, batch_size, model_tokens, span_parsers) for t in teachers]
    return vote(trees, [len(words) for words in sentences], right_branching)


def teacher_trees(teacher: LoadedModel, sentences: list[list[str]], batch_size: int = 64, model_tokens: bool = True,
                  span_parsers: bool = False) -> list[set]:
    """One teacher's constituents of each sentence. A teacher parses with its language model's layer and split
    rule, so a self-trained file teaches with its language model's trees, unless `span_parsers` (a second
    round: a self-trained teacher teaches with its span parser's trees)."""
    own = span_parsers and teacher.span_parser is not None
    distances = sentence_distances(teacher, sentences, None if own else teacher.parse_layer, batch_size,
                                   model_tokens=model_tokens)
    rule = split_rule(teacher) if own else teacher.split
    return [tree_spans(build_tree(d, list(range(len(d))), rule)) for d in distances]


def voting_layers(teacher: LoadedModel, train: SelfTrainConfig) -> tuple[int, ...]:
    """The language-model layers whose trees a teacher votes with: --teacher-layers, else its parse layer and
    `train.extra_layers` more next to it: those above it, and below it where it has too few above (a model that
    parses with its top layer votes with the layers under it)."""
    if train.teacher_layers:
        return train.teacher_layers
    n_layers = teacher.config.n_layers
    top = min(teacher.parse_layer + train.extra_layers, n_layers)
    bottom = max(1, min(teacher.parse_layer, top - train.extra_layers))
    return tuple(range(bottom, top + 1))


def weighing_layer(teacher: LoadedModel, layers: tuple[int, ...]) -> int:
    """The one of a teacher's voting layers that its agreement and the auto weight are read over: its parse
    layer, else (--teacher-layers without it) the first."""
    return teacher.parse_layer if teacher.parse_layer in layers else layers[0]


def layer_trees(teacher: LoadedModel, sentences: list[list[str]], layers: tuple[int, ...], batch_size: int = 64,
                model_tokens: bool = True) -> list[list[set]]:
    """One teacher's constituents of each sentence by each of its language model's `layers` (1-based), from one
    pass over the text: one list of trees a layer, each a voter of its own (--teacher-layers)."""
    n_layers = teacher.config.n_layers
    for layer in layers:
        if not 1 <= layer <= n_layers:
            raise TrainingError(f"--teacher-layers {layer}: {teacher.path} has layers 1 to {n_layers}")
    per_sentence = sentence_distances(teacher, sentences, batch_size=batch_size, all_layers=True,
                                      model_tokens=model_tokens)
    return [[tree_spans(build_tree(d[layer - 1], list(range(len(d[layer - 1]))), teacher.split))
             for d in per_sentence] for layer in layers]


def vote(trees: list[list[set]], lengths: list[int], right_branching: float = 0.0) -> list[dict]:
    """Each sentence's spans with their share of the votes: every teacher's tree weighs 1, the right-branching
    tree `right_branching`."""
    votes: list[dict] = [{} for _ in lengths]
    total = len(trees) + right_branching
    for spans_of in trees:
        for counts, spans in zip(votes, spans_of):
            for span in spans:
                counts[span] = counts.get(span, 0.0) + 1.0 / total
    if right_branching > 0:
        for counts, n in zip(votes, lengths):
            for span in right_branching_spans(n):
                counts[span] = counts.get(span, 0.0) + right_branching / total
    return votes


def consensus_heights(votes: list[dict], lengths: list[int], batch_size: int = 256) -> list[list[int]]:
    """Each sentence's consensus tree of the votes, as split heights (span_parser.split_heights): the binary
    tree with the largest sum of (share − ½) over its spans, so a span most voters have counts for it and one
    that few have counts against it."""
    heights: list[list[int]] = [[] for _ in lengths]
    order = sorted(range(len(lengths)), key=lambda k: lengths[k])
    for start in range(0, len(order), batch_size):
        batch = order[start:start + batch_size]
        size = lengths[batch[-1]] + 1
        scores = torch.full((len(batch), size, size), -0.5)
        for row, k in enumerate(batch):
            for (i, j), share in votes[k].items():
                scores[row, i, j] = share - 0.5
        for k, height in zip(batch, cky(scores, [lengths[k] for k in batch])):
            heights[k] = height
    return heights


def consensus_targets(votes: list[dict], lengths: list[int], batch_size: int = 256) -> list[dict]:
    """--targets tree: each sentence's consensus tree, 1 for its spans and 0 (absent) for every other."""
    return [dict.fromkeys(tree_spans(build_tree(height, list(range(n)), "symmetric")), 1.0)
            for height, n in zip(consensus_heights(votes, lengths, batch_size), lengths)]


def right_branching_spans(n: int) -> set:
    return {(start, n) for start in range(1, n - 1)}  # every suffix of two words or more


def left_branching_spans(n: int) -> set:
    return {(0, end) for end in range(2, n)}  # every prefix of two words or more


@dataclass
class AutoWeight:
    weight: float
    right: float   # the teachers' mean agreement with right-branching trees (%)
    left: float    # with left-branching trees
    mutual: float  # with each other

    def __str__(self) -> str:
        return (f"{self.weight:.2f} (auto: the teachers' trees of the validation text agree {self.right:.1f} with "
                f"right-branching trees, {self.left:.1f} with left-branching ones, {self.mutual:.1f} with each other)")


def auto_weight(trees: list[list[set]], lengths: list[int], mutual: list[float] | None = None) -> AutoWeight:
    """The right-branching voter's weight from the teachers' trees of the validation text (no gold tree read):
    K × (their mean agreement with right-branching trees − with left-branching ones) / their mean agreement with
    each other; 0 where that is negative (a language that does not branch to the right) or with one teacher
    (one teacher and a right-branching voter of weight 1 cost English 4 points, docs/experiments/levers.md).
    Why: left- and right-branching trees share no span, so what a tree shares with the left-branching one is what
    any tree shares with a fixed shape of this text by chance; what the teachers share with right-branching trees
    beyond that, against what they share with each other, is how much of their consensus that prior already is.
    `mutual`: each teacher's mean agreement with the others (metrics.mutual_agreement), where already computed."""
    k = len(trees)
    if k < 2:
        return AutoWeight(0.0, math.nan, math.nan, math.nan)
    right = [right_branching_spans(n) for n in lengths]
    left = [left_branching_spans(n) for n in lengths]
    with_right = sum(pairwise_agreement([t, right])[0, 1] for t in trees) / k
    with_left = sum(pairwise_agreement([t, left])[0, 1] for t in trees) / k
    mean_mutual = sum(mutual if mutual is not None else mutual_agreement(trees)) / k
    weight = max(0.0, k * (with_right - with_left) / mean_mutual) if mean_mutual > 0 else 0.0
    return AutoWeight(round(weight, 3), 100 * with_right, 100 * with_left, 100 * mean_mutual)


def span_targets(spans: list[dict], batch: list[int], size: int) -> torch.Tensor:
    target = torch.zeros(len(batch), size, size)
    for row, k in enumerate(batch):
        for (i, j), share in spans[k].items():
            target[row, i, j] = share
    return target


def batch_loss(parser: SpanParser, ids_of: list[list[int]], spans: list[dict], batch: list[int],
               eos_id: int) -> tuple[torch.Tensor, int]:
    """Mean binary cross-entropy over the spans a tree decides, and how many there were."""
    ids, lengths = padded(ids_of, batch, eos_id)
    scores = parser(ids, lengths)
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


def validation_loss(parser: SpanParser, ids_of, spans, eos_id: int, batch_size: int) -> float:
    parser.eval()
    total, count = 0.0, 0
    with torch.inference_mode():
        for batch in length_batches(ids_of, batch_size, None):
            loss, n = batch_loss(parser, ids_of, spans, batch, eos_id)
            total, count = total + float(loss) * n, count + n
    return total / max(count, 1)


def student_archive(teacher: LoadedModel, parser: SpanParser, meta: dict) -> dict:
    archive = model_archive(teacher.model, teacher.vocab, teacher.tokenizer, teacher.lang, teacher.parse_layer,
                            teacher.meta, split=teacher.split)
    archive["span_parser"] = {"config": parser.config.to_dict(), "meta": meta, "state_dict": stored_weights(parser)}
    return archive


def run_identity(corpus, valid, out: Path, teachers: list[LoadedModel], config: SpanParserConfig,
                 train: SelfTrainConfig) -> dict:
    """What a resumed run must share with the run that wrote its checkpoint (else its epochs, batches and
    best loss mean nothing): the files, the teachers, the student's sizes and the way batches are drawn."""
    return {"corpus": str(Path(corpus).resolve()), "valid": str(Path(valid).resolve()), "out": str(out.resolve()),
            "teachers": [str(Path(t.path).resolve()) for t in teachers], "span_parser": config.to_dict(),
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
    for key, value in identity.items():
        before = state.get("identity", {}).get(key)
        if before is not None and before != value:
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


def self_train(corpus: str | Path, out: str | Path, teacher: LoadedModel | list[LoadedModel], valid: str | Path,
               config: SpanParserConfig | None = None, train: SelfTrainConfig | None = None,
               time_budget: float | None = None, resume: str | Path | None = None, log=print,
               recipe: dict | None = None) -> SelfTrainResult:
    """Train a span parser on `teacher`'s trees of `corpus`, keep the epoch with the best validation loss.
    Several teachers (a list) vote: a span's target is the share of their trees that have it, and the file
    written holds the first one's language model. `resume`: the checkpoint of an interrupted run
    (`out` + ".ckpt"), written at the end of every epoch, every `train.checkpoint_every` seconds and on
    Ctrl-C or SIGTERM; it goes on at the batch where that run stopped. `time_budget` counts everything,
    the teachers' parse included, over all runs of a resumed training. `recipe`: kept in the file's meta."""
    teachers = list(teacher) if isinstance(teacher, (list, tuple)) else [teacher]
    train = train or SelfTrainConfig()
    out = Path(out)
    check_destination(out)
    check_teachers(teachers, out, corpus, valid)
    started = time.monotonic()
    torch.manual_seed(train.seed)
    rng = random.Random(train.seed)
    config = config or SpanParserConfig(vocab_size=len(teachers[0].vocab))
    parser = SpanParser(config)
    if config.emb_size == teachers[0].config.emb_size:  # start from the words the teacher has learned
        parser.embed.weight.data.copy_(teachers[0].model.embedding.weight.data)
    optimizer = torch.optim.Adam(parser.parameters(), lr=train.lr)
    identity = run_identity(corpus, valid, out, teachers, config, train)
    progress = Progress()
    if resume is not None:
        progress = resumed(resume, identity, parser, optimizer, rng)
        log(f"resumed in epoch {progress.epoch} after {progress.step} batches (best validation loss "
            f"{progress.best:.4f})")
    # Ctrl-C or SIGTERM from here on, the teachers' parse included, ends with a checkpoint
    with StopSignals() as signals:
        parse_started = time.monotonic()  # the teachers' parse is timed apart: `onlstm info` shows each stage
        data = votes_of(teachers, corpus, valid, train, log)  # after the checks: the parse takes a while
        run = _Run(parser, optimizer, rng, data, train, progress, identity, out, started, time_budget, log,
                   {"teacher": [str(t.path) for t in teachers], "corpus": str(corpus), "valid": str(valid),
                    "train": asdict(train), "onlstm_version": __version__, "teacher_agreement": data.agreement,
                    "right_branching": data.right_branching, "parse_seconds": round(time.monotonic() - parse_started, 1),
                    **({"recipe": recipe} if recipe else {})},
                   teachers[0])
        return run.loop(signals)


def check_teachers(teachers: list[LoadedModel], out: Path, *inputs) -> None:
    first = teachers[0]
    for other in teachers:
        if other.tokenizer.characters:
            raise TrainingError(f"{other.path} reads characters: it cannot teach the span parser, which reads words")
        if other.tokenizer.to_dict() != first.tokenizer.to_dict():
            raise TrainingError(f"{other.path} tokenizes otherwise than {first.path}: teachers must read the "
                                "same words")
    for path in [*(t.path for t in teachers), *inputs]:
        if path and Path(path).exists() and Path(path).resolve() == out.resolve():
            raise TrainingError(f"--out {out} is an input of this run: write the model to another file")


@dataclass
class Votes:
    ids: list
    spans: list
    valid_ids: list
    valid_spans: list
    eos_id: int
    agreement: list | None = None  # per teacher, with several: its mean agreement with the others (in %)
    right_branching: float = 0.0   # the right-branching voter's weight in these votes


def votes_of(teachers: list[LoadedModel], corpus, valid, train: SelfTrainConfig, log) -> Votes:
    """The teachers' trees of the training and validation text, as span targets over word ids."""
    tokenizer, vocab = teachers[0].tokenizer, teachers[0].vocab
    sentences = [s for s in read_corpus(corpus, tokenizer) if len(s) <= train.max_len]
    valid_sentences = [s for s in read_corpus(valid, tokenizer) if len(s) <= train.max_len]
    for teacher in teachers:  # a Chinese teacher on English text trains without a complaint otherwise
        message = coverage_warning(teacher, sentences[:2000], Path(teacher.path).name)
        if message:
            log(f"warning: {message}")
    names = ", ".join(str(t.path) for t in teachers)
    log(f"teacher{'s' if len(teachers) > 1 else ''} {names}: parsing {len(sentences):,} training and "
        f"{len(valid_sentences):,} validation sentences")
    if not sentences or not valid_sentences:
        raise TrainingError("no sentence to learn from in the corpus or in --valid (empty, or every line too long)")
    if train.span_parser_teachers:
        train_trees = [[teacher_trees(t, sentences, span_parsers=True)] for t in teachers]
        valid_trees = [[teacher_trees(t, valid_sentences, span_parsers=True)] for t in teachers]
        weighing = [0 for _ in teachers]
    else:  # one voter a layer of each teacher's language model
        layers = [voting_layers(t, train) for t in teachers]
        if any(len(each) > 1 for each in layers):
            log("each teacher votes with the trees of its layers " + ", ".join(
                f"{Path(t.path).name} {'+'.join(map(str, each))}" for t, each in zip(teachers, layers)))
        train_trees = [layer_trees(t, sentences, each) for t, each in zip(teachers, layers)]
        valid_trees = [layer_trees(t, valid_sentences, each) for t, each in zip(teachers, layers)]
        weighing = [each.index(weighing_layer(t, each)) for t, each in zip(teachers, layers)]
    valid_lengths = [len(s) for s in valid_sentences]
    parse_layers = [own[at] for own, at in zip(valid_trees, weighing)]  # each teacher's parse layer's trees
    agreement = mutual = None
    if len(teachers) > 1:  # the seed_agreement of docs/experiments/english.md, on the validation text: a free sign of an odd run
        mutual = mutual_agreement(parse_layers)
        agreement = [round(100 * a, 2) for a in mutual]
        log("the teachers' agreement (mean sentence F1 of each one's trees against the others', validation text"
            + (", their parse layers" if any(len(own) > 1 for own in valid_trees) else "") + "): "
            + ", ".join(f"{Path(t.path).name} {a:.2f}" for t, a in zip(teachers, agreement)))
    weight = train.right_branching
    if weight == AUTO:  # over each teacher's parse layer, K = the teachers: read over every layer's voter, the
        # layers above (less alike) and the doubled K inflated it until the consensus was the right-branching tree
        chosen = auto_weight(parse_layers, valid_lengths, mutual)
        weight = chosen.weight
        log(f"the right-branching voter's weight: {chosen}" if len(teachers) > 1 else
            "the right-branching voter's weight: 0 (auto, with one teacher)")
    train_trees = [trees for own in train_trees for trees in own]  # every voter, each layer of each teacher
    valid_trees = [trees for own in valid_trees for trees in own]
    lengths = [len(s) for s in sentences]
    spans, valid_spans = vote(train_trees, lengths, weight), vote(valid_trees, valid_lengths, weight)
    if train.targets == "tree":
        log("the span parser learns the votes' consensus tree (--targets tree), not each span's share")
        spans, valid_spans = consensus_targets(spans, lengths), consensus_targets(valid_spans, valid_lengths)
    return Votes([vocab.encode(s) for s in sentences], spans, [vocab.encode(s) for s in valid_sentences],
                 valid_spans, vocab.eos_id, agreement, weight)


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
                    state.get("seconds", 0.0))


class _Run:
    """The training loop of one self-training run, in the pieces nanoGPT's loop has: steps, evaluation,
    checkpoints, stopping."""

    def __init__(self, parser, optimizer, rng, data: Votes, train: SelfTrainConfig, progress: Progress,
                 identity: dict, out: Path, started: float, budget: float | None, log, meta: dict, teacher):
        self.parser, self.optimizer, self.rng, self.data, self.train = parser, optimizer, rng, data, train
        self.progress, self.identity, self.out, self.started, self.budget = progress, identity, out, started, budget
        self.log, self.meta, self.teacher = log, meta, teacher
        self.checkpoint = checkpoint_path(out)

    def seconds(self) -> float:
        return self.progress.seconds + time.monotonic() - self.started

    def time_up(self) -> bool:
        return self.budget is not None and self.seconds() >= self.budget

    def loop(self, signals: StopSignals) -> SelfTrainResult:
        p, stop = self.progress, None
        while p.epoch <= self.train.epochs and stop is None:
            stop = self.train_epoch(signals)
            if stop == "interrupt":
                break
            self.end_epoch()
            if p.epoch - 1 - min(p.history, key=lambda h: h["valid_loss"])["epoch"] >= self.train.patience:
                stop = "patience"
            elif stop is None and self.time_up():
                stop = "time"
        if stop == "interrupt":
            self.save_checkpoint()
            self.log(f"interrupted in epoch {p.epoch} after {p.step} batches; resume with --resume "
                     f"{self.checkpoint}")
        if not self.out.exists() and stop != "interrupt":
            raise TrainingError("the time budget ended before a span parser could be validated and saved")
        return SelfTrainResult(self.out, self.checkpoint, len(p.history), p.best, self.seconds(), stop == "patience",
                               stop == "time", stop == "interrupt", int(signals.caught),
                               self.meta.get("teacher_agreement"), self.data.right_branching)

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
        loss, _ = batch_loss(self.parser, self.data.ids, self.data.spans, batch, self.data.eos_id)
        self.optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.parser.parameters(), self.train.clip)
        self.optimizer.step()

    def end_epoch(self) -> None:
        """Validate (an epoch cut short by the budget too), keep the model if best, checkpoint, next epoch."""
        p = self.progress
        loss = validation_loss(self.parser, self.data.valid_ids, self.data.valid_spans, self.data.eos_id, 64)
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
            atomic_save(student_archive(self.teacher, self.parser, meta), self.out)
        p.epoch, p.step, p.batches = p.epoch + 1, 0, None
        self.save_checkpoint()

    def save_checkpoint(self) -> None:
        p = self.progress
        atomic_save({"format": CHECKPOINT_FORMAT, "version": FORMAT_VERSION, "self_training": {
            "state_dict": self.parser.state_dict(), "optimizer": self.optimizer.state_dict(), "epoch": p.epoch,
            "step": p.step, "batches": p.batches, "best": p.best, "history": p.history, "rng": self.rng.getstate(),
            "torch_rng": torch.get_rng_state(), "seconds": self.seconds(), "identity": self.identity}},
            self.checkpoint)
