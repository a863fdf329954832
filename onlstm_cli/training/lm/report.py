"""What a training run tells the user: the Reporter protocol, plain log lines (LineReporter; the CLI has a rich
display for terminals), the silence of the ranks other than 0, and the lines that size a run up: its corpus
and time budget at the start, how many epochs the budget gives once the speed is known, and when it ends."""
from __future__ import annotations

import math
import sys
import time
from typing import Protocol

from onlstm_cli.training.run.clock import duration_text


class Reporter(Protocol):
    def start_epoch(self, epoch: int, n_tokens: int) -> None: ...
    # eta_s: until the run ends (the epochs left or the time budget left, whichever is shorter)
    def progress(self, epoch: int, tokens_done: int, loss: float, tokens_per_s: float, eta_s: float) -> None: ...
    # done: the share of the epoch trained, below 1 where the run stopped inside it (its time budget)
    def end_epoch(self, epoch: int, train_ppl: float, valid_ppl: float | None, saved: bool,
                  done: float = 1.0) -> None: ...
    def message(self, text: str) -> None: ...


def epoch_text(epoch: int, done: float) -> str:
    """"epoch 5", or "epoch 5, 5% of it" where the run stopped inside the epoch: its figures are those of the part
    trained, which a bare "end of epoch 5" would misstate."""
    return f"epoch {epoch}" if done >= 1 else f"epoch {epoch}, {math.floor(done * 100)}% of it"


class LineReporter:
    """Plain log lines (for files and pipes); the CLI uses a rich live display on a terminal."""

    def __init__(self, stream=None, every_s: float = 30.0):
        self._stream, self.every_s, self.last = stream, every_s, 0.0
        self.epoch_tokens = 0

    @property
    def stream(self):
        return self._stream or sys.stderr  # looked up at write time, so redirections of stderr apply

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None

    def start_epoch(self, epoch, n_tokens):
        self.last, self.epoch_tokens = time.time(), n_tokens

    def progress(self, epoch, tokens_done, loss, tokens_per_s, eta_s):
        if time.time() - self.last >= self.every_s:
            self.last = time.time()
            epoch_eta = max(self.epoch_tokens - tokens_done, 0) / max(tokens_per_s, 1e-9)
            print(f"epoch {epoch} | {tokens_done} tokens | loss {loss:.3f} | ppl {math.exp(min(loss, 50)):.1f} | "
                  f"{tokens_per_s:.0f} tokens/s | eta: run {duration_text(eta_s)}, epoch {duration_text(epoch_eta)}",
                  file=self.stream, flush=True)

    def end_epoch(self, epoch, train_ppl, valid_ppl, saved, done=1.0):
        valid = f"{valid_ppl:.2f}" if valid_ppl is not None else "-"
        print(f"end of {epoch_text(epoch, done)} | train ppl {train_ppl:.2f} | valid ppl {valid}"
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

    def end_epoch(self, epoch, train_ppl, valid_ppl, saved, done=1.0):
        pass

    def message(self, text):
        pass




def start_line(tokens: int, vocab_size: int, epochs: int, budget: float | None, spent: float = 0.0) -> str:
    """What the run trains on and for how long at most (`spent`: the seconds of the runs it resumes), before
    any step has been timed."""
    if budget is None:
        limit = "no time budget"
    else:
        left = f" ({duration_text(max(0.0, budget - spent))} left)" if spent > 0 else ""
        limit = f"time budget {duration_text(budget)}{left}"
    return f"corpus: {tokens:,} tokens, vocabulary {vocab_size:,}; {limit}, at most {epochs} epochs"


def start_lines(tokens: int, vocab_size: int, tc, spent: float, group) -> list[str]:
    """What a run says before its first step: its processes (under torchrun) and `start_line`."""
    lines = []
    if group.world_size > 1:
        lines.append(f"training on {group.world_size} processes ({group.backend}) × batch {tc.batch_size} = global "
                     f"batch {group.world_size * tc.batch_size}")
    return lines + [start_line(tokens, vocab_size, tc.epochs, tc.time_budget, spent)]


LEARNED_LITTLE = 0.5  # a best validation perplexity over half the word frequencies' alone: little learned of order


def against_word_frequencies(best: float | None, unigram: float | None) -> str | None:
    """The run's last word on its model beside a unigram model of its training text (lm/perplexity.py), with a
    warning where it learned little beyond the words' frequencies: its distances, and so its trees, then say
    little (docs/experiments/small-corpora.md measured where the project's models stand)."""
    if best is None or not unigram:
        return None
    ratio = best / unigram
    line = (f"the best model's validation perplexity {best:.2f} is {ratio:.2f} × that of the training text's word "
            f"frequencies alone ({unigram:.2f})")
    if ratio <= LEARNED_LITTLE:
        return line
    return (f"warning: {line}: it learned little of the words' order, so its trees will say little; more text "
            "helps more than more time")


SWING = 1.1  # a validation perplexity more than 10% above the epoch before's is a swing, not a plateau's noise


def swings(valid_ppl: list[float]) -> int:
    """How often a validation curve (one perplexity an epoch) rose by more than SWING from one epoch to the next."""
    return sum(1 for before, after in zip(valid_ppl, valid_ppl[1:]) if after > SWING * before)


def swinging_curve(history: list, lr_schedule: str) -> str | None:
    """A line where a constant rate's validation curve swung (it rose by more than 10% from one epoch to the next
    twice or more): on a small corpus that is the rate's doing, not a fault, and steadying it costs the trees
    (docs/training.md says why, experiments/small-corpora.md what was measured); else None."""
    if lr_schedule != "constant":
        return None
    valid = [h["valid_ppl"] for h in history if h.get("valid_ppl") is not None]
    rises = swings(valid)
    if rises < 2:
        return None
    return (f"validation perplexity rose by more than 10% from one epoch to the next {rises} times in {len(valid)} "
            "epochs: a constant rate makes it swing on a small corpus, and the model file keeps the best epoch; "
            "--lr-schedule cosine steadies it, at a cost to the trees (docs/training.md)")


class RichReporter:
    """A live rich display of the training run (the CLI's on a terminal): epoch, loss, perplexity, tokens/s,
    the epoch's ETA and the run's. One row a run: this process's own, and (`row`) one a recipe's seed trained in
    another process (recipe/side_by_side.py), its lines marked with the seed."""

    live = True  # runs in other processes can report to it, a row each

    def __init__(self):
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn
        self.console = Console(stderr=True)
        self.bar = Progress(TextColumn("{task.fields[name]}epoch {task.fields[epoch]}"), BarColumn(),
                            TextColumn("loss {task.fields[loss]}  ppl {task.fields[ppl]}  {task.fields[rate]} tok/s"),
                            TimeRemainingColumn(), TextColumn("run {task.fields[run_eta]}"), console=self.console,
                            redirect_stderr=False)  # __enter__ puts a stream of its own there
        self.rows: dict[str, RichRow] = {}
        self.stderr = None

    def __enter__(self):
        self.bar.start()
        self.stderr, sys.stderr = sys.stderr, self.console_stream(sys.stderr)
        return self

    def __exit__(self, *exc):
        sys.stderr = self.stderr
        self.bar.stop()

    def console_stream(self, stream):
        """`stream` (stderr) written through the display's console, so that every line goes above the live rows: one
        written past them would be glued to a row and erased by the next redraw, which moves up over the lines it
        drew. rich's own proxy reports no encoding, so click (typer.echo: the CLI's log lines) takes it for a
        misconfigured stream and writes to the file beneath it; this one reports the file's."""
        from rich.file_proxy import FileProxy

        class ConsoleStream(FileProxy):
            encoding = property(lambda self: self.rich_proxied_file.encoding)
            errors = property(lambda self: self.rich_proxied_file.errors)
        return ConsoleStream(self.console, stream)

    def row(self, name: str = "") -> "RichRow":
        """The reporter of the run called `name` (a prefix such as "[seed 1111] "; "" for this process's own)."""
        return self.rows.setdefault(name, RichRow(self, name))

    def end_row(self, name: str = "") -> None:
        """The run called `name` has ended: its row leaves the display (a finished run's figures, frozen, would
        read as a run still going, and the rows of a recipe's rounds would pile up)."""
        row = self.rows.pop(name, None)
        if row is not None and row.task is not None:
            self.bar.remove_task(row.task)

    def start_epoch(self, epoch, n_tokens):
        self.row().start_epoch(epoch, n_tokens)

    def progress(self, epoch, tokens_done, loss, tokens_per_s, eta_s):
        self.row().progress(epoch, tokens_done, loss, tokens_per_s, eta_s)

    def end_epoch(self, epoch, train_ppl, valid_ppl, saved, done=1.0):
        self.row().end_epoch(epoch, train_ppl, valid_ppl, saved, done)

    def message(self, text):
        self.row().message(text)


class RichRow:
    """One run's row of a RichReporter, and its lines printed above the live rows."""

    def __init__(self, display: RichReporter, name: str):
        from rich.markup import escape
        self.display, self.name, self.task = display, escape(name), None
        self.escape = escape

    def start_epoch(self, epoch, n_tokens):
        bar = self.display.bar
        if self.task is not None:
            bar.remove_task(self.task)
        # no figure until the epoch's first step is timed: a loss of 0.000 and 0 tok/s would be untrue
        self.task = bar.add_task("train", total=n_tokens, name=self.name, epoch=epoch, loss="-", ppl="-", rate="-",
                                 run_eta="-")

    def progress(self, epoch, tokens_done, loss, tokens_per_s, eta_s):
        self.display.bar.update(self.task, completed=tokens_done, loss=f"{loss:.3f}",
                                ppl=f"{math.exp(min(loss, 50)):.1f}", rate=f"{tokens_per_s:,.0f}",
                                run_eta=duration_text(eta_s))

    def end_epoch(self, epoch, train_ppl, valid_ppl, saved, done=1.0):
        valid = f"{valid_ppl:.2f}" if valid_ppl is not None else "-"
        self.display.console.print(f"{self.name}{epoch_text(epoch, done)}: train ppl {train_ppl:.2f}, valid ppl {valid}"
                                   f"{' [green](saved)[/green]' if saved else ''}")

    def message(self, text):
        self.display.console.print(self.name + self.escape(text))
