"""Training: corpus → token stream → truncated-BPTT language-model training with checkpoints.

One loop, AWD-LSTM style: the corpus is one long stream of word ids with <eos> after every sentence,
cut into `batch_size` columns and read in windows of about `bptt` tokens; the hidden state carries over
between windows. After every epoch (and when time runs out) the validation perplexity decides whether
`out` is replaced; a checkpoint with the optimizer state is written beside it so that a run can resume.
"""
from __future__ import annotations

import contextlib
import math
import random
import signal
import sys
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterable, Protocol

import torch

from . import __version__
from .errors import OnlstmError
from .model import ModelConfig, ONLSTMLanguageModel, resolve_device
from .modelfile import (CHECKPOINT_FORMAT, atomic_save, model_archive, model_from_archive,
                        read_archive, save_model)
from .vocab import Tokenizer, Vocabulary, is_punctuation


class TrainingError(OnlstmError):
    """A problem with the training input or options; the message is one line for the user."""


@dataclass
class TrainConfig:
    epochs: int = 100
    time_budget: float | None = 3600.0  # seconds; None = no limit
    batch_size: int = 20
    bptt: int = 70
    optimizer: str = "sgd"              # the paper's recipe (SGD, lr 30); "adam" wants lr ~0.002
    lr: float = 30.0
    weight_decay: float = 1.2e-6
    clip: float = 0.25
    seed: int = 1111
    device: str = "auto"
    threads: int | None = None
    eval_batch_size: int = 10
    checkpoint_every: float = 300.0     # seconds between mid-epoch checkpoints


def read_corpus(path: str | Path, tokenizer: Tokenizer, pretokenized: bool = False,
                keep_punct: bool = False) -> list[list[str]]:
    """Normalized sentences of a one-sentence-a-line UTF-8 file (blank lines skipped).

    Punctuation is dropped unless asked for: evaluation removes it, and the PTB text has none either.
    """
    path = Path(path)
    if not path.is_file():
        raise TrainingError(f"corpus not found: {path}")
    sentences = []
    try:
        with open(path, encoding="utf-8-sig") as f:
            for line in f:
                tokens = [tokenizer.normalize(t) for t in tokenizer.split(line, pretokenized)]
                if not keep_punct:
                    tokens = [t for t in tokens if not is_punctuation(t)]
                if tokens:
                    sentences.append(tokens)
    except UnicodeDecodeError as e:
        raise TrainingError(f"{path} is not UTF-8 text (byte {e.start})") from None
    if not sentences:
        raise TrainingError(f"{path} has no sentences")
    return sentences


@contextlib.contextmanager
def stop_on_sigterm():
    """SIGTERM (`kill`, `timeout`, a batch scheduler) stops training the way Ctrl-C does: with a checkpoint."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def build_vocab(sentences: Iterable[list[str]], max_size: int | None, min_freq: int) -> Vocabulary:
    return Vocabulary.build(Counter(t for s in sentences for t in s), max_size, min_freq)


def token_stream(sentences: list[list[str]], vocab: Vocabulary) -> torch.Tensor:
    """All sentences as one id stream with <eos> after each (the Mikolov/AWD-LSTM convention)."""
    ids = []
    for s in sentences:
        ids.extend(vocab.encode(s))
        ids.append(vocab.eos_id)
    return torch.tensor(ids, dtype=torch.long)


def batchify(stream: torch.Tensor, batch_size: int) -> torch.Tensor:
    """(N,) → (N // batch_size, batch_size): each column is a contiguous piece of the stream."""
    n = stream.numel() // batch_size
    if n < 2:
        raise TrainingError(f"too little text for batch size {batch_size} ({stream.numel()} tokens)")
    return stream[: n * batch_size].view(batch_size, n).t().contiguous()


def detach(state):
    return [(h.detach(), c.detach()) for h, c in state]


@torch.no_grad()
def evaluate_perplexity(model: ONLSTMLanguageModel, data: torch.Tensor, bptt: int) -> float:
    """Perplexity of a batchified stream, state carried across windows."""
    model.eval()
    state, total_loss, total = None, 0.0, 0
    for i in range(0, data.shape[0] - 1, bptt):
        seq = min(bptt, data.shape[0] - 1 - i)
        x, y = data[i:i + seq], data[i + 1:i + 1 + seq]
        out = model(x, state, targets=y)
        state = out.state
        total_loss += out.loss.item() * y.numel()
        total += y.numel()
    return math.exp(min(total_loss / max(total, 1), 50.0))


def text_perplexity(loaded, path: str | Path, bptt: int = 70, batch_size: int | None = None) -> float:
    """A trained model's perplexity on a text, read exactly as its training text and validation were."""
    data = loaded.meta.get("data", {})
    batch_size = batch_size or loaded.meta.get("train", {}).get("eval_batch_size", 10)
    sentences = read_corpus(path, loaded.tokenizer, data.get("pretokenized", False), data.get("keep_punct", False))
    stream = batchify(token_stream(sentences, loaded.vocab), batch_size)
    return evaluate_perplexity(loaded.model, stream.to(next(loaded.model.parameters()).device), bptt)


class Reporter(Protocol):
    def start_epoch(self, epoch: int, n_tokens: int) -> None: ...
    def progress(self, epoch: int, tokens_done: int, loss: float, tokens_per_s: float, eta_s: float) -> None: ...
    def end_epoch(self, epoch: int, train_ppl: float, valid_ppl: float | None, saved: bool) -> None: ...
    def message(self, text: str) -> None: ...


class LineReporter:
    """Plain log lines (for files and pipes); the CLI uses a rich live display on a terminal."""

    def __init__(self, stream=None, every_s: float = 30.0):
        self._stream, self.every_s, self.last = stream, every_s, 0.0

    @property
    def stream(self):
        return self._stream or sys.stderr  # looked up at write time, so redirections of stderr apply

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None

    def start_epoch(self, epoch, n_tokens):
        self.last = time.time()

    def progress(self, epoch, tokens_done, loss, tokens_per_s, eta_s):
        if time.time() - self.last >= self.every_s:
            self.last = time.time()
            print(f"epoch {epoch} | {tokens_done} tokens | loss {loss:.3f} | ppl {math.exp(min(loss, 50)):.1f} | "
                  f"{tokens_per_s:.0f} tokens/s | eta {eta_s / 60:.1f} min", file=self.stream, flush=True)

    def end_epoch(self, epoch, train_ppl, valid_ppl, saved):
        valid = f"{valid_ppl:.2f}" if valid_ppl is not None else "-"
        print(f"end of epoch {epoch} | train ppl {train_ppl:.2f} | valid ppl {valid}"
              f"{' | saved' if saved else ''}", file=self.stream, flush=True)

    def message(self, text):
        print(text, file=self.stream, flush=True)


@dataclass
class TrainResult:
    out: str
    checkpoint: str
    epochs_done: float
    best_valid_ppl: float | None
    interrupted: bool = False
    stopped_by_time: bool = False
    seconds: float = 0.0
    history: list = field(default_factory=list)


def checkpoint_path(out: str | Path) -> Path:
    return Path(str(out) + ".ckpt")


def train_model(corpus: str | Path, out: str | Path, model_config: dict | None = None,
                train_config: TrainConfig | None = None, valid: str | Path | None = None,
                tokenizer: Tokenizer | None = None, lang: str = "en", pretokenized: bool = False,
                keep_punct: bool = False, max_vocab: int | None = 10000, min_freq: int = 1,
                parse_layer: int | None = None, resume: str | Path | None = None,
                reporter: Reporter | None = None) -> TrainResult:
    """Train (or resume training) an ON-LSTM LM; `out` holds the best model by validation perplexity."""
    tc = train_config or TrainConfig()
    pos = 0
    reporter = reporter or LineReporter()
    tokenizer = tokenizer or Tokenizer()
    torch.manual_seed(tc.seed)
    random.seed(tc.seed)
    if tc.threads:
        torch.set_num_threads(tc.threads)
    device = resolve_device(tc.device)

    ckpt = None
    if resume is not None:
        ckpt = read_archive(resume, expected_format=CHECKPOINT_FORMAT)
        tokenizer = Tokenizer(**ckpt["tokenizer"])
        lang = ckpt.get("lang", lang)
        parse_layer = ckpt["parse_layer"]
        pretokenized, keep_punct = ckpt["data"]["pretokenized"], ckpt["data"]["keep_punct"]
        reporter.message(f"resuming from {resume} (epoch {ckpt['epoch']}, "
                         f"best valid ppl {ckpt['best_valid_ppl'] or float('nan'):.2f})")

    sentences = read_corpus(corpus, tokenizer, pretokenized, keep_punct)
    if ckpt is not None:
        loaded = model_from_archive(ckpt, str(resume))
        model, vocab = loaded.model, loaded.vocab
    else:
        vocab = build_vocab(sentences, max_vocab, min_freq)
        config = ModelConfig(vocab_size=len(vocab), **(model_config or {}))
        model = ONLSTMLanguageModel(config)
    config = model.config
    if parse_layer is None:
        parse_layer = config.n_layers // 2 + 1  # the paper parses with the middle layer
    if not 1 <= parse_layer <= config.n_layers:
        raise TrainingError(f"--parse-layer must be between 1 and {config.n_layers}")
    model.to(device)

    train_data = batchify(token_stream(sentences, vocab), tc.batch_size).to(device)
    valid_data = None
    if valid is not None:
        valid_data = batchify(token_stream(read_corpus(valid, tokenizer, pretokenized, keep_punct), vocab),
                              tc.eval_batch_size).to(device)

    params = list(model.parameters())
    if tc.optimizer == "adam":
        optimizer = torch.optim.Adam(params, lr=tc.lr, weight_decay=tc.weight_decay)
    elif tc.optimizer == "sgd":
        optimizer = torch.optim.SGD(params, lr=tc.lr, weight_decay=tc.weight_decay)
    else:
        raise TrainingError(f"unknown optimizer {tc.optimizer!r}; expected adam or sgd")

    start_epoch, start_pos, best, history, spent_before = 1, 0, None, [], 0.0
    if ckpt is not None:
        optimizer.load_state_dict(ckpt["optimizer"])
        start_epoch, start_pos = ckpt["epoch"], ckpt["position"]
        best, history, spent_before = ckpt["best_valid_ppl"], list(ckpt["history"]), ckpt["seconds"]

    out, ckpt_path = Path(out), checkpoint_path(out)
    data_meta = {"corpus": str(corpus), "valid": str(valid) if valid else None, "pretokenized": pretokenized,
                 "keep_punct": keep_punct, "train_tokens": int(train_data.numel()),
                 "max_vocab": max_vocab, "min_freq": min_freq}

    def meta(epochs_done: float, valid_ppl: float | None) -> dict:
        return {"data": data_meta, "train": asdict(tc), "epochs": round(epochs_done, 3),
                "valid_ppl": valid_ppl, "seconds": round(spent_before + time.time() - t0, 1),
                "onlstm_version": __version__, "history": history, "created": time.strftime("%Y-%m-%d %H:%M:%S")}

    def save_checkpoint(epoch: int, position: int) -> None:
        archive = model_archive(model, vocab, tokenizer, lang, parse_layer, meta(epoch - 1, best), torch.float32)
        archive.update(format=CHECKPOINT_FORMAT, optimizer=optimizer.state_dict(), epoch=epoch,
                       position=position, best_valid_ppl=best, history=history, data=data_meta,
                       seconds=spent_before + time.time() - t0)
        atomic_save(archive, ckpt_path)

    def validate_and_save(epochs_done: float) -> tuple[float | None, bool]:
        nonlocal best
        if valid_data is None:  # without validation text the latest model is the best we know
            save_model(out, model, vocab, tokenizer, lang, parse_layer, meta(epochs_done, None))
            return None, True
        ppl = evaluate_perplexity(model, valid_data, tc.bptt)
        saved = best is None or ppl < best
        if saved:
            best = ppl
            save_model(out, model, vocab, tokenizer, lang, parse_layer, meta(epochs_done, ppl))
        return ppl, saved

    t0 = time.time()
    deadline = None if tc.time_budget is None else t0 + max(0.0, tc.time_budget - spent_before)
    n_rows = train_data.shape[0]

    def epochs_at(epoch: int, pos: int) -> float:
        """Epochs trained by position `pos` of (1-based) epoch `epoch`."""
        return epoch - 1 + pos / max(n_rows - 1, 1)

    epoch, pos, interrupted, stopped_by_time = start_epoch, start_pos, False, False
    last_ckpt = time.time()
    with stop_on_sigterm():
        try:
            while epoch <= tc.epochs and not stopped_by_time:
                model.train()
                reporter.start_epoch(epoch, int(train_data.numel()))
                state = model.init_state(tc.batch_size)
                pos, epoch_loss, epoch_tokens, t_epoch = start_pos, 0.0, 0, time.time()
                start_pos = 0
                while pos < n_rows - 1:
                    # AWD-LSTM's variable window length keeps the cut points moving between epochs.
                    bptt = tc.bptt if random.random() < 0.95 else tc.bptt / 2
                    seq = max(5, int(random.gauss(bptt, 5)))
                    seq = min(seq, n_rows - 1 - pos)
                    x, y = train_data[pos:pos + seq], train_data[pos + 1:pos + 1 + seq]
                    state = detach(state)
                    output = model(x, state, targets=y)
                    state, loss = output.state, output.loss
                    optimizer.zero_grad(set_to_none=True)
                    loss.backward()
                    if tc.clip > 0:
                        torch.nn.utils.clip_grad_norm_(params, tc.clip)
                    optimizer.step()
                    pos += seq
                    epoch_loss += loss.item() * y.numel()
                    epoch_tokens += y.numel()
                    elapsed = time.time() - t_epoch
                    rate = epoch_tokens / max(elapsed, 1e-9)
                    eta = (n_rows - 1 - pos) * tc.batch_size / max(rate, 1e-9)
                    reporter.progress(epoch, pos * tc.batch_size, epoch_loss / epoch_tokens, rate, eta)
                    if deadline is not None and time.time() >= deadline:
                        stopped_by_time = True
                        break
                    if time.time() - last_ckpt >= tc.checkpoint_every:
                        save_checkpoint(epoch, pos)
                        last_ckpt = time.time()
                epochs_done = epochs_at(epoch, pos)
                train_ppl = math.exp(min(epoch_loss / max(epoch_tokens, 1), 50.0))
                valid_ppl, saved = validate_and_save(epochs_done)
                history.append({"epoch": round(epochs_done, 3), "train_ppl": round(train_ppl, 2),
                                "valid_ppl": None if valid_ppl is None else round(valid_ppl, 2),
                                "seconds": round(spent_before + time.time() - t0, 1)})
                reporter.end_epoch(epoch, train_ppl, valid_ppl, saved)
                if stopped_by_time:
                    save_checkpoint(epoch, pos)
                else:
                    epoch, pos = epoch + 1, 0  # an interrupt from here on is at the start of the next epoch
                    save_checkpoint(epoch, 0)
                last_ckpt = time.time()
        except KeyboardInterrupt:
            interrupted = True
            save_checkpoint(epoch, pos)
            if not out.exists():  # never leave the user with nothing: keep what we have
                save_model(out, model, vocab, tokenizer, lang, parse_layer, meta(epochs_at(epoch, pos), None))
    if interrupted:  # the part of an epoch it trained counts, as in its checkpoint
        epochs_done = epochs_at(epoch, pos)
    else:
        epochs_done = history[-1]["epoch"] if history else 0.0
    return TrainResult(str(out), str(ckpt_path), epochs_done, best, interrupted, stopped_by_time,
                       spent_before + time.time() - t0, history)
