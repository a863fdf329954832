"""How long a training run takes: its seconds over all its runs (a resumed one included), the time it has left
before its deadline (the time budget, or a recipe's stage end), and once its first steps are timed, how many
epochs it will reach and when it ends."""
from __future__ import annotations

import time

from onlstm_cli.training.train_report import estimate_line, run_eta

ESTIMATE_STEPS = 20  # steps timed before the run's length is estimated (the first ones warm kernels up)


class RunClock:
    def __init__(self, seconds_before: float, time_budget: float | None, deadline: float | None,
                 epoch_tokens: int, epochs: int):
        self.t0 = time.time()
        self.seconds_before, self.time_budget = seconds_before, time_budget
        self.epoch_tokens, self.epochs = epoch_tokens, epochs
        budget_end = None if time_budget is None else self.t0 + max(0.0, time_budget - seconds_before)
        self.deadline = min((end for end in (budget_end, deadline) if end is not None), default=None)
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
