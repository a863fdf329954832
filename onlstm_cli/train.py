"""Training: corpus → token stream → truncated-BPTT language-model training with checkpoints.

One loop, AWD-LSTM style: the corpus is one long stream of word ids with <eos> after every sentence
(corpus.py), cut into `batch_size` columns and read in windows of about `bptt` tokens; the hidden state
carries over between windows. After every epoch (and when time runs out) the validation perplexity decides
whether `out` is replaced; a checkpoint with the optimizer state is written beside it so that a run can
resume.

Started by torchrun with several processes, each process trains a DistributedDataParallel copy of the model
on its own slice of the stream (distributed.py); rank 0 alone validates, reports and writes files.
"""
from __future__ import annotations

import contextlib
import gc
import math
import random
import signal
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import NamedTuple, Protocol

import torch
from torch.nn.parallel import DistributedDataParallel

from . import __version__
from .corpus import (DEFAULT_MAX_VOCAB, DEFAULT_MIN_FREQ, TokenColumns, TrainingError, batchify, corpus_token_file,
                     count_words, rank_columns, read_corpus, token_stream)
from .distributed import Group, process_group
from .config import TrainConfig
from .model import ModelConfig, ONLSTMLanguageModel, resolve_device
from .modelfile import CHECKPOINT_FORMAT, ModelFileError, atomic_save, model_archive, model_from_archive, read_archive, save_model
from .run_checks import (check_destination, check_free_space, check_global_batch, check_resumed_optimizer,
                         check_resumed_options, checkpoint_path, reconcile_best, token_file_path)
from .vocab import Tokenizer, Vocabulary

OPTIMIZERS = ("sgd", "ntasgd", "adam")


@dataclass
class RunState:
    """Where a run stands; a checkpoint keeps it beside the weights and optimizer. The same on every rank."""
    epoch: int = 1                  # the epoch being trained, 1-based
    position: int = 0               # the row of the token columns where training goes on
    best: float | None = None       # the best validation perplexity so far
    history: list = field(default_factory=list)  # one entry per epoch
    seconds: float = 0.0            # training time of the earlier runs of a resumed training
    averaging: bool = False         # NT-ASGD has switched to averaged SGD


@dataclass
class Plan:
    """What rank 0 reads from the corpus or the checkpoint and every rank needs to start (sent pickled)."""
    config: dict                    # ModelConfig
    vocab: Vocabulary
    tokenizer: Tokenizer
    lang: str
    parse_layer: int | None
    pretokenized: bool
    keep_punct: bool
    state: RunState
    optimizer: dict | None = None   # the optimizer state of a resumed run


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
    stop_signal: int = 0            # the signal that interrupted the run (SIGINT for Ctrl-C), 0 otherwise


class Diverged(TrainingError):
    """Training met a loss or gradient that is not finite in too many steps in a row."""


class RankZeroFailed(TrainingError):
    """Raised on the other ranks where rank 0 could not set the run up (rank 0 reports why), so that they exit
    instead of waiting for it."""


class Decision(NamedTuple):
    """The end of a step, the same on every rank."""
    loss: float                     # the step's loss, averaged over the ranks
    interrupted: bool
    time_up: bool
    checkpoint_due: bool


class StopSignals:
    """Ctrl-C (SIGINT) and SIGTERM (`kill`, `timeout`, a job scheduler, torchrun passing a Ctrl-C on) ask
    training to stop after its current step: the ranks agree on it (see Trainer.agree) and write a
    checkpoint, where an exception at a random point could leave the others waiting in a collective.
    Handlers can only be set in the main thread; elsewhere nothing is caught."""

    def __init__(self):
        self.caught = 0  # the signal number, 0 while none came
        self.previous = {}

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self.previous[sig] = signal.signal(sig, self.catch)
        return self

    def catch(self, signum, frame):
        self.caught = signum

    def __exit__(self, *exc):
        for sig, handler in self.previous.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)


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
    sentences = read_corpus(path, loaded.tokenizer, data.get("pretokenized", False), data.get("keep_punct", False),
                            loaded.config.reverse)
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


class NullReporter:
    """What the ranks other than 0 report to: rank 0 speaks for the run."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None

    def start_epoch(self, epoch, n_tokens):
        pass

    def progress(self, epoch, tokens_done, loss, tokens_per_s, eta_s):
        pass

    def end_epoch(self, epoch, train_ppl, valid_ppl, saved):
        pass

    def message(self, text):
        pass


def make_plan(corpus, resume, model_config, tokenizer, lang, pretokenized, keep_punct, max_vocab, min_freq,
              parse_layer, global_batch, reporter, valid=None, optimizer=None) -> tuple[Plan, ONLSTMLanguageModel | None]:
    """Rank 0's reading of the checkpoint (and its model), or of the corpus for a vocabulary."""
    model = None
    if resume is None:
        vocab = Vocabulary.build(count_words(corpus, tokenizer, pretokenized, keep_punct), max_vocab, min_freq)
        config = ModelConfig(vocab_size=len(vocab), **(model_config or {}))
        plan = Plan(config.to_dict(), vocab, tokenizer, lang, parse_layer, pretokenized, keep_punct, RunState())
    else:
        ckpt = read_archive(resume, expected_format=CHECKPOINT_FORMAT)
        check_global_batch(ckpt, resume, global_batch)
        check_resumed_options(ckpt, resume, {**(model_config or {}), "pretokenized": pretokenized,
                                             "keep_punct": keep_punct, "max_vocab": max_vocab, "min_freq": min_freq})
        check_resumed_optimizer(ckpt, resume, optimizer)
        validated_on = ckpt.get("data", {}).get("valid")
        if validated_on and valid is None:  # else --out would get an unvalidated model beside the old best's figure
            raise TrainingError(f"{resume} was validated on {validated_on}: resume with --valid {validated_on}, "
                                "so that --out keeps the model with the best validation perplexity")
        loaded = model_from_archive(ckpt, str(resume))
        model = loaded.model
        state = RunState(ckpt["epoch"], ckpt["position"], ckpt["best_valid_ppl"], list(ckpt["history"]),
                         ckpt["seconds"], bool(ckpt.get("averaging", False)))
        plan = Plan(loaded.config.to_dict(), loaded.vocab, loaded.tokenizer, loaded.lang or lang, loaded.parse_layer,
                    ckpt["data"]["pretokenized"], ckpt["data"]["keep_punct"], state, ckpt["optimizer"])
        reporter.message(f"resuming from {resume} (epoch {state.epoch}, "
                         f"best valid ppl {state.best or float('nan'):.2f})")
    n_layers = plan.config["n_layers"]
    if plan.parse_layer is None:
        plan.parse_layer = n_layers // 2 + 1  # the paper parses with the middle layer
    if not 1 <= plan.parse_layer <= n_layers:
        raise TrainingError(f"--parse-layer must be between 1 and {n_layers}")
    return plan, model


def training_columns(corpus: str | Path, out: Path, plan: Plan, batch_size: int, group: Group) -> TokenColumns:
    """This rank's columns of the corpus's token file. One process per machine writes the file (the others
    may not see rank 0's disk) while the others on its machine wait, then read it."""
    reading = (plan.vocab, plan.tokenizer, plan.pretokenized, plan.keep_punct, plan.config.get("reverse", False))
    if group.is_machine_leader:
        corpus_token_file(corpus, token_file_path(out), *reading, write=True)
    group.barrier()
    ids = corpus_token_file(corpus, token_file_path(out), *reading, write=False)
    return rank_columns(ids, batch_size, group.rank, group.world_size)


def make_optimizer(params, tc: TrainConfig, averaging: bool = False) -> torch.optim.Optimizer:
    if tc.optimizer == "adam":
        return torch.optim.Adam(params, lr=tc.lr, weight_decay=tc.weight_decay)
    if averaging:  # AWD-LSTM's NT-ASGD: plain steps, and the running mean of the weights from here on
        return torch.optim.ASGD(params, lr=tc.lr, t0=0, lambd=0.0, weight_decay=tc.weight_decay)
    return torch.optim.SGD(params, lr=tc.lr, weight_decay=tc.weight_decay)


def should_average(history: list, valid_ppl: float, nonmono: int) -> bool:
    """NT-ASGD's non-monotone trigger: validation is worse than the best of all epochs but the last `nonmono`."""
    earlier = [h["valid_ppl"] for h in history if h.get("valid_ppl") is not None]
    return len(earlier) > nonmono and valid_ppl > min(earlier[:len(earlier) - nonmono])


class Trainer:
    """One training run: the model (wrapped in DDP when there are several processes), its optimizer, this
    rank's token columns, and the run's state. `run()` trains until the epochs, the time budget or an
    interrupt end it."""

    def __init__(self, model: ONLSTMLanguageModel, plan: Plan, data: TokenColumns, valid_data: torch.Tensor | None,
                 tc: TrainConfig, group: Group, device: torch.device, reporter: Reporter, out: Path,
                 data_meta: dict):
        self.raw_model = model.to(device)
        self.model = model
        if group.world_size > 1:
            # Rank 0's weights are copied to the others here. Every parameter gets a gradient at every step
            # (DropConnect multiplies the parameter inside forward), so no unused-parameter search is needed.
            # The column-major recurrent weights get column-major gradients, the layout of DDP's bucket views.
            self.model = DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
        self.params = list(model.parameters())
        self.optimizer = make_optimizer(self.params, tc, plan.state.averaging)
        if plan.optimizer is not None:
            self.optimizer.load_state_dict(plan.optimizer)
            plan.optimizer = None  # loaded; a second copy of it would stay in memory for the whole run
            for group_ in self.optimizer.param_groups:
                group_["lr"] = tc.lr  # a resumed run takes this run's --lr (e.g. a lower one after a divergence)
        self.plan, self.state, self.data, self.valid_data = plan, plan.state, data, valid_data
        self.tc, self.group, self.device, self.reporter = tc, group, device, reporter
        self.out, self.data_meta = out, data_meta
        self.global_batch = group.world_size * tc.batch_size
        self.train_meta = {**asdict(tc), "world_size": group.world_size, "global_batch_size": self.global_batch}
        self.t0 = self.last_checkpoint = time.time()
        self.bad_steps = 0          # steps in a row whose loss or gradient was not finite
        self.unsaved: str | None = None  # why the latest save failed, until a save succeeds
        self.deadline = None if tc.time_budget is None else self.t0 + max(0.0, tc.time_budget - self.state.seconds)

    def run(self) -> TrainResult:
        s = self.state
        interrupted = stopped_by_time = False
        if self.group.world_size > 1:
            self.reporter.message(f"training on {self.group.world_size} processes ({self.group.backend}) × batch "
                                  f"{self.tc.batch_size} = global batch {self.global_batch}")
        with StopSignals() as signals, self.open_loss_log() as loss_log:
            try:
                while s.epoch <= self.tc.epochs and not (interrupted or stopped_by_time):
                    stop, loss_sum, tokens = self.train_epoch(signals, loss_log)
                    interrupted, stopped_by_time = stop == "interrupt", stop == "time"
                    if not interrupted:
                        self.end_epoch(loss_sum, tokens, finished=not stopped_by_time)
            except KeyboardInterrupt:  # from the reporter (a test's), or from code run without StopSignals
                interrupted = True
                signals.caught = signals.caught or signal.SIGINT
            if interrupted and self.group.is_main:
                self.save_checkpoint()
                if not self.out.exists():  # never leave the user with nothing: keep what we have
                    self.save_model(self.epochs_at(s.epoch, s.position), None)
            stop_signal = int(signals.caught) or (signal.SIGINT if interrupted else 0)
        self.group.barrier()  # torchrun stops all processes once one has exited: not before rank 0 has saved
        if interrupted:  # the part of an epoch it trained counts, as in its checkpoint
            epochs_done = self.epochs_at(s.epoch, s.position)
        else:
            epochs_done = s.history[-1]["epoch"] if s.history else 0.0
        if self.unsaved is not None:
            raise TrainingError(f"training stopped, but its last save failed: {self.unsaved}")
        return TrainResult(str(self.out), str(checkpoint_path(self.out)), epochs_done, s.best, interrupted,
                           stopped_by_time, self.seconds(), s.history, stop_signal)

    def train_epoch(self, signals: StopSignals, loss_log) -> tuple[str, float, int]:
        """Trains from the current position to the end of the epoch. Returns why it stopped ("end", "time"
        or "interrupt"), and the loss sum and number of tokens of its steps, all ranks together."""
        s, rows = self.state, self.data.rows
        self.model.train()
        self.reporter.start_epoch(s.epoch, rows * self.global_batch)
        hidden = self.raw_model.init_state(self.tc.batch_size)
        loss_sum, tokens, started = 0.0, 0, time.time()
        while s.position < rows - 1:
            length = self.window_length(rows - 1 - s.position)
            window = self.data.window(s.position, length + 1).to(self.device)
            hidden, loss, stepped = self.step(window[:-1], window[1:], hidden)
            s.position += length
            decision = self.agree(loss, signals)
            bad = not stepped or not math.isfinite(decision.loss)  # alike on every rank (see step)
            if bad:
                self.bad_steps += 1
                hidden = self.raw_model.init_state(self.tc.batch_size)  # a NaN state would spoil every later step
                if self.bad_steps >= self.tc.max_bad_steps:
                    kept = f"{self.out} keeps the best model so far; " if self.out.exists() else ""
                    raise Diverged(f"training diverged in epoch {s.epoch}: {self.bad_steps} steps in a row had a loss "
                                   f"or gradient that is not a finite number; {kept}start again (or --resume "
                                   f"{checkpoint_path(self.out)} if there is one) with a lower --lr")
            else:
                self.bad_steps = 0
                loss_sum += decision.loss * length * self.global_batch
                tokens += length * self.global_batch
                if loss_log is not None:
                    loss_log.write(f"{s.epoch}\t{s.position}\t{decision.loss:.8g}\n")
                rate = tokens / max(time.time() - started, 1e-9)
                eta = (rows - 1 - s.position) * self.global_batch / max(rate, 1e-9)
                self.reporter.progress(s.epoch, s.position * self.global_batch, loss_sum / tokens, rate, eta)
            if decision.interrupted:
                return "interrupt", loss_sum, tokens
            if decision.time_up:
                return "time", loss_sum, tokens
            if decision.checkpoint_due and self.group.is_main and not bad:
                self.save_checkpoint()
        return "end", loss_sum, tokens

    def window_length(self, rows_left: int) -> int:
        # AWD-LSTM's variable window length keeps the cut points moving between epochs. Python's `random` is
        # seeded alike on every rank, so all ranks take the same windows and the same number of steps.
        bptt = self.tc.bptt if random.random() < 0.95 else self.tc.bptt / 2
        return min(max(5, int(random.gauss(bptt, 5))), rows_left)

    def step(self, x: torch.Tensor, y: torch.Tensor, hidden: list) -> tuple[list, float, bool]:
        """One update; returns the state, the loss, and whether the weights were updated. A gradient that
        is not finite is not applied: the step is skipped (on every rank, since the norm is of the averaged
        gradients)."""
        output = self.model(x, detach(hidden), targets=y)
        self.optimizer.zero_grad(set_to_none=True)
        output.loss.backward()  # with DDP, the gradients arrive averaged over the ranks
        # the norm of the averaged gradients, alike everywhere; clipped only when --clip is set
        norm = torch.nn.utils.clip_grad_norm_(self.params, self.tc.clip if self.tc.clip > 0 else math.inf)
        if not bool(torch.isfinite(norm)):
            self.optimizer.zero_grad(set_to_none=True)
            return output.state, output.loss.item(), False
        self.optimizer.step()
        return output.state, output.loss.item(), True

    def agree(self, loss: float, signals: StopSignals) -> Decision:
        """The step's loss averaged over the ranks, and what every rank does next. A signal on any rank
        stops all of them; time is read on rank 0 alone, so that no rank stops while the others go on
        (and wait for it forever)."""
        now, main = time.time(), self.group.is_main
        time_up = main and self.deadline is not None and now >= self.deadline
        due = main and now - self.last_checkpoint >= self.tc.checkpoint_every
        total, signalled, time_up, due = self.group.sum(
            [loss, float(bool(signals.caught)), float(time_up), float(due)], self.device)
        return Decision(total / self.group.world_size, signalled > 0, time_up > 0, due > 0)

    def end_epoch(self, loss_sum: float, tokens: int, finished: bool) -> None:
        """Validation, the model file and the checkpoint at the end of an epoch (or where time ran out)."""
        s = self.state
        epochs_done = self.epochs_at(s.epoch, s.position)
        train_ppl = math.exp(min(loss_sum / max(tokens, 1), 50.0))
        valid_ppl, saved = self.validate_and_save(epochs_done) if self.group.is_main else (None, False)
        valid_ppl, saved, seconds = self.group.broadcast((valid_ppl, saved, self.seconds()))
        if saved and valid_ppl is not None:
            s.best = valid_ppl
        s.history.append({"epoch": round(epochs_done, 3), "train_ppl": round(train_ppl, 2),
                          "valid_ppl": None if valid_ppl is None else round(valid_ppl, 2),
                          "seconds": round(seconds, 1)})
        self.reporter.end_epoch(s.epoch, train_ppl, valid_ppl, saved)
        if (self.tc.optimizer == "ntasgd" and not s.averaging and valid_ppl is not None
                and should_average(s.history[:-1], valid_ppl, self.tc.nonmono)):
            s.averaging = True
            self.optimizer = make_optimizer(self.params, self.tc, averaging=True)
            self.reporter.message(f"validation stalled: averaging the weights from here on (NT-ASGD, epoch {s.epoch})")
        if finished:
            s.epoch, s.position = s.epoch + 1, 0  # an interrupt from here on is at the start of the next epoch
        if self.group.is_main:
            self.save_checkpoint()

    def validate_and_save(self, epochs_done: float) -> tuple[float | None, bool]:
        if self.valid_data is None:  # without validation text the latest model is the best we know
            return None, self.save_model(epochs_done, None)
        with self.averaged_weights():
            ppl = evaluate_perplexity(self.raw_model, self.valid_data, self.tc.bptt)
            if not math.isfinite(ppl):
                self.reporter.message("validation perplexity is not a finite number: this model is not kept")
                return ppl, False
            saved = (self.state.best is None or ppl < self.state.best) and self.save_model(epochs_done, ppl)
        return ppl, saved

    @contextlib.contextmanager
    def averaged_weights(self):
        """The weights averaged by NT-ASGD in place of the current ones (for validation and the model file),
        the current ones restored after; the current weights themselves when not averaging."""
        averages = [self.optimizer.state.get(p, {}).get("ax") for p in self.params] if self.state.averaging else []
        swapped = [(p, p.detach().clone()) for p, ax in zip(self.params, averages) if ax is not None]
        with torch.no_grad():
            for (p, _), ax in zip(swapped, (a for a in averages if a is not None)):
                p.copy_(ax)
        try:
            yield
        finally:
            with torch.no_grad():
                for p, current in swapped:
                    p.copy_(current)

    def epochs_at(self, epoch: int, position: int) -> float:
        """Epochs trained by row `position` of (1-based) epoch `epoch`."""
        return epoch - 1 + position / max(self.data.rows - 1, 1)

    def seconds(self) -> float:
        return self.state.seconds + time.time() - self.t0

    def meta(self, epochs_done: float, valid_ppl: float | None) -> dict:
        return {"data": self.data_meta, "train": self.train_meta, "epochs": round(epochs_done, 3),
                "valid_ppl": valid_ppl, "seconds": round(self.seconds(), 1), "onlstm_version": __version__,
                "history": self.state.history, "created": time.strftime("%Y-%m-%d %H:%M:%S")}

    def save_model(self, epochs_done: float, valid_ppl: float | None) -> bool:
        """Write the model file; a failure is reported in one line and training goes on (False)."""
        p = self.plan
        return self.saving(lambda: save_model(self.out, self.raw_model, p.vocab, p.tokenizer, p.lang, p.parse_layer,
                                              self.meta(epochs_done, valid_ppl)))

    def save_checkpoint(self) -> bool:
        s, p = self.state, self.plan
        self.last_checkpoint = time.time()  # after a failure too: the next try is one interval later

        def write():
            archive = model_archive(self.raw_model, p.vocab, p.tokenizer, p.lang, p.parse_layer,
                                    self.meta(s.epoch - 1, s.best), torch.float32)
            archive.update(format=CHECKPOINT_FORMAT, optimizer=self.optimizer.state_dict(), epoch=s.epoch,
                           position=s.position, best_valid_ppl=s.best, history=s.history, data=self.data_meta,
                           seconds=self.seconds(), averaging=s.averaging)
            atomic_save(archive, checkpoint_path(self.out))
        return self.saving(write)

    def saving(self, write) -> bool:
        try:
            write()
        except ModelFileError as e:  # a full disk, a file system gone read-only, weights float16 cannot hold
            self.unsaved = str(e)
            self.reporter.message(f"warning: {e}; training goes on, and the next save tries again")
            return False
        self.unsaved = None
        return True

    def open_loss_log(self):
        if self.tc.loss_log and self.group.is_main:
            return open(self.tc.loss_log, "a", encoding="utf-8", buffering=1)  # by lines: readable while it runs
        return contextlib.nullcontext()


def train_model(corpus: str | Path, out: str | Path, model_config: dict | None = None,
                train_config: TrainConfig | None = None, valid: str | Path | None = None,
                tokenizer: Tokenizer | None = None, lang: str = "en", pretokenized: bool = False,
                keep_punct: bool = False, max_vocab: int | None = DEFAULT_MAX_VOCAB, min_freq: int = DEFAULT_MIN_FREQ,
                parse_layer: int | None = None, resume: str | Path | None = None,
                reporter: Reporter | None = None) -> TrainResult:
    """Train (or resume training) an ON-LSTM LM; `out` holds the best model by validation perplexity.

    Under torchrun with several processes this trains one model on all of them (see distributed.py).
    """
    tc = train_config or TrainConfig()
    if tc.optimizer not in OPTIMIZERS:
        raise TrainingError(f"unknown optimizer {tc.optimizer!r}; expected adam or sgd")
    if tc.threads is not None and tc.threads < 1:
        raise TrainingError("--threads must be at least 1")
    if tc.threads:
        torch.set_num_threads(tc.threads)
    out = Path(out)
    with process_group(resolve_device(tc.device)) as (group, device):
        reporter = (reporter or LineReporter()) if group.is_main else NullReporter()
        random.seed(tc.seed)
        torch.manual_seed(tc.seed + group.rank)  # each rank its own dropout masks; DDP copies rank 0's weights
        model, valid_data = None, None
        if group.is_main:
            try:
                check_destination(out)
                plan, model = make_plan(corpus, resume, model_config, tokenizer or Tokenizer(), lang, pretokenized,
                                        keep_punct, max_vocab, min_freq, parse_layer,
                                        group.world_size * tc.batch_size, reporter, valid, tc.optimizer)
                model = model or ONLSTMLanguageModel(ModelConfig(**plan.config))
                check_free_space(out, model)
                if resume is not None:
                    reconcile_best(plan.state, out, reporter)
                if valid is not None:
                    valid_data = validation_data(valid, plan, tc.eval_batch_size).to(device)
            except Exception as e:
                group.broadcast(RankZeroFailed(str(e)))  # else the others would wait for the plan forever
                raise
            group.broadcast(plan)
        else:
            plan = group.broadcast(None)
            if isinstance(plan, RankZeroFailed):
                raise plan
        data = training_columns(corpus, out, plan, tc.batch_size, group)
        if model is None:
            model = ONLSTMLanguageModel(ModelConfig(**plan.config))
        data_meta = {"corpus": str(corpus), "valid": str(valid) if valid else None,
                     "pretokenized": plan.pretokenized, "keep_punct": plan.keep_punct,
                     "train_tokens": data.rows * group.world_size * tc.batch_size,
                     "max_vocab": max_vocab, "min_freq": min_freq}
        trainer = Trainer(model, plan, data, valid_data, tc, group, device, reporter, out, data_meta)
        try:
            return trainer.run()
        finally:
            # DDP's reducer must go before its process group does: destroyed after it, under load, a worker
            # could abort at exit ("terminate called without an active exception")
            del trainer
            gc.collect()


def validation_data(valid: str | Path, plan: Plan, batch_size: int) -> torch.Tensor:
    sentences = read_corpus(valid, plan.tokenizer, plan.pretokenized, plan.keep_punct, plan.config.get("reverse", False))
    stream = token_stream(sentences, plan.vocab)
    if len(stream) < 2 * batch_size:
        raise TrainingError(f"{valid} is too short to validate on ({len(stream)} tokens with <eos>; at least "
                            f"{2 * batch_size} are needed)")
    return batchify(stream, batch_size)
