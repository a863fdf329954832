"""Time, for every training loop: the budget a command was given (`Budget`, one value from the CLI down, its start
included) and the one clock a run keeps (`Clock`): its seconds over all its runs (a resumed one included), the time
it has left before its end (its own budget, or the end of a recipe's stage), and once its first steps are timed,
how much of its work it will do and when it ends.

Times are wall-clock (time.time()): a recipe's language models train in processes of their own, which all read
the same deadline.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

ESTIMATE_STEPS = 20  # steps timed before the run's length is estimated (the first ones warm kernels up)


@dataclass(frozen=True)
class Budget:
    """The time a command (or a part of one: a recipe's stage, one of its models) may take: `seconds` (None: no
    limit) over all its runs, counted from `started`; and `until`, a time it must end by whatever its seconds say
    (a recipe's stage ends there, the run's set-up inside it)."""
    seconds: float | None = None
    started: float = field(default_factory=time.time)
    until: float | None = None

    def part(self, seconds: float | None = None, until: float | None = None) -> "Budget":
        """A part of this budget, starting now: `seconds` of its own, ending by `until` and by this budget's end."""
        ends = [end for end in (until, self.until) if end is not None]
        return Budget(seconds, time.time(), min(ends) if ends else None)


class Clock:
    """A run's clock: its `budget`'s seconds count over the run's earlier runs (`seconds_before`) and this one from
    the moment the clock is made; `epoch_tokens` units of work an epoch (tokens), `epochs` epochs at most."""

    def __init__(self, budget: Budget, seconds_before: float = 0.0, epoch_tokens: int = 1, epochs: int = 1):
        self.t0 = time.time()
        self.seconds_before, self.time_budget = seconds_before, budget.seconds
        self.epoch_tokens, self.epochs = epoch_tokens, epochs
        budget_end = None if budget.seconds is None else self.t0 + max(0.0, budget.seconds - seconds_before)
        self.deadline = min((end for end in (budget_end, budget.until) if end is not None), default=None)
        self.validation_seconds = 0.0  # the latest validation's: the run stops that long before its deadline
        self.estimated = False         # whether the run's length has been estimated yet

    def seconds(self) -> float:
        """The run's seconds, its earlier runs' included."""
        return self.seconds_before + time.time() - self.t0

    def share_done(self, epochs_done: float) -> float:
        """How far the run is from its start (0) to its end (1): by its epochs, or by its time where its
        deadline comes sooner (the later of the two)."""
        left = self.budget_left()
        spent = self.seconds()
        return self.share(epochs_done, spent, None if left is None else spent + left)

    def share_before(self, epochs_done: float) -> float:
        """`share_done` as the run's earlier runs left it (the same on every rank: nothing is read from a clock)."""
        return self.share(epochs_done, self.seconds_before, self.time_budget or None)

    def share(self, epochs_done: float, seconds: float, total_seconds: float | None) -> float:
        share = epochs_done / max(self.epochs, 1)
        if total_seconds is not None:
            share = max(share, seconds / total_seconds if total_seconds > 0 else 1.0)
        return min(share, 1.0)

    def budget_left(self) -> float | None:
        return None if self.deadline is None else max(0.0, self.deadline - time.time())

    def time_up(self) -> bool:
        """Whether the run must stop now: its last validation and files must end by the deadline."""
        return self.deadline is not None and time.time() + self.validation_seconds >= self.deadline

    def eta(self, rate: float, tokens_left: int, epoch: int) -> float:
        """Seconds until the run ends at `rate` tokens/s, `tokens_left` of (1-based) epoch `epoch` to go."""
        return run_eta(tokens_left, self.epochs - epoch, self.epoch_tokens, rate, self.validation_seconds,
                       self.budget_left())

    def estimate(self, rate: float, tokens_left: int, epoch: int, epochs_done: float) -> str | None:
        """Once, when the run's first steps are timed: the line that says how many epochs it reaches, and when
        it ends (None where nothing was timed)."""
        self.estimated = True
        if rate <= 0:
            return None
        return estimate_line(rate, self.epoch_tokens, epochs_done, self.epochs, self.eta(rate, tokens_left, epoch),
                             self.time_budget, self.budget_left())


def duration_text(seconds: float) -> str:
    """0.4 s, 45 s, 12.5 min, 58 min, 2.3 h: as exact as an estimate deserves."""
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 600:
        return f"{seconds / 60:.1f} min"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def run_eta(tokens_left: int, epochs_after: int, epoch_tokens: int, tokens_per_s: float, validation_s: float,
            budget_left: float | None) -> float:
    """Seconds until the run ends: the rest of this epoch and the `epochs_after` whole epochs after it at this
    rate, each ending with a validation as long as the latest, or the time budget left if that is less."""
    rate = max(tokens_per_s, 1e-9)
    seconds = tokens_left / rate + validation_s + epochs_after * (epoch_tokens / rate + validation_s)
    return seconds if budget_left is None else min(seconds, budget_left)


def estimate_line(tokens_per_s: float, epoch_tokens: int, epochs_done: float, epochs: int, eta_s: float,
                  budget: float | None, budget_left: float | None) -> str:
    """Once the first steps are timed: how long an epoch takes, how many epochs the run will reach (all of
    them, or as many as the time budget gives) and when it ends."""
    epoch_s = epoch_tokens / max(tokens_per_s, 1e-9)
    head = f"at {tokens_per_s:,.0f} tokens/s an epoch takes about {duration_text(epoch_s)}"
    reached = epochs if budget_left is None else min(epochs, epochs_done + budget_left / epoch_s)
    if reached >= epochs:
        within = f", within the time budget of {duration_text(budget)}" if budget is not None else ""
        them = "the epoch ends" if epochs == 1 else f"the {epochs} epochs end"
        return f"{head}: {them} in about {duration_text(eta_s)}{within}"
    return f"{head}: time budget {duration_text(budget)}: about {reached:.1f} epochs, ending in about " \
           f"{duration_text(eta_s)}"
