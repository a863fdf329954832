"""`onlstm train CORPUS --seeds K`: the self-training recipe in one command, resumable at any point.

    stage 1   K models of each model family of RecipeConfig.families (training/families.py; by default K ON-LSTM
              language models), seeds S, S+1, …, S+K−1, each trained as its family does (a language model as a
              plain `onlstm train` would, with the same options), written beside --out (OUT.lm-seedS.onlstm, with
              .ckpt and .tokens; recipe/stages.py)
    stage 2   a span parser trained on the votes of their trees (student/train.py), written to --out; a model
              whose health (validation perplexity) is far above its family's median (a failed run) does not vote
    stage 3   where the PCFGs are focused by the ON-LSTMs: a second round, a span parser on the votes of stage 2's
              (then written beside --out, OUT.round1.onlstm, in two thirds of its time) and of the PCFGs', written
              to --out (recipe/second_round.py)

One seed's trees are a draw (issue 22: 50.5, 49.3 and 38.2 sentence F1 for three English seeds); the votes
of several are not. The seeds train side by side, one process each with an equal share of the threads
(recipe/side_by_side.py), all at once where that is at most two a core (no core waits for a last round), else in
even rounds, and one a thread where --threads holds the run below the cores; with --side-by-side 1 they run
one after another in this process.

Time: --time-budget is for the whole recipe, over all its runs (recipe/budget.py). The end: the span parser's
trees of the validation text are compared with right- and left-branching trees, with a warning where they
are nearly those (recipe/voters.py); the files only a resume needs are removed unless --keep-intermediate
(recipe/files.py); the last line says what is left beside --out.

OUT.recipe.json records the options (rerunning the command with other options is refused, except a larger
--time-budget, which extends the recipe: see `RecipeRun.extend`), the stages finished, each teacher's
family, seed and health, and the stage times (recipe/record.py); the final file's span-parser meta keeps the same
record. Rerunning the same command (or adding --resume) picks the recipe up where it stopped: a finished
language model is never trained again (unless a larger budget extends it), an unfinished one resumes from its
checkpoint, the span parser from its own. Every file is written atomically, so kill -9 at any moment loses
at most the work since the last checkpoint. Before anything is written, each file the recipe writes or removes
is checked against its inputs (recipe/files.recipe_outputs), and while it runs its teachers' files and the
names its files share are locked (recipe_locks), so that no other run writes over them.
"""
from __future__ import annotations

import contextlib
import json
import signal
import threading
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from onlstm_cli.config import AUTO, RecipeConfig, SelfTrainConfig, TrainConfig
from onlstm_cli.errors import OutputInUse, TrainingError
from onlstm_cli.files import check_outputs, check_readable_file, output_lock
from onlstm_cli.training.families import FAMILIES
from onlstm_cli.training.recipe import second_round, side_by_side
from onlstm_cli.training.run.clock import Budget
from onlstm_cli.training.recipe.files import (check_names_free, first_round_path, held_out_split, leave_finished,
                                              lm_path, recipe_outputs, recipe_seeds, recipe_stem, utf8_lines)
from onlstm_cli.training.recipe.families_auto import auto_families, corpus_words
from onlstm_cli.training.recipe.record import (MAX_RECORD_BYTES, RecipeResult, RecipeState, as_recorded, load_state,
                                               record_in_file, recorded_families, rounded, state_path)
from onlstm_cli.training.recipe.budget import StagePlan
from onlstm_cli.training.recipe.stages import TeacherStage, more_pcfgs
from onlstm_cli.training.recipe.voters import (branching_agreement, branching_warning, validation_votes, vote_rule,
                                              voters_by_family, voting_teachers, weight_text)
from onlstm_cli.training.run.files import check_destination, checkpoint_path
from onlstm_cli.training.student.left_out import RECORD_KEYS

# what callers and tests import from here
__all__ = ["MAX_RECORD_BYTES", "RecipeResult", "RecipeRun", "RecipeState", "held_out_split", "lm_path",
           "run_recipe", "state_path", "voting_teachers"]
# RecipeConfig's fields that say how a recipe runs and ends, not what it trains: a rerun may change them
# (the line of --families auto too: the record keeps the families it chose)
RUN_ONLY = ("side_by_side", "progress_every", "keep_intermediate", "warn_branching_above", "pcfg_below_words_per_hour")


class Interrupted(Exception):
    def __init__(self, signum: int):
        super().__init__(f"signal {signum}")
        self.signal = signum


@contextlib.contextmanager
def signals_interrupt():
    """Ctrl-C and SIGTERM between the stages (loading, parsing, files) end the recipe with its record saved;
    within a stage, training's own handlers take over and checkpoint first."""
    def stop(signum, frame):
        raise Interrupted(signum)
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@dataclass
class RecipeRun:
    """Everything `train --seeds K` was given; `run()` does (or finishes) the recipe."""
    corpus: Path
    out: Path
    valid: Path
    model_config: dict
    train_config: TrainConfig
    recipe: RecipeConfig
    self_train: SelfTrainConfig
    lm_options: dict                  # the rest of train_model's arguments (tokenizer, lang, vocabulary, …)
    reporter: object
    log: object = print
    held_out: bool = False            # the validation text is the recipe's own split of the corpus
    budget: Budget | None = None      # the recipe's time, from the command's start; None: --time-budget from now
    families_note: str | None = None  # why --families auto chose the families, said once the record is read
    clock: StagePlan = field(init=False)
    families: list = field(init=False)  # the families of RecipeConfig.families, each made from this run's options

    def __post_init__(self):
        self.budget = self.budget or Budget(self.train_config.time_budget)
        more = [name for name, _ in more_pcfgs(self.recipe, self.seeds()) if name not in self.recipe.families]
        self.families = [FAMILIES[name](self) for name in dict.fromkeys([*self.recipe.families, *more])]
        self.clock = StagePlan(self.budget, self.recipe.lm_share, self.teacher_count(), self.slots())

    def teacher_count(self) -> int:
        """The teachers the stage's plan counts: K of each family; the more PCFGs (stages.more_pcfgs) fill the time
        the focused ones leave."""
        return len(self.recipe.families) * self.recipe.seeds

    def family_of(self, teacher: dict):
        """The family of a teacher in the record (an ON-LSTM where the record predates families)."""
        return next(f for f in self.families if f.name == teacher.get("family", "onlstm"))

    def teacher_paths(self) -> list[Path]:
        return [path for _, path in teacher_files(self.out, self.recipe, self.seeds())]

    def options(self) -> dict:
        """The record a rerun must match: files, sizes, every option that changes what is trained."""
        corpus = Path(self.corpus)
        lm = {k: (v.to_dict() if hasattr(v, "to_dict") else v) for k, v in self.lm_options.items()}
        return json.loads(json.dumps({
            "corpus": str(corpus.resolve()), "corpus_bytes": corpus.stat().st_size,
            "valid": str(Path(self.valid).resolve()), "model": self.model_config,
            "train": {k: v for k, v in asdict(self.train_config).items() if k not in ("threads", "device")},
            "recipe": {k: v for k, v in asdict(self.recipe).items() if k not in RUN_ONLY},
            "span_parser": {k: v for k, v in asdict(self.self_train).items() if k != "checkpoint_every"},
            "lm": lm}, default=str))

    def seeds(self) -> list[int]:
        return recipe_seeds(self.train_config.seed, self.recipe.seeds)

    def slots(self) -> int:
        """Language models trained at once."""
        return side_by_side.slots(self.teacher_count(), self.train_config.threads, self.train_config.device,
                                  self.recipe.side_by_side)

    def save(self, state: RecipeState, stage: str) -> None:
        """The record, with the time since the last count in `stage`'s."""
        self.clock.count(state, stage)
        state.save(self.out)

    def run(self) -> RecipeResult:
        state, extended_from = load_state(self.out, self.options())
        self.recipe, self.self_train = as_recorded(state.options, self.recipe, self.self_train)
        if self.families_note:
            self.log(self.families_note)
        if extended_from is not None:
            self.extend(state, extended_from)
        try:
            with signals_interrupt():
                return self.stages(state)
        except Interrupted as stop:  # between the stages' own signal handling: nothing to save but the record
            self.save(state, "span_parser" if state.teachers else "language_models")
            return RecipeResult(self.out, state, interrupted=True, stop_signal=stop.signal)

    def stages(self, state: RecipeState) -> RecipeResult:
        stop = TeacherStage(self, state).train()
        if stop:
            return RecipeResult(self.out, state, interrupted=True, stop_signal=stop)
        votes = None
        if state.span_parser is None:
            two_rounds = second_round.follows(self, state)
            if two_rounds and state.first_round is None:
                result = self.train_span_parser(state, first_round_path(self.out))
                if result.interrupted:
                    return RecipeResult(self.out, state, interrupted=True, stop_signal=result.stop_signal)
            result = second_round.train(self, state) if two_rounds else self.train_span_parser(state, self.out)
            if result.interrupted:
                return RecipeResult(self.out, state, interrupted=True, stop_signal=result.stop_signal)
            votes = result.votes
        elif "branching_agreement" in state.span_parser:  # the last of its checks is recorded
            self.log(f"recipe: already complete ({self.out}); nothing to do")
        if "branching_agreement" not in state.span_parser:  # a run stopped before its checks does them now
            self.check(state, votes)
        first = [first_round_path(self.out)] if state.first_round is not None else []  # a teacher of --out's
        left = leave_finished(self.out, self.teacher_paths() + first,
                              [self.out.with_name(t["path"]) for t in state.teachers] + first,
                              state_path(self.out), self.held_out, self.recipe.keep_intermediate)
        self.save(state, "span_parser")
        return RecipeResult(self.out, state, seconds=sum(state.stage_seconds.values()), left=left)

    def extend(self, state: RecipeState, old_budget: float) -> None:
        """A larger --time-budget on a recorded recipe: the language models that stopped on the old budget
        (short of --epochs) go on from their checkpoints with their new share, and the span parser, whose
        votes they change, trains again from the start (its file stays until the new one replaces it).
        Models that ran all their epochs keep their record; if all did, nothing trains again. A finished
        recipe's checkpoints are gone unless it kept them (--keep-intermediate): then nothing can go on."""
        epochs = self.train_config.epochs
        short = [t for t in state.teachers if t["epochs"] < epochs]
        going_on = [t for t in short if checkpoint_path(self.family_of(t).path(self.out, t["seed"])).exists()]
        new = self.train_config.time_budget
        state.options["train"]["time_budget"] = new  # the record's budget is now this one
        said = "no limit" if new is None else f"{new / 60:.1f} min"
        if going_on:
            state.teachers = [t for t in state.teachers if t not in going_on]
            state.span_parser = state.first_round = None
            for old in (self.out, first_round_path(self.out)):  # the old votes' checkpoints: each starts anew
                with contextlib.suppress(FileNotFoundError):
                    checkpoint_path(old).unlink()
        seeds = f"seed{'s' if len(going_on) > 1 else ''} " + ", ".join(str(t["seed"]) for t in going_on)
        what = (f"the language models of {seeds} go on from their checkpoints, then the span parser trains again "
                "on their votes" if going_on else
                "their checkpoints were removed when the recipe finished (--keep-intermediate keeps them), so "
                "nothing trains again: a new recipe needs another --out" if short else
                "every language model ran its --epochs; nothing to train again")
        self.log(f"recipe: --time-budget raised from {old_budget / 60:.1f} min to {said}: {what}")
        state.save(self.out)

    def train_span_parser(self, state: RecipeState, out: Path):
        """Stage 2: the span parser on the votes of the teachers, written to `out`: --out, or beside it where a
        second round follows (recipe/second_round.py), which leaves that round its share of the time."""
        from onlstm_cli.training.student.train import checkpoint_seconds, self_train
        first_of_two = out != self.out
        voting, left_out = self.voters(state)
        for teacher in state.teachers:
            teacher["votes"] = teacher in voting
        for teacher, family, median in left_out:
            self.log(f"recipe: the {family.model_words()} of seed {teacher['seed']} does not vote: its {family.health} "
                     f"{teacher[family.health_key]} is more than {self.recipe.max_ppl_ratio:g} × the models' median "
                     f"{median:.2f} (a failed run; --max-ppl-ratio 0 lets every model vote)")
        teachers = self.teachers(voting)
        ckpt = checkpoint_path(out)
        resume = ckpt if ckpt.exists() else None
        budget = self.clock.span_parser_budget(state, checkpoint_seconds(resume),
                                               second_round.reserve(self.clock, state) if first_of_two else 0.0)
        self.log(f"recipe: stage 2 of {self.stage_count(state)}, the span parser on the votes of {len(teachers)} "
                 f"{self.models_word()} (branching voter {weight_text(self.self_train.right_branching)}) → {out}"
                 f"{', resumed from its checkpoint' if resume else ''}"
                 + (f"; the recipe's time left {budget / 60:.1f} min" if budget is not None else ""))
        result = self_train(self.corpus, out, teachers, self.valid, None, self.span_parser_training(budget),
                            self.budget.part(budget), resume, log=self.log, recipe=self.recipe_record(state))
        if not result.interrupted:
            if first_of_two:
                state.first_round = {"path": out.name, **self.span_parser_record(result)}
            else:
                state.span_parser = self.span_parser_record(result)
            voting = self.without_left_out(voting, teachers, result.votes.left_out() if result.votes else [])
            for teacher, agreement in zip(voting, result.teacher_agreement or []):
                teacher["agreement"] = agreement
        self.save(state, "span_parser")
        return result

    def recipe_record(self, state: RecipeState) -> dict:
        """The recipe as a span parser's file keeps it (its meta), where `info` reads it; the record's own lists."""
        voting = [t for t in state.teachers if t.get("votes", True) is not False]
        language_models = sum(t.get("family", "onlstm") == "onlstm" for t in voting)
        votes = vote_rule(self.recipe, self.self_train.right_branching, language_models, len(voting) - language_models)
        return {"seeds": self.seeds(), "teachers": state.teachers, "votes": votes,
                "time_budget": self.train_config.time_budget, "lm_share": self.recipe.lm_share,
                "stage_seconds": state.stage_seconds}

    @staticmethod
    def span_parser_record(result) -> dict:
        """What the record keeps of a span parser's finished run (student/train.SelfTrainResult)."""
        votes = result.votes
        return {"epochs": result.epochs_done, "valid_loss": rounded(result.best_valid_loss, 5),
                "seconds": round(result.seconds, 1), "right_branching": result.right_branching,
                "left_branching": result.left_branching, **({"split": votes.split} if votes and votes.split else {}),
                **({"lexical_agreement": votes.lexical} if votes and votes.lexical is not None else {})}

    def voters(self, state: RecipeState) -> tuple[list[dict], list[tuple]]:
        """The teachers that vote (by family, a failed run left out) and (teacher, family, median) for each left
        out; a teacher the span parser's run left out (a branching rule, far apart) is in neither: it is recorded so."""
        voting, left_out = voters_by_family(state.teachers, self.recipe.max_ppl_ratio, self.families)
        return [t for t in voting if not any(key in t for key in RECORD_KEYS)], left_out

    @staticmethod
    def without_left_out(voting: list[dict], loaded: list, left_out: list) -> list[dict]:
        """The record's voting teachers less those the votes left out (Votes.left_out), each of those recorded: it
        does not vote, and why."""
        why = {c.teacher: c for c in left_out}
        for teacher, model in zip(list(voting), loaded):
            rule = why.get(model.name)
            if rule is not None:
                teacher["votes"] = False
                teacher.update(rule.record())
                voting.remove(teacher)
        return voting

    def teachers(self, voting: list[dict]) -> list:
        """The voting teachers of the record, each loaded by its family."""
        return [self.family_of(t).load(self.out.with_name(t["path"]), self.self_train) for t in voting]

    def span_parser_training(self, budget: float | None) -> SelfTrainConfig:
        """The span parser's options: until the recipe's time is spent, where it has a budget and the recipe says so
        (its epoch of lowest validation loss is kept whenever it stops); else its own epochs, and no more than
        --epochs (the most epochs of any model of the recipe: `--epochs 2` is a quick trial throughout)."""
        if budget is None or not self.recipe.span_parser_until_budget:
            return replace(self.self_train, epochs=min(self.self_train.epochs, self.train_config.epochs))
        return replace(self.self_train, epochs=UNTIL_BUDGET, patience=UNTIL_BUDGET)

    def stage_count(self, state: RecipeState | None = None) -> int:
        """3 where a second round follows (second_round.follows); with no state (in stage 1), where one is planned."""
        return 3 if (second_round.follows(self, state) if state else second_round.planned(self.recipe)) else 2

    def models_word(self) -> str:
        return "language models" if tuple(self.recipe.families) == ("onlstm",) else "models"

    def check(self, state: RecipeState, votes) -> None:
        """After the span parser, each recorded as it ends (a rerun after an interruption does what is left): the
        student against its teachers' consensus on the validation text (the votes it learned), the consensus
        parser shipped instead where the student is the worse (student/check.py); then the student's agreement
        with right- and left-branching trees, into the record and the file's meta, with a warning where it is
        nearly one of them. `votes`: None where the span parser trained in an earlier run."""
        from onlstm_cli.training.student.check import check_student
        if "student_check" not in state.span_parser:
            voting, _ = self.voters(state)
            if votes is None:
                self.log("recipe: the span parser has trained but was not checked: the teachers parse the "
                         "validation text for its check")
                votes = (second_round.validation_votes(self, state) if state.first_round is not None else
                         validation_votes(self.out, self.teachers(voting), self.valid, self.self_train))
            # the consensus parser is one file: the language models' (a second round's teachers are not one)
            one_file = state.first_round is None and all(self.family_of(t).ensembles for t in voting)
            check = check_student(self.out, [self.out.with_name(t["path"]) for t in voting] if one_file else None,
                                  votes, self.log)
            state.span_parser["student_check"] = None if check is None else asdict(check)  # None: no sentence to check
            if check is not None:
                self.log(f"recipe: {check.text()}")
            self.save(state, "span_parser")
        agreement = branching_agreement(self.out, self.valid)
        state.span_parser["branching_agreement"] = agreement
        record_in_file(self.out, agreement, state.teachers)
        if agreement:
            self.log(f"recipe: the span parser's trees of the validation text agree {agreement['right']:.1f} with "
                     f"right-branching trees, {agreement['left']:.1f} with left-branching ones (sentence F1)")
        warning = branching_warning(agreement, self.recipe.warn_branching_above)
        if warning:
            self.log(f"recipe: {warning}")
        self.save(state, "span_parser")


UNTIL_BUDGET = 10 ** 9  # epochs and patience of a span parser that trains until the recipe's time is spent


def run_recipe(corpus, out, valid=None, model_config: dict | None = None, train_config: TrainConfig | None = None,
               lm_options: dict | None = None, recipe: RecipeConfig | None = None,
               self_train: SelfTrainConfig | None = None, resume=None, reporter=None, log=print,
               budget: Budget | None = None) -> RecipeResult:
    """The recipe from Python, as `onlstm train CORPUS --seeds K` runs it: `recipe` (RecipeConfig) says how many
    seeds of which families, and how they vote; `model_config`, `train_config` and `lm_options` (train_model's
    other arguments: tokenizer, lang, vocabulary, …) are the language models' options, `self_train` the span
    parser's. Without `valid`, every 20th line of the corpus is held out (the two parts are written beside `out`).
    `resume`: the recipe must exist already (its record, OUT.recipe.json, or any file of it); without it a rerun
    resumes all the same. `budget` (run/clock.py): the recipe's time, counted from its start (the `onlstm` command
    gives its own, so that its start-up counts); None: `train_config.time_budget` from now."""
    from onlstm_cli.training.lm.train import LineReporter
    train_config, recipe = train_config or TrainConfig(), (recipe or RecipeConfig()).check()
    self_train = (self_train or SelfTrainConfig(seed=train_config.seed)).check()  # before hours of training
    budget = budget or Budget(train_config.time_budget)
    train_config = replace(train_config, time_budget=budget.seconds)  # the record's: the one budget's seconds
    corpus, out = Path(corpus), Path(out)
    families_note = None
    if recipe.families == AUTO:
        families, families_note = chosen_families(corpus, out, recipe, budget)
        recipe = replace(recipe, families=families)
    teachers = teacher_files(out, recipe, recipe_seeds(train_config.seed, recipe.seeds))  # the families are known
    for name in recipe.families:  # each family's options, before anything is read or written
        FAMILIES[name].check(dict(model_config or {}), train_config, dict(lm_options or {}))
    check_readable_file(corpus, "corpus", TrainingError)  # missing, a folder, a device: each said as what it is
    if resume is not None and not state_path(out).exists():
        raise TrainingError(f"no recipe to resume beside {out} ({state_path(out)} is missing): run without --resume")
    if not out.is_dir() and not out.parent.is_dir():  # a typo in a path, not a folder to make for hours of work
        raise TrainingError(f"--out {out}: its folder does not exist")
    check_destination(out)  # a directory, a folder that cannot be written
    held_out = valid is None
    teachers += [("the first span parser", first_round_path(out))]  # written where a second round follows it
    check_outputs([("the corpus", corpus), ("--valid", valid)], recipe_outputs(out, teachers, held_out))
    with recipe_locks(out, teachers):
        check_names_free(out)
        lines = sum(1 for line in utf8_lines(corpus) if line.strip())
        if lines < recipe.min_lines:
            raise TrainingError(f"{corpus} has {lines} line{'' if lines == 1 else 's'}: --seeds needs at least "
                                f"{recipe.min_lines}, to train {recipe.seeds} models and validate them")
        if held_out:
            corpus, valid = held_out_split(corpus, out)
        config = replace(self_train, right_branching=recipe.right_branching, extra_layers=recipe.extra_layers)
        run = RecipeRun(corpus, out, Path(valid), dict(model_config or {}), train_config, recipe, config,
                        dict(lm_options or {}), reporter or LineReporter(), log, held_out, budget, families_note)
        return run.run()


def chosen_families(corpus: Path, out: Path, recipe: RecipeConfig, budget: Budget) -> tuple[tuple, str | None]:
    """--families auto: (the families, the line that says why) from the text's words an hour; as the recipe
    recorded beside `out` chose where there is one (no line then)."""
    recorded = recorded_families(out)
    if recorded is not None:
        return recorded, None
    check_readable_file(corpus, "corpus", TrainingError)
    families, why = auto_families(corpus_words(corpus), budget.seconds, recipe.pcfg_below_words_per_hour)
    return families, f"recipe: families {','.join(families)} (--families {AUTO}: {why})"


def teacher_files(out: Path, recipe: RecipeConfig, seeds: list[int]) -> list[tuple[str, Path]]:
    """Each teacher the recipe trains, as (what the user calls it, its model file): family by family, seed by seed."""
    unknown = [name for name in recipe.families if name not in FAMILIES]
    if unknown:
        raise TrainingError(f"no model family {', '.join(unknown)}: the families are {', '.join(FAMILIES)}")
    teachers = [(name, seed) for name in recipe.families for seed in seeds] + more_pcfgs(recipe, seeds)
    return [(f"the {FAMILIES[name].model_words()} of seed {seed}", FAMILIES[name].path(out, seed))
            for name, seed in teachers]


@contextlib.contextmanager
def recipe_locks(out: Path, teachers: list[tuple[str, Path]]):
    """While the recipe runs: its stem's lock (no other recipe whose files have the same names runs at once) and
    each teacher's (no `train -o OUT.lm-seedS.onlstm` writes one while the recipe trains it)."""
    with contextlib.ExitStack() as held:
        try:
            held.enter_context(output_lock(recipe_stem(out)))
        except OutputInUse:
            raise OutputInUse(f"another recipe whose files are named as this one's ({out.stem}.lm-seedS.onlstm, …) is "
                              "running beside --out: wait for it to end, or give --out a name of its own") from None
        for what, path in teachers:
            held.enter_context(output_lock(path, what))
        yield
