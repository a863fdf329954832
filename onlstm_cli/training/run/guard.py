"""When a training loop stops on its own. The divergence guard every loop keeps: a step whose loss or gradient is not
a finite number is not applied, and a run that has had `limit` of them in a row ends (Diverged) with its best model
so far kept. Patience: the epochs validated since the best one (epochs_since_best)."""
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


def epochs_since_best(scores: list) -> int:
    """The epochs validated since the one of the lowest score (`scores`, one an epoch, lower is better; the first of
    equal ones counts, as a tie is no gain); 0 without any."""
    return len(scores) - 1 - scores.index(min(scores)) if scores else 0
