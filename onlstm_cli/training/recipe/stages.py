"""The recipe's first stage (recipe/runner.py): every family of RecipeConfig.families trains its models, seeds S,
S+1, …, S+K−1, each written beside --out (`ModelFamily.path`), within the stage's share of the one budget. Side by
side, one process a model (side_by_side.py), where more than one trains at once; else one after another in this
process. Each model goes into the record as it ends, so an interruption loses none that finished."""
from __future__ import annotations

import signal

from onlstm_cli.errors import TrainingError
from onlstm_cli.training.families import TeacherJob, TeacherRun
from onlstm_cli.training.run.files import checkpoint_path
from onlstm_cli.training.recipe import side_by_side
from onlstm_cli.training.recipe.budget import StageProgress
from onlstm_cli.training.recipe.record import rounded
from onlstm_cli.training.recipe.voters import voters_by_family


def more_pcfgs(recipe, seeds: list[int]) -> list[tuple[str, int]]:
    """RecipeConfig.more_pcfgs: the (family, seed) of the PCFGs that may train in the time the focused ones leave,
    in the order they start: K reading endings (seeds S…S+K−1, where the families do not already name them), then
    K more focused ones (seeds S+K…S+2K−1). None where no PCFG is focused."""
    if not (recipe.more_pcfgs and recipe.focus_pcfgs and {"onlstm", "pcfg"} <= set(recipe.families)):
        return []
    endings = [] if "pcfg-endings" in recipe.families else [("pcfg-endings", seed) for seed in seeds]
    return endings + [("pcfg", seeds[-1] + k) for k in range(1, len(seeds) + 1)]


def teacher_name(job: TeacherJob) -> str:
    """How the log names a teacher: "language model 2 of 4 (seed 1112)", another family's by its name."""
    return f"{model_word(job)} {job.number} of {job.total} (seed {job.seed})"


class TeacherStage:
    """Stage 1 of `run` (a RecipeRun), its record `state`."""

    def __init__(self, run, state):
        self.run, self.state = run, state

    def pending(self) -> list[TeacherJob]:
        """The teachers not yet in the record, in order: family by family, seed by seed (budgets set as they start)."""
        planned = [(family, seed) for family in self.run.recipe.families for seed in self.run.seeds()]
        return self.jobs(planned, len(planned) + len(more_pcfgs(self.run.recipe, self.run.seeds())))

    def jobs(self, teachers: list[tuple[str, int]], total: int, first: int = 1) -> list[TeacherJob]:
        """The jobs of `teachers` ((family, seed), numbered from `first` of `total`) not yet in the record."""
        done = {(t.get("family", "onlstm"), t["seed"]) for t in self.state.teachers}
        families = {f.name: f for f in self.run.families}
        jobs = []
        for number, (name, seed) in enumerate(teachers, first):
            if (name, seed) not in done:
                family = families[name]
                out = family.path(self.run.out, seed)
                ckpt = checkpoint_path(out)
                jobs.append(TeacherJob(family, seed, number, self.run.corpus, self.run.valid, out, None,
                                       ckpt if ckpt.exists() else None, total=total))
        return jobs

    def train(self) -> int:
        """Trains what is left of the stage; the signal that stopped it, else 0. A family that waits for another's
        models (RecipeConfig.focus_pcfgs: the PCFGs for the ON-LSTMs) trains once those have ended, those it is
        focused by on their votes; then, where the stage has time left, more PCFGs (`train_more`)."""
        pending = self.pending()
        later = [job for job in pending if self.waits(job.family)]
        first = [job for job in pending if not self.waits(job.family)]
        stop = self.train_round(first, side_by_side.waves(len(later), self.run.slots()))
        if stop:
            return stop
        if later:
            self.focus(later)
            stop = self.train_round(later)
        return stop or self.train_more()

    def waits(self, family) -> bool:
        """Whether `family`'s models wait for those of the family they train after (and are focused by)."""
        return bool(self.run.recipe.focus_pcfgs and family.trains_after
                    and any(f.name == family.trains_after for f in self.run.families))

    def focus(self, jobs: list[TeacherJob]) -> None:
        """Each job's focus (ModelFamily.focuses_on): the files of the voting models of the family it is focused by."""
        focused = [job for job in jobs if job.family.focuses_on]
        if not focused:
            return
        family = focused[0].family
        by = next(f for f in self.run.families if f.name == family.focuses_on)
        files = self.focus_files(by)
        for job in focused:
            job.focus = files
        self.run.log(f"recipe: the {family.model_words()}s train on the trees that the votes of {len(files)} "
                     f"{by.model_words()}s propose (parse-focusing)" if files else
                     f"recipe: no {by.model_words()} votes, so the {family.model_words()}s train on the text alone")

    def train_more(self) -> int:
        """RecipeConfig.more_pcfgs: the PCFGs that train in the time stage 1 has left once the focused ones have
        ended, in as many rounds as fit, a round only where the time left is at least the longest any focused PCFG
        took (a small text's PCFG stops early, in about that time); the signal that stopped them, else 0."""
        more = more_pcfgs(self.run.recipe, self.run.seeds())
        if not more or self.state.span_parser is not None or self.state.first_round is not None:
            return 0  # a recipe whose span parser has trained keeps its votes
        planned = self.run.teacher_count()
        pending = self.jobs(more, planned + len(more), planned + 1)
        took = [t["seconds"] for t in self.state.teachers if t.get("family") == "pcfg" and t.get("focused_on")]
        left = self.run.clock.stage_one_left(self.state)
        if not pending or not took:
            return 0
        slots = self.run.slots()
        rounds = len(pending) if left is None else int(left // max(took))
        pending = pending[:rounds * slots]
        if not pending:
            self.run.log(f"recipe: stage 1 has {left / 60:.1f} min left, less than a focused PCFG took "
                         f"({max(took) / 60:.1f} min): no more PCFGs")
            return 0
        kinds = [f"{sum(job.family.name == name for job in pending)} {what}"
                 for name, what in (("pcfg-endings", "unfocused reading endings"), ("pcfg", "focused"))
                 if any(job.family.name == name for job in pending)]
        self.run.log(f"recipe: {len(pending)} more PCFGs in the time stage 1 has left"
                     + (f" ({left / 60:.1f} min; a focused PCFG took at most {max(took) / 60:.1f})" if left else "")
                     + f": {', then '.join(kinds)}")
        self.focus(pending)
        return self.train_round(pending)

    def focus_files(self, by) -> tuple:
        """The files of the recorded models of family `by` that vote (a failed run left out): what focuses the
        models of the families that focus on it."""
        theirs = [t for t in self.state.teachers if t.get("family", "onlstm") == by.name]
        voting, _ = voters_by_family(theirs, self.run.recipe.max_ppl_ratio, [by])
        return tuple(self.run.out.with_name(t["path"]) for t in voting)

    def train_round(self, pending: list[TeacherJob], later_rounds: int = 0) -> int:
        """Trains `pending`, side by side where the run allows, with `later_rounds` rounds of the stage left after
        theirs; the signal that stopped it, else 0."""
        if len(pending) > 1 and self.run.slots() > 1:
            return self.side_by_side(pending, later_rounds)
        for k, job in enumerate(pending):
            job.budget = self.budgets(len(pending) - k, later_rounds)[0]
            self.run.log(f"recipe: stage 1 of {self.run.stage_count()}, {teacher_name(job)} → {job.out}"
                         f"{', resumed from its checkpoint' if job.resume else ''}; "
                         f"{self.run.clock.eta_text(self.state, job.number)}")
            outcome = job.family.train(job, self.run.reporter)
            if getattr(self.run.reporter, "live", False):  # its row leaves the display: a finished run's is frozen
                self.run.reporter.end_row()
            if not outcome.interrupted:
                self.record(job, outcome)
            self.run.save(self.state, "language_models")
            if outcome.interrupted:
                return outcome.stop_signal or signal.SIGINT  # a run stopped without naming a signal is stopped too
        return 0

    def budgets(self, models: int, later_rounds: int = 0) -> list:
        """Each of the next `models` models' budget: its own share of the stage, and its round's end."""
        plan = self.run.clock
        return [self.run.budget.part(plan.lm_budget(), until=end)
                for end in plan.lm_deadlines(self.state, models, later_rounds)]

    def record(self, job: TeacherJob, outcome: TeacherRun) -> None:
        if not job.out.exists():
            raise TrainingError(f"the {model_word(job)} of seed {job.seed} saved no model: give it more time")
        entry = {"family": job.family.name, "seed": job.seed, "path": job.out.name, **job.family.record(outcome),
                 "epochs": round(outcome.epochs, 3), "seconds": round(outcome.seconds, 1),
                 **({"focused_on": [path.name for path in job.focus]} if job.focus else {})}
        self.state.teachers.append(entry)
        order = [f.name for f in self.run.families]  # side by side, they end in any order
        self.state.teachers.sort(key=lambda t: (order.index(t.get("family", "onlstm")), t["seed"]))
        early = (f" (stopped early: no better for {outcome.stopped_early} epochs; the time it leaves goes to what "
                 "trains after it)" if outcome.stopped_early else "")
        self.run.log(f"recipe: {teacher_name(job)} done: {outcome.epochs:.2f} epochs in {outcome.seconds / 60:.1f} "
                     f"min, {job.family.health} {rounded(outcome.health)}{early}")

    def side_by_side(self, pending: list[TeacherJob], later_rounds: int = 0) -> int:
        """The stage with one process a model (side_by_side.py); returns the signal that stopped it, else 0."""
        run = self.run
        slots = min(run.slots(), len(pending))
        threads = side_by_side.threads_each(slots, run.train_config.threads)
        for job, budget in zip(pending, self.budgets(len(pending), later_rounds)):
            job.budget, job.threads = budget, threads
        run.log(f"recipe: stage 1 of {run.stage_count()}, {len(pending)} {models_text(pending)}, {slots} at a time side "
                f"by side ({threads} thread{'s' if threads > 1 else ''} each); "
                f"{run.clock.eta_text(self.state, pending[0].number)}")
        failures = []
        progress = StageProgress(run.clock, self.state, run.recipe.progress_every, run.log,
                                 pending[0].total, run.models_word(), run.stage_count())

        def started(job):
            run.log(f"recipe: {teacher_name(job)} → {job.out}{', resumed from its checkpoint' if job.resume else ''}; "
                    f"its lines start [{job.label}]; {run.clock.eta_text(self.state, job.number)}")

        def finished(job, outcome):  # into the record as each model ends, so a kill -9 later loses none of it
            if "error" in outcome:
                failures.append(f"the {model_word(job)} of seed {job.seed} failed: {outcome['error']}")
            elif not outcome["interrupted"]:
                try:
                    self.record(job, TeacherRun(**outcome))
                except TrainingError as e:  # said once the others have stopped
                    failures.append(str(e))
                    outcome["error"] = str(e)
            run.save(self.state, "language_models")

        try:
            stop = side_by_side.train_side_by_side(pending, slots, started, finished, progress.tick,
                                                   live=getattr(run.reporter, "live", False) and run.reporter)
        finally:
            run.save(self.state, "language_models")
        if failures:
            raise TrainingError("; ".join(failures) + " (rerun the same command to go on from the checkpoints)")
        return stop


def model_word(job: TeacherJob) -> str:
    return job.family.model_words()


def models_text(jobs: list[TeacherJob]) -> str:
    names = {job.family.name for job in jobs}
    return "language models" if names == {"onlstm"} else "models (" + ", ".join(sorted(names)) + ")"

