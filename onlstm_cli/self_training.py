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
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from . import __version__
from .config import SelfTrainConfig, SpanParserConfig
from .corpus import TrainingError, read_corpus
from .modelfile import (CHECKPOINT_FORMAT, FORMAT_VERSION, LoadedModel, atomic_save, model_archive, read_archive,
                        stored_weights)
from .parser import sentence_distances
from .run_checks import check_destination, checkpoint_path
from .span_parser import SpanParser, padded, trainable_spans
from .trees import build_tree, tree_spans


@dataclass
class SelfTrainResult:
    out: Path
    checkpoint: Path
    epochs_done: int
    best_valid_loss: float
    seconds: float
    stopped_early: bool


def teacher_spans(teachers: list[LoadedModel], sentences: list[list[str]], batch_size: int = 64,
                  model_tokens: bool = True) -> list[dict]:
    """Each (normalized) sentence's constituents (start, end) in the teachers' trees, with the share of the
    teachers whose tree has it (1.0 for every span of a single teacher): the span parser's targets.
    `model_tokens`: the words are the teachers' tokenizer's own cut (as in training text; see
    parser.sentence_distances). A teacher always parses with its language model's layer and split rule, so a
    self-trained file teaches with its language model's trees, not its span parser's."""
    votes: list[dict] = [{} for _ in sentences]
    for teacher in teachers:
        distances = sentence_distances(teacher, sentences, teacher.parse_layer, batch_size,
                                       model_tokens=model_tokens)
        for counts, d in zip(votes, distances):
            for span in tree_spans(build_tree(d, list(range(len(d))), teacher.split)):
                counts[span] = counts.get(span, 0.0) + 1.0 / len(teachers)
    return votes


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


def self_train(corpus: str | Path, out: str | Path, teacher: LoadedModel | list[LoadedModel], valid: str | Path,
               config: SpanParserConfig | None = None, train: SelfTrainConfig | None = None,
               time_budget: float | None = None, resume: str | Path | None = None, log=print) -> SelfTrainResult:
    """Train a span parser on `teacher`'s trees of `corpus`, keep the epoch with the best validation loss.
    Several teachers (a list) vote: a span's target is the share of their trees that have it, and the file
    written holds the first one's language model. `resume`: the checkpoint of an interrupted run
    (`out` + ".ckpt"); it goes on after its last whole epoch."""
    teachers = list(teacher) if isinstance(teacher, (list, tuple)) else [teacher]
    teacher = teachers[0]
    train = train or SelfTrainConfig()
    out = Path(out)
    check_destination(out)
    checkpoint = checkpoint_path(out)
    for other in teachers:
        if other.tokenizer.characters:
            raise TrainingError(f"{other.path} reads characters: it cannot teach the span parser, which reads words")
        if other.tokenizer.to_dict() != teacher.tokenizer.to_dict():
            raise TrainingError(f"{other.path} tokenizes otherwise than {teacher.path}: teachers must read the "
                                "same words")
    started = time.monotonic()
    torch.manual_seed(train.seed)
    rng = random.Random(train.seed)
    sentences = [s for s in read_corpus(corpus, teacher.tokenizer) if len(s) <= train.max_len]
    valid_sentences = [s for s in read_corpus(valid, teacher.tokenizer) if len(s) <= train.max_len]
    names = ", ".join(str(t.path) for t in teachers)
    log(f"teacher{'s' if len(teachers) > 1 else ''} {names}: parsing {len(sentences):,} training and "
        f"{len(valid_sentences):,} validation sentences")
    spans, valid_spans = teacher_spans(teachers, sentences), teacher_spans(teachers, valid_sentences)
    vocab = teacher.vocab
    ids_of = [vocab.encode(s) for s in sentences]
    valid_ids = [vocab.encode(s) for s in valid_sentences]
    config = config or SpanParserConfig(vocab_size=len(vocab))
    parser = SpanParser(config)
    if config.emb_size == teacher.config.emb_size:  # start from the words the teacher has learned
        parser.embed.weight.data.copy_(teacher.model.embedding.weight.data)
    optimizer = torch.optim.Adam(parser.parameters(), lr=train.lr)
    first_epoch, best, history = 1, math.inf, []
    if resume is not None:
        state = read_archive(resume, CHECKPOINT_FORMAT).get("self_training")
        if state is None:
            raise TrainingError(f"{resume} is a language model's checkpoint, not a span parser's (train --teacher)")
        parser.load_state_dict(state["state_dict"])
        optimizer.load_state_dict(state["optimizer"])
        first_epoch, best, history = state["epoch"] + 1, state["best"], state["history"]
        rng.setstate(state["rng"])
        torch.set_rng_state(state["torch_rng"])
        log(f"resumed after epoch {state['epoch']} (best validation loss {best:.4f})")
    stopped_early = False
    epoch = first_epoch - 1
    for epoch in range(first_epoch, train.epochs + 1):
        parser.train()
        batches = length_batches(ids_of, train.batch_size, rng)
        running = 0.0
        for step, batch in enumerate(batches, 1):
            loss, _ = batch_loss(parser, ids_of, spans, batch, vocab.eos_id)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(parser.parameters(), train.clip)
            optimizer.step()
            running += float(loss.detach())
            if step % max(1, len(batches) // 4) == 0 and step < len(batches):
                log(f"epoch {epoch}: {step}/{len(batches)} batches, training loss {running / step:.4f}, "
                    f"{(time.monotonic() - started) / 60:.1f} min")
        loss = validation_loss(parser, valid_ids, valid_spans, vocab.eos_id, 64)
        history.append({"epoch": epoch, "valid_loss": round(loss, 5)})
        improved = loss < best
        log(f"epoch {epoch}: validation loss {loss:.4f}{' (best)' if improved else ''}, "
            f"{(time.monotonic() - started) / 60:.1f} min")
        if improved:
            best = loss
            meta = {"teacher": [str(t.path) for t in teachers], "corpus": str(corpus), "valid": str(valid), "epochs": epoch,
                    "valid_loss": round(loss, 5), "history": list(history), "train": asdict(train),
                    "onlstm_version": __version__}
            atomic_save(student_archive(teacher, parser, meta), out)
        atomic_save({"format": CHECKPOINT_FORMAT, "version": FORMAT_VERSION, "self_training": {
            "state_dict": parser.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch, "best": best,
            "history": history, "rng": rng.getstate(), "torch_rng": torch.get_rng_state()}}, checkpoint)
        since_best = epoch - min(history, key=lambda h: h["valid_loss"])["epoch"]
        if since_best >= train.patience:
            stopped_early = True
            break
        if time_budget is not None and time.monotonic() - started > time_budget:
            break
    return SelfTrainResult(out, checkpoint, epoch, best, time.monotonic() - started, stopped_early)
