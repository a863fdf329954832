"""One training run's loop (Trainer): epoch after epoch of truncated-BPTT steps on this rank's token columns,
each step ending where every rank agrees what comes next, each epoch with validation, the model file and the
checkpoint; and what the run ends with (TrainResult). train.py sets it up."""
from __future__ import annotations

import math
import signal
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from onlstm_cli.config import TrainConfig
from onlstm_cli.errors import TrainingError
from onlstm_cli.lm.model import ONLSTMLanguageModel
from onlstm_cli.lm.perplexity import evaluate_perplexity
from onlstm_cli.signals import StopSignals
from onlstm_cli.text.corpus import TokenColumns
from onlstm_cli.training.run.distributed import Group, lost_peer
from onlstm_cli.training.run.files import checkpoint_path
from onlstm_cli.training.lm.files import RunFiles
from onlstm_cli.training.run.clock import ESTIMATE_STEPS, Budget, Clock
from onlstm_cli.training.run.guard import DivergenceGuard
from onlstm_cli.training.lm.report import Reporter, start_lines
from onlstm_cli.training.lm.setup import Plan
from onlstm_cli.training.lm.steps import (Decision, EpochTally, averages_swapped_in, detach, distributed_model,
                                             make_optimizer, open_loss_log, RateSchedule, resumed_optimizer,
                                             resumed_average, should_average, window_length)



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

    def summary(self, valid: str | Path | None = None) -> str:
        """The end line of `onlstm train`: how the run ended, and what its model file holds."""
        how = "interrupted" if self.interrupted else "time budget reached" if self.stopped_by_time else "done"
        return (f"{how}: {self.epochs_done:.2f} epochs in {self.seconds / 60:.1f} min; {self.model_text(valid)}; "
                f"checkpoint: {self.checkpoint}")

    def model_text(self, valid: str | Path | None) -> str:
        """The model file: the best by validation, or why it is not (validation given or not), if there is one."""
        if self.best_valid_ppl is not None:
            return f"best valid ppl {self.best_valid_ppl:.2f}; model: {self.out}"
        validated = any(h.get("valid_ppl") is not None for h in self.history)
        if valid is None:
            why = "no validation text"
        elif not validated:
            why = f"stopped before the first validation on {valid}"
        else:
            why = f"no validation perplexity on {valid} was a finite number"
        if not Path(self.out).exists():
            return f"{why}; no model file was written ({self.out})"
        latest = "" if validated else "the latest, "
        return f"{why}, so the model is {latest}not chosen by validation; model: {self.out}"


class Trainer:
    """One training run: the model (wrapped in DDP when there are several processes), its optimizer, this
    rank's token columns, and the run's state. `run()` trains until the epochs, the time budget or an
    interrupt end it: epoch after epoch of steps (`train_epoch`, `step`), each step ending where every rank
    agrees what comes next (`agree`), each epoch with validation and the files (`end_epoch`)."""

    def __init__(self, model: ONLSTMLanguageModel, plan: Plan, data: TokenColumns, valid_data: torch.Tensor | None,
                 tc: TrainConfig, group: Group, device: torch.device, reporter: Reporter, out: Path,
                 data_meta: dict, budget: Budget):
        self.raw_model = model.to(device)
        self.model = distributed_model(model, group, device)
        self.params = list(model.parameters())
        self.optimizer = resumed_optimizer(self.params, tc, plan)
        self.average = resumed_average(model, tc, plan)
        self.plan, self.state, self.data, self.valid_data = plan, plan.state, data, valid_data
        self.tc, self.group, self.device, self.reporter = tc, group, device, reporter
        self.out = out
        self.global_batch = group.world_size * tc.batch_size
        self.epoch_tokens = data.rows * self.global_batch
        train_meta = {**asdict(tc), "world_size": group.world_size, "global_batch_size": self.global_batch}
        self.clock = Clock(budget, self.state.seconds, self.epoch_tokens, tc.epochs)
        self.files = RunFiles(out, self.raw_model, plan, data_meta, train_meta, reporter, self.clock.seconds)
        self.guard = DivergenceGuard(tc.max_bad_steps)
        self.rate = RateSchedule(tc, self.state.history)
        # where the run stands, for the rate: from the checkpoint here, then from rank 0's clock at each step (agree)
        self.share_done = self.clock.share_before(self.epochs_at(self.state.epoch, self.state.position))

    # --- the run -------------------------------------------------------------------------------------------

    def run(self) -> TrainResult:
        for line in start_lines(self.epoch_tokens, len(self.plan.vocab), self.tc, self.state.seconds, self.group):
            self.reporter.message(line)
        with StopSignals() as signals, open_loss_log(self.tc, self.group.is_main) as loss_log:
            stop = self.train_epochs(signals, loss_log)
            if stop == "interrupt":
                self.keep_interrupted()
            stop_signal = int(signals.caught) or (signal.SIGINT if stop == "interrupt" else 0)
        self.group.barrier()  # torchrun stops all processes once one has exited: not before rank 0 has saved
        if self.files.unsaved is not None:
            raise TrainingError(f"training stopped, but its last save failed: {self.files.unsaved}")
        return self.result(stop, stop_signal)

    def train_epochs(self, signals: StopSignals, loss_log) -> str:
        """Epochs until the last, the time budget or an interrupt; says which: "end", "time" or "interrupt"."""
        try:
            while self.state.epoch <= self.tc.epochs:
                stop, tally = self.train_epoch(signals, loss_log)
                if stop == "interrupt":
                    return stop
                self.end_epoch(tally, finished=stop == "end")
                if stop == "time":
                    return stop
            return "end"
        except KeyboardInterrupt:  # from the reporter (a test's), or from code run without StopSignals
            signals.caught = signals.caught or signal.SIGINT
            return "interrupt"
        except RuntimeError as e:
            why = lost_peer(e, self.group)
            if why is None:
                raise
            raise TrainingError(f"{why}: training stopped; {self.keep_after_lost_peer()}") from None

    def keep_interrupted(self) -> None:
        """An interrupted run's checkpoint, and a model file where there is none: never leave the user with
        nothing."""
        if self.group.is_main:
            self.files.save_checkpoint(self.optimizer, self.average)
            if not self.out.exists():
                self.files.save_model(self.epochs_at(self.state.epoch, self.state.position), None)

    def keep_after_lost_peer(self) -> str:
        """Rank 0's checkpoint of where the run stands when a peer is lost (until a step's collectives fail, the
        weights are the same on every rank, and a failed step is not applied), and how to go on."""
        ckpt = checkpoint_path(self.out)
        if self.group.is_main and self.files.save_checkpoint(self.optimizer, self.average):
            return f"--resume {ckpt} goes on from here"
        return f"--resume {ckpt} goes on from the latest checkpoint, if there is one"

    def result(self, stop: str, stop_signal: int) -> TrainResult:
        s = self.state
        if stop == "interrupt":  # the part of an epoch it trained counts, as in its checkpoint
            epochs_done = self.epochs_at(s.epoch, s.position)
        else:
            epochs_done = s.history[-1]["epoch"] if s.history else 0.0
        return TrainResult(str(self.out), str(checkpoint_path(self.out)), epochs_done, s.best, stop == "interrupt",
                           stop == "time", self.clock.seconds(), s.history, stop_signal)

    # --- an epoch of steps ---------------------------------------------------------------------------------

    def train_epoch(self, signals: StopSignals, loss_log) -> tuple[str, EpochTally]:
        """Trains from the current position to the end of the epoch. Returns why it stopped ("end", "time"
        or "interrupt") and the tally of its steps."""
        s, rows = self.state, self.data.rows
        self.model.train()
        self.reporter.start_epoch(s.epoch, self.epoch_tokens)
        hidden = self.raw_model.init_state(self.tc.batch_size)
        tally = EpochTally()
        while s.position < rows - 1:
            length = window_length(self.tc.bptt, rows - 1 - s.position)
            self.rate.set(self.optimizer, self.share_done)
            hidden, loss, stepped = self.step(*self.window(length), hidden)
            s.position += length
            decision = self.agree(loss, signals)
            self.share_done = decision.share_done
            good = stepped and math.isfinite(decision.loss)  # alike on every rank (see step)
            if good:
                self.guard.good_step()
                self.record(decision.loss, length, tally, loss_log)
            else:
                hidden = self.after_bad_step()
            if decision.interrupted:
                return "interrupt", tally
            if decision.time_up:
                return "time", tally
            if decision.checkpoint_due and good:
                self.checkpoint()
        return "end", tally

    def window(self, length: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The next `length` rows as inputs, and the rows one token later as targets."""
        rows = self.data.window(self.state.position, length + 1).to(self.device)
        return rows[:-1], rows[1:]

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
        if self.average is not None:
            self.average.update()
        return output.state, output.loss.item(), True

    def agree(self, loss: float, signals: StopSignals) -> Decision:
        """The step's loss averaged over the ranks, and what every rank does next. A signal on any rank
        stops all of them; time is read on rank 0 alone, so that no rank stops while the others go on
        (and wait for it forever)."""
        main, s = self.group.is_main, self.state
        time_up = main and self.clock.time_up()
        due = main and time.time() - self.files.last_checkpoint >= self.tc.checkpoint_every
        share = self.clock.share_done(self.epochs_at(s.epoch, s.position)) if main else 0.0
        total, signalled, time_up, due, share = self.group.sum(
            [loss, float(bool(signals.caught)), float(time_up), float(due), share], self.device)
        return Decision(total / self.group.world_size, signalled > 0, time_up > 0, due > 0, share)

    def after_bad_step(self) -> list:
        """A fresh state after a step whose loss or gradient was not finite (a NaN state would spoil every
        later step), or the end of a run that has had too many of them in a row."""
        kept = f"{self.out} keeps the best model so far; " if self.out.exists() else ""
        self.guard.bad_step(lambda steps: (
            f"training diverged in epoch {self.state.epoch}: {steps} steps in a row had a loss or gradient that is "
            f"not a finite number; {kept}start again (or --resume {checkpoint_path(self.out)} if there is one) with a "
            "lower --lr"))
        return self.raw_model.init_state(self.tc.batch_size)

    def record(self, loss: float, length: int, tally: EpochTally, loss_log) -> None:
        """A good step in the loss log, the tally and the progress report."""
        s = self.state
        tally.add(loss, length * self.global_batch)
        if loss_log is not None:
            loss_log.write(f"{s.epoch}\t{s.position}\t{loss:.8g}\n")
        rate = tally.rate()
        if not self.clock.estimated and tally.steps >= ESTIMATE_STEPS:
            self.estimate(rate)
        self.reporter.progress(s.epoch, s.position * self.global_batch, tally.loss(), rate,
                               self.clock.eta(rate, self.tokens_left_in_epoch(), s.epoch))

    # --- how long the run takes (run/clock.py) ---------------------------------------------------------------

    def tokens_left_in_epoch(self) -> int:
        return (self.data.rows - 1 - self.state.position) * self.global_batch

    def estimate(self, rate: float) -> None:
        s = self.state
        line = self.clock.estimate(rate, self.tokens_left_in_epoch(), s.epoch, self.epochs_at(s.epoch, s.position))
        if line:
            self.reporter.message(line)

    # --- the end of an epoch: validation and the files ------------------------------------------------------

    def end_epoch(self, tally: EpochTally, finished: bool) -> None:
        """Validation, the model file and the checkpoint at the end of an epoch (or where time ran out)."""
        s = self.state
        if finished and not self.clock.estimated:  # an epoch shorter than ESTIMATE_STEPS
            self.clock.estimated = True
            if s.epoch < self.tc.epochs:  # at the end of the last epoch there is nothing left to estimate
                self.estimate(tally.rate())
        epochs_done = self.epochs_at(s.epoch, s.position)
        valid_ppl, saved, seconds = self.validate_everywhere(epochs_done)
        if saved and valid_ppl is not None:
            s.best = valid_ppl
        train_ppl = math.exp(min(tally.loss(), 50.0))
        s.history.append({"epoch": round(epochs_done, 3), "train_ppl": round(train_ppl, 2),
                          "valid_ppl": None if valid_ppl is None else round(valid_ppl, 2),
                          "seconds": round(seconds, 1)})
        self.reporter.end_epoch(s.epoch, train_ppl, valid_ppl, saved, 1.0 if finished else epochs_done + 1 - s.epoch)
        self.average_if_stalled(valid_ppl)
        annealed = self.rate.after_epoch(s.history)
        self.rate.set(self.optimizer, self.share_done)  # the checkpoint holds the rate the next step takes
        if annealed:
            self.reporter.message(f"{annealed} (epoch {s.epoch})")
        if finished:
            s.epoch, s.position = s.epoch + 1, 0  # an interrupt from here on is at the start of the next epoch
        self.checkpoint()

    def validate_everywhere(self, epochs_done: float) -> tuple[float | None, bool, float]:
        """Rank 0 validates and saves while the others wait for it (on the setup's timeout: a long validation
        text takes long); all get its perplexity, whether it saved, and the run's seconds."""
        started = time.time()
        valid_ppl, saved = self.validate_and_save(epochs_done) if self.group.is_main else (None, False)
        shared = self.group.broadcast((valid_ppl, saved, self.clock.seconds()))
        self.clock.validation_seconds = time.time() - started
        return shared

    def average_if_stalled(self, valid_ppl: float | None) -> None:
        s = self.state
        if (self.tc.optimizer == "ntasgd" and not s.averaging and valid_ppl is not None
                and should_average(s.history[:-1], valid_ppl, self.tc.nonmono)):
            s.averaging = True
            self.optimizer = make_optimizer(self.params, self.tc, averaging=True)
            self.reporter.message(f"validation stalled: averaging the weights from here on (NT-ASGD, epoch {s.epoch})")

    def checkpoint(self) -> None:
        """Rank 0 writes the checkpoint; the others wait for it here, on the setup's timeout, where the next
        step's collectives would give up after `group.timeout` seconds while a large model is being saved."""
        if self.group.is_main:
            self.files.save_checkpoint(self.optimizer, self.average)
        self.group.barrier()

    def validate_and_save(self, epochs_done: float) -> tuple[float | None, bool]:
        if self.valid_data is None:  # without validation text the latest model is the best we know
            return None, self.files.save_model(epochs_done, None)
        with averages_swapped_in(self.params, self.optimizer, self.state.averaging, self.average):
            ppl = evaluate_perplexity(self.raw_model, self.valid_data, self.tc.bptt)
            if not math.isfinite(ppl):
                self.reporter.message("validation perplexity is not a finite number: this model is not kept")
                return ppl, False
            saved = (self.state.best is None or ppl < self.state.best) and self.files.save_model(epochs_done, ppl)
        return ppl, saved

    def epochs_at(self, epoch: int, position: int) -> float:
        """Epochs trained by row `position` of (1-based) epoch `epoch`."""
        return epoch - 1 + position / max(self.data.rows - 1, 1)

