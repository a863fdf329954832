"""The divergence guard every training loop keeps: a step whose loss or gradient is not a finite number is not
applied, and a run that has had `limit` of them in a row ends (Diverged) with its best model so far kept."""
from __future__ import annotations

from onlstm_cli.errors import Diverged


class DivergenceGuard:
    def __init__(self, limit: int):
        self.limit, self.bad_steps = limit, 0  # steps in a row whose loss or gradient was not finite

    def good_step(self) -> None:
        self.bad_steps = 0

    def bad_step(self, why) -> None:
        """One more bad step; at the limit, Diverged with `why(steps)`'s words."""
        self.bad_steps += 1
        if self.bad_steps >= self.limit:
            raise Diverged(why(self.bad_steps))
