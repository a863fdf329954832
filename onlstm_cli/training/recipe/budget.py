"""The recipe's plan of its time (recipe/runner.py): its Budget B (run/clock.py, from the command's start) is for
the whole recipe, counted in wall time over all its runs (a resumed or extended recipe included), as the record
keeps it: every second of a run is counted toward a stage (`count`), saved with the record, so a rerun knows what
the earlier runs spent.

The teachers (every family's models) get `lm_share` × B; the models that train at once share it out in rounds,
each round a wall-clock deadline (the processes' start-up and the models' set-up inside it), and each model also
no more than lm_share × B / ⌈K / side-by-side⌉ of its own training (counted over its resumed runs, as plain
training counts it). The span parser stage gets the rest, B minus what the recipe has spent: the teachers' parse
included, and the time the language models' stage took beyond its share taken from it; where a second round
follows, the first span parser gets two thirds of that, the second round the rest (recipe/second_round.py).
"""
from __future__ import annotations

import time

from onlstm_cli.training.recipe import side_by_side
from onlstm_cli.training.run.clock import Budget


class StagePlan:
    """The recipe's `budget` shared out between its stages: `teachers` models (every family's), `slots` at once."""

    def __init__(self, budget: Budget, lm_share: float, teachers: int, slots: int):
        self.budget, self.lm_share, self.teachers, self.slots = budget.seconds, lm_share, teachers, slots
        self.started = self.counted_until = budget.started  # the end of the time already counted toward a stage

    def count(self, state, stage: str) -> None:
        """The time since the last count, into `stage`'s wall time in the record (saved with it)."""
        now = time.time()
        state.stage_seconds[stage] = state.stage_seconds.get(stage, 0.0) + now - self.counted_until
        self.counted_until = now

    def spent(self, state) -> float:
        """The recipe's wall time so far, over all its runs."""
        return sum(state.stage_seconds.values()) + time.time() - self.counted_until

    def lm_budget(self) -> float | None:
        """Each language model's own training time at most, over its resumed runs."""
        if self.budget is None:
            return None
        return self.budget * self.lm_share / side_by_side.waves(self.teachers, self.slots)

    def stage_one_left(self, state) -> float | None:
        if self.budget is None:
            return None
        uncounted = time.time() - self.counted_until  # this run's time before the stage counts toward it
        return max(0.0, self.budget * self.lm_share - state.stage_seconds.get("language_models", 0.0) - uncounted)

    def lm_deadlines(self, state, models: int, later_rounds: int = 0) -> list[float | None]:
        """The wall-clock time (time.time()) each of the `models` language models still to train must end by,
        starting now: the stage's time left shared out in rounds of `slots`, and `later_rounds` more after theirs
        (the focused PCFGs', which start once these have ended)."""
        left = self.stage_one_left(state)
        if left is None:
            return [None] * models
        rounds = side_by_side.waves(models, self.slots) + later_rounds
        now = time.time()
        return [now + left * (k // self.slots + 1) / rounds for k in range(models)]

    def span_parser_budget(self, state, its_seconds: float, reserve: float = 0.0) -> float | None:
        """self_train's budget (counted over its resumed runs, `its_seconds` so far): the recipe's time left, less
        `reserve`, what a stage after it keeps (recipe/second_round.py)."""
        if self.budget is None:
            return None
        return max(0.0, self.budget - self.spent(state) - reserve) + its_seconds

    def seconds_left(self, state) -> float | None:
        """The most the recipe can still take (None: no time budget)."""
        return None if self.budget is None else max(0.0, self.budget - self.spent(state))

    def eta_text(self, state, number: int) -> str:
        lm_budget = self.lm_budget()
        if lm_budget is not None:
            left = self.seconds_left(state)
            return f"this model's budget {lm_budget / 60:.1f} min, the recipe's at most {left / 60:.1f} min more"
        if not state.teachers:
            return "no time budget: each model runs its --epochs (the recipe's ETA follows the first model)"
        per_model = sum(t["seconds"] for t in state.teachers) / len(state.teachers)
        rounds = side_by_side.waves(self.teachers - number + 1, self.slots)
        return (f"about {per_model / 60:.1f} min a model, so the language models end in about "
                f"{per_model * rounds / 60:.1f} min; then the span parser")


class StageProgress:
    """The recipe's own line every `every` seconds while its language models train side by side, where each
    process's lines say only how its own model goes: the stage, the seeds training, the time left."""

    def __init__(self, clock: StagePlan, state, every: float, log, total: int, models: str = "language models",
                 stages: int = 2):
        self.clock, self.state, self.every, self.log = clock, state, every, log
        self.total, self.models = total, models  # the stage's models, the more PCFGs included, and their word
        self.stages = stages  # the recipe's stages, a second round's included
        self.started = self.last = time.monotonic()

    def tick(self, training: list, waiting: int) -> None:
        """`training`: the jobs (families.TeacherJob) training now."""
        now = time.monotonic()
        if now - self.last < self.every:
            return
        self.last = now
        seeds = (f"seed{'s' if len(training) > 1 else ''} {', '.join(str(job.seed) for job in training)}"
                 if all(job.family.name == "onlstm" for job in training) else ", ".join(j.label for j in training))
        text = (f"recipe: stage 1 of {self.stages}, {len(self.state.teachers)} of {self.total} {self.models} done, "
                f"training {seeds}"
                + (f", {waiting} waiting" if waiting else "")
                + f"; {(now - self.started) / 60:.1f} min in this stage")
        stage_left = self.clock.stage_one_left(self.state)
        if stage_left is not None:
            left = self.clock.seconds_left(self.state)
            text += f"; it ends in at most {stage_left / 60:.1f} min, the recipe in at most {left / 60:.1f} min"
        self.log(text)
