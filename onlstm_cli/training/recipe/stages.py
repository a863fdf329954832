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


def teacher_name(job: TeacherJob) -> str:
    """How the log names a teacher: "language model 2 of 4 (seed 1112)", another family's by its name."""
    return f"{model_word(job)} {job.number} of {job.total} (seed {job.seed})"


class TeacherStage:
    """Stage 1 of `run` (a RecipeRun), its record `state`."""

    def __init__(self, run, state):
        self.run, self.state = run, state

    def pending(self) -> list[TeacherJob]:
        """The teachers not yet in the record, in order: family by family, seed by seed (budgets set as they start)."""
        done = {(t.get("family", "onlstm"), t["seed"]) for t in self.state.teachers}
        everything = [(family, seed) for family in self.run.families for seed in self.run.seeds()]
        jobs = []
        for number, (family, seed) in enumerate(everything, 1):
            if (family.name, seed) not in done:
                out = family.path(self.run.out, seed)
                ckpt = checkpoint_path(out)
                jobs.append(TeacherJob(family, seed, number, self.run.corpus, self.run.valid, out, None,
                                       ckpt if ckpt.exists() else None, total=len(everything)))
        return jobs

    def train(self) -> int:
        """Trains what is left of the stage; the signal that stopped it, else 0. A family focused by another's models
        (RecipeConfig.focus_pcfgs: the PCFGs by the ON-LSTMs) trains once those have ended, on their votes."""
        pending = self.pending()
        later = [job for job in pending if self.focused(job.family)]
        first = [job for job in pending if not self.focused(job.family)]
        stop = self.train_round(first, side_by_side.waves(len(later), self.run.slots()))
        if stop or not later:
            return stop
        family = later[0].family
        by = next(f for f in self.run.families if f.name == family.focuses_on)
        focus = self.focus_files(by)
        for job in later:
            job.focus = focus
        self.run.log(f"recipe: the {family.model_words()}s train on the trees that the votes of {len(focus)} "
                     f"{by.model_words()}s propose (parse-focusing)" if focus else
                     f"recipe: no {by.model_words()} votes, so the {family.model_words()}s train on the text alone")
        return self.train_round(later)

    def focused(self, family) -> bool:
        """Whether `family`'s models wait for those of the family they focus on, and train on their votes."""
        return bool(self.run.recipe.focus_pcfgs and family.focuses_on
                    and any(f.name == family.focuses_on for f in self.run.families))

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
            self.run.log(f"recipe: stage 1 of 2, {teacher_name(job)} → {job.out}"
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
        run.log(f"recipe: stage 1 of 2, {len(pending)} {models_text(pending)}, {slots} at a time side by side "
                f"({threads} thread{'s' if threads > 1 else ''} each); {run.clock.eta_text(self.state, pending[0].number)}")
        failures = []
        progress = StageProgress(run.clock, self.state, run.recipe.progress_every, run.log)

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

