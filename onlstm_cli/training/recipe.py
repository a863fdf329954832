"""`onlstm train CORPUS --seeds K`: the self-training recipe in one command, resumable at any point.

    stage 1   K ON-LSTM language models, seeds S, S+1, …, S+K−1, each trained as a plain `onlstm train`
              would (the same options), written beside --out as OUT.lm-seedS.onlstm (with .ckpt and .tokens)
    stage 2   a span parser trained on the votes of their trees (self_training.py), written to --out; a model
              whose validation perplexity is far above the others' (a failed run) does not vote

One seed's trees are a draw (issue 22: 50.5, 49.3 and 38.2 sentence F1 for three English seeds); the votes
of several are not. The seeds train side by side, one process each with an equal share of the threads
(side_by_side.py), as many at once as there are threads (one a core by default); with one thread, or
--side-by-side 1, they run one after another in this process.

Time: --time-budget B is for the whole recipe. The language models get `lm_share` × B; the models that train
at once share it out in rounds, so each gets lm_share × B / ⌈K / side-by-side⌉ (counted over a model's resumed
runs, as plain training counts it); the span parser stage gets the rest, the teachers' parse of the text
included.

OUT.recipe.json records the options (rerunning the command with other options is refused, except a larger
--time-budget, which extends the recipe: see `RecipeRun.extend`), the stages finished, each teacher's
validation perplexity and the stage times; the final file's span-parser meta keeps the same record.
Rerunning the same command (or adding --resume) picks the recipe up where it stopped: a finished language
model is never trained again (unless a larger budget extends it), an unfinished one resumes from its
checkpoint, the span parser from its own. Every file is written atomically, so kill -9 at any moment loses
at most the work since the last checkpoint.
"""
from __future__ import annotations

import contextlib
import json
import math
import signal
import statistics
import threading
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from onlstm_cli.config import AUTO, RecipeConfig, SelfTrainConfig, SpanParserConfig, TrainConfig, voter_weight
from onlstm_cli.errors import TrainingError
from onlstm_cli.modelfile import atomic_file
from onlstm_cli.training.run_checks import check_destination, checkpoint_path
from onlstm_cli.training import side_by_side

RECIPE_VERSION = 1
MAX_RECORD_BYTES = 16 << 20  # a record is a few kB a seed: anything far larger is not one, and is not read


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


def lm_path(out: Path, seed: int) -> Path:
    """Where the language model of one seed goes: beside --out, named for what it is."""
    return out.with_name(f"{out.stem}.lm-seed{seed}.onlstm")


def state_path(out: Path) -> Path:
    return Path(str(out) + ".recipe.json")


@dataclass
class RecipeState:
    options: dict                                      # what a rerun must repeat
    teachers: list = field(default_factory=list)       # per finished language model: seed, path, ppl, seconds
    span_parser: dict | None = None                    # once the span parser stage has finished
    stage_seconds: dict = field(default_factory=dict)  # wall time per stage, over all runs

    def save(self, out: Path) -> None:
        with atomic_file(state_path(out), "w", refuse_symlink=True) as f:
            json.dump({"version": RECIPE_VERSION, **asdict(self)}, f, indent=1)


def load_state(out: Path, options: dict) -> tuple[RecipeState, float | None]:
    """The recipe recorded beside `out`, or a fresh one; a record of other options is refused, except a
    larger --time-budget, which extends the recipe (`RecipeRun.extend`): (state, the budget it recorded)
    then, else (state, None)."""
    path = state_path(out)
    if not path.exists():
        return RecipeState(options), None
    try:
        size = path.stat().st_size
        if size > MAX_RECORD_BYTES:
            raise ValueError(f"{size:,} bytes, more than a record's {MAX_RECORD_BYTES:,}")
        data = json.loads(path.read_text(encoding="utf-8"))
        state = RecipeState(data["options"], data["teachers"], data["span_parser"], data["stage_seconds"])
        for section in ("recipe", "span_parser"):  # the option's name until teachers could vote with layers below
            if "layers_above" in state.options[section]:
                state.options[section]["extra_layers"] = state.options[section].pop("layers_above")
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise TrainingError(f"{path} is not a recipe record ({e}); remove it to start the recipe anew") from None
    extended_from = None
    for key, recorded, given in differences(state.options, options):
        if key == "train.time_budget" and recorded is not None and (given is None or given > recorded):
            extended_from = recorded
            continue
        hint = " (a recipe's --time-budget can be raised, not lowered)" if key == "train.time_budget" else ""
        raise TrainingError(f"{path} records a recipe with {key} = {recorded!r}, this command has {given!r}{hint}: "
                            "rerun it with the recipe's options, or use another --out")
    return state, extended_from


def differences(recorded: dict, given: dict, prefix: str = ""):
    """(key, recorded, given) for each option that differs; an option the record lacks was added to onlstm
    after the recipe started, with a default that keeps the old behaviour, so it does not count."""
    for key in sorted(recorded):
        name = f"{prefix}{key}"
        if isinstance(recorded[key], dict) and isinstance(given.get(key), dict):
            yield from differences(recorded[key], given[key], f"{name}.")
        elif recorded[key] != given.get(key):
            yield name, recorded[key], given.get(key)


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

    def options(self) -> dict:
        """The record a rerun must match: files, sizes, every option that changes what is trained."""
        corpus = Path(self.corpus)
        lm = {k: (v.to_dict() if hasattr(v, "to_dict") else v) for k, v in self.lm_options.items()}
        return json.loads(json.dumps({
            "corpus": str(corpus.resolve()), "corpus_bytes": corpus.stat().st_size,
            "valid": str(Path(self.valid).resolve()), "model": self.model_config,
            "train": {k: v for k, v in asdict(self.train_config).items() if k not in ("threads", "device")},
            "recipe": {k: v for k, v in asdict(self.recipe).items()
                       if k not in ("side_by_side", "progress_every")},  # how it runs, not what is trained
            "span_parser": {k: v for k, v in asdict(self.self_train).items() if k != "checkpoint_every"},
            "lm": lm}, default=str))

    def seeds(self) -> list[int]:
        return [self.train_config.seed + k for k in range(self.recipe.seeds)]

    def slots(self) -> int:
        """Language models trained at once."""
        return side_by_side.slots(self.recipe.seeds, self.train_config.threads, self.train_config.device,
                                  self.recipe.side_by_side)

    def budgets(self) -> tuple[float | None, float | None]:
        """(each language model's, the span parser stage's) share of the time budget."""
        total = self.train_config.time_budget
        if total is None:
            return None, None
        rounds = side_by_side.waves(self.recipe.seeds, self.slots())
        return total * self.recipe.lm_share / rounds, total * (1 - self.recipe.lm_share)

    def run(self) -> "RecipeResult":
        state, extended_from = load_state(self.out, self.options())
        if "extra_layers" not in state.options["recipe"]:  # recorded before teachers voted with several layers
            self.recipe = replace(self.recipe, extra_layers=0)
            self.self_train = replace(self.self_train, extra_layers=0)
        if "max_ppl_ratio" not in state.options["recipe"]:  # recorded before failed runs were left out of the vote
            self.recipe = replace(self.recipe, max_ppl_ratio=0.0)
        if extended_from is not None:
            self.extend(state, extended_from)
        try:
            with signals_interrupt():
                return self.stages(state)
        except Interrupted as stop:  # between the stages' own signal handling: nothing to save but the record
            state.save(self.out)
            return RecipeResult(self.out, state, interrupted=True, stop_signal=stop.signal)

    def stages(self, state: RecipeState) -> "RecipeResult":
        done = {t["seed"] for t in state.teachers}
        started = time.monotonic()
        pending = [(number, seed) for number, seed in enumerate(self.seeds(), 1) if seed not in done]
        if len(pending) > 1 and self.slots() > 1:
            stop = self.train_language_models_side_by_side(state, pending)
            if stop:
                return RecipeResult(self.out, state, interrupted=True, stop_signal=stop)
        else:
            for number, seed in pending:
                result = self.train_language_model(state, number, seed)
                if result.interrupted:
                    return RecipeResult(self.out, state, interrupted=True, stop_signal=result.stop_signal)
        if state.span_parser is None:
            result = self.train_span_parser(state)
            if result.interrupted:
                return RecipeResult(self.out, state, interrupted=True, stop_signal=result.stop_signal)
        else:
            self.log(f"recipe: already complete ({self.out}); nothing to do")
        return RecipeResult(self.out, state, seconds=time.monotonic() - started)

    def extend(self, state: RecipeState, old_budget: float) -> None:
        """A larger --time-budget on a recorded recipe: the language models that stopped on the old budget
        (short of --epochs) go on from their checkpoints with their new share, and the span parser, whose
        votes they change, trains again from the start (its file stays until the new one replaces it).
        Models that ran all their epochs keep their record; if all did, nothing trains again."""
        epochs = self.train_config.epochs
        going_on = [t for t in state.teachers
                    if t["epochs"] < epochs and checkpoint_path(lm_path(self.out, t["seed"])).exists()]
        new = self.train_config.time_budget
        state.options["train"]["time_budget"] = new  # the record's budget is now this one
        said = "no limit" if new is None else f"{new / 60:.1f} min"
        if going_on:
            state.teachers = [t for t in state.teachers if t not in going_on]
            state.span_parser = None
            with contextlib.suppress(FileNotFoundError):
                checkpoint_path(self.out).unlink()  # the old votes' checkpoint: the span parser starts anew
        seeds = f"seed{'s' if len(going_on) > 1 else ''} " + ", ".join(str(t["seed"]) for t in going_on)
        what = (f"the language models of {seeds} go on from their checkpoints, then the span parser trains again "
                "on their votes" if going_on else "every language model ran its --epochs; nothing to train again")
        self.log(f"recipe: --time-budget raised from {old_budget / 60:.1f} min to {said}: {what}")
        state.save(self.out)

    def train_language_model(self, state: RecipeState, number: int, seed: int):
        from onlstm_cli.training.train import train_model
        lm_budget, _ = self.budgets()
        path = lm_path(self.out, seed)
        ckpt = checkpoint_path(path)
        resume = ckpt if ckpt.exists() else None
        self.log(f"recipe: stage 1 of 2, language model {number} of {self.recipe.seeds} (seed {seed}) → {path}"
                 f"{', resumed from its checkpoint' if resume else ''}; {self.eta_text(state, number)}")
        config = replace(self.train_config, seed=seed, time_budget=lm_budget)
        before = time.monotonic()
        result = train_model(self.corpus, path, dict(self.model_config), config, valid=self.valid,
                             resume=resume, reporter=self.reporter, **self.lm_options)
        state.stage_seconds["language_models"] = state.stage_seconds.get("language_models", 0.0) + \
            time.monotonic() - before
        if not result.interrupted:
            self.record_language_model(state, number, seed, result.best_valid_ppl, result.epochs_done,
                                       result.seconds)
        state.save(self.out)
        return result

    def record_language_model(self, state: RecipeState, number: int, seed: int, valid_ppl, epochs: float,
                              seconds: float) -> None:
        path = lm_path(self.out, seed)
        if not path.exists():
            raise TrainingError(f"the language model of seed {seed} saved no model: give it more time")
        state.teachers.append({"seed": seed, "path": path.name, "valid_ppl": _rounded(valid_ppl),
                               "epochs": round(epochs, 3), "seconds": round(seconds, 1)})
        state.teachers.sort(key=lambda t: t["seed"])  # side by side, they end in any order
        self.log(f"recipe: language model {number} of {self.recipe.seeds} (seed {seed}) done: {epochs:.2f} epochs "
                 f"in {seconds / 60:.1f} min, validation perplexity {_rounded(valid_ppl)}")

    def train_language_models_side_by_side(self, state: RecipeState, pending: list[tuple[int, int]]) -> int:
        """Stage 1 with one process a seed (side_by_side.py); returns the signal that stopped it, else 0.
        Each model is recorded as it ends, so an interruption loses none that finished."""
        lm_budget, _ = self.budgets()
        slots = min(self.slots(), len(pending))
        threads = side_by_side.threads_each(slots, self.train_config.threads)
        jobs = []
        for number, seed in pending:
            path = lm_path(self.out, seed)
            ckpt = checkpoint_path(path)
            config = replace(self.train_config, seed=seed, time_budget=lm_budget, threads=threads)
            jobs.append(side_by_side.SeedJob(seed, number, self.corpus, path, self.valid, dict(self.model_config),
                                             config, self.lm_options, ckpt if ckpt.exists() else None))
        self.log(f"recipe: stage 1 of 2, {len(pending)} language models, {slots} at a time side by side "
                 f"({threads} thread{'s' if threads > 1 else ''} each); {self.eta_text(state, pending[0][0])}")
        failures = []
        progress = _StageProgress(self, state, self.seconds_left(state, pending[0][0]))
        counted_until = time.monotonic()

        def spent_so_far():  # into the record each time a model ends, so a kill -9 later loses none of that time
            nonlocal counted_until
            now = time.monotonic()
            state.stage_seconds["language_models"] = state.stage_seconds.get("language_models", 0.0) + \
                now - counted_until
            counted_until = now

        def started(job):
            self.log(f"recipe: language model {job.number} of {self.recipe.seeds} (seed {job.seed}) → {job.out}"
                     f"{', resumed from its checkpoint' if job.resume else ''}; its lines start [seed {job.seed}]; "
                     f"{self.eta_text(state, job.number)}")

        def finished(job, outcome):
            spent_so_far()
            if "error" in outcome:
                failures.append(f"the language model of seed {job.seed} failed: {outcome['error']}")
            elif not outcome["interrupted"]:
                try:
                    self.record_language_model(state, job.number, job.seed, outcome["best_valid_ppl"],
                                               outcome["epochs_done"], outcome["seconds"])
                except TrainingError as e:  # said once the others have stopped
                    failures.append(str(e))
                    outcome["error"] = str(e)
            state.save(self.out)

        try:
            stop = side_by_side.train_side_by_side(jobs, slots, started, finished, progress.tick)
        finally:
            spent_so_far()
            state.save(self.out)
        if failures:
            raise TrainingError("; ".join(failures) + " (rerun the same command to go on from the checkpoints)")
        return stop

    def train_span_parser(self, state: RecipeState):
        from onlstm_cli.modelfile import load_model
        from onlstm_cli.training.self_training import self_train
        _, budget = self.budgets()
        voting, left_out, median = voting_teachers(state.teachers, self.recipe.max_ppl_ratio)
        for teacher in state.teachers:
            teacher["votes"] = teacher in voting
        for teacher in left_out:
            self.log(f"recipe: the language model of seed {teacher['seed']} does not vote: its validation perplexity "
                     f"{teacher['valid_ppl']} is more than {self.recipe.max_ppl_ratio:g} × the models' median "
                     f"{median:.2f} (a failed run; --max-ppl-ratio 0 lets every model vote)")
        teachers = [load_model(self.out.with_name(t["path"])) for t in voting]
        ckpt = checkpoint_path(self.out)
        resume = ckpt if ckpt.exists() else None
        self.log(f"recipe: stage 2 of 2, the span parser on the votes of {len(teachers)} language models "
                 f"(branching voter {weight_text(self.self_train.right_branching)}) → {self.out}"
                 f"{', resumed from its checkpoint' if resume else ''}"
                 + (f"; stage budget {budget / 60:.1f} min" if budget else ""))
        before = time.monotonic()
        votes = vote_rule(self.recipe, self.self_train.right_branching, len(voting))
        record = {"seeds": self.seeds(), "teachers": state.teachers, "votes": votes,
                  "time_budget": self.train_config.time_budget, "lm_share": self.recipe.lm_share,
                  "stage_seconds": state.stage_seconds}
        result = self_train(self.corpus, self.out, teachers, self.valid,
                            SpanParserConfig(vocab_size=len(teachers[0].vocab)), self.self_train, budget, resume,
                            log=self.log, recipe=record)
        state.stage_seconds["span_parser"] = state.stage_seconds.get("span_parser", 0.0) + time.monotonic() - before
        if not result.interrupted:
            state.span_parser = {"epochs": result.epochs_done, "valid_loss": _rounded(result.best_valid_loss, 5),
                                 "seconds": round(result.seconds, 1), "right_branching": result.right_branching,
                                 "left_branching": result.left_branching}
            for teacher, agreement in zip(voting, result.teacher_agreement or []):
                teacher["agreement"] = agreement
        state.save(self.out)
        return result

    def seconds_left(self, state: RecipeState, number: int) -> float | None:
        """The most the recipe can still take once language model `number` starts (None: no time budget):
        the remaining rounds' budgets, and no more than the stage's budget minus what its earlier runs spent
        (a resumed or extended recipe), then the span parser's share, which counts from its own start."""
        lm_budget, span_budget = self.budgets()
        if lm_budget is None:
            return None
        rounds = side_by_side.waves(self.recipe.seeds - number + 1, self.slots())
        spent = state.stage_seconds.get("language_models", 0.0)
        whole_stage = lm_budget * side_by_side.waves(self.recipe.seeds, self.slots())
        return min(lm_budget * rounds, max(0.0, whole_stage - spent)) + span_budget

    def eta_text(self, state: RecipeState, number: int) -> str:
        lm_budget, _ = self.budgets()
        rounds = side_by_side.waves(self.recipe.seeds - number + 1, self.slots())
        if lm_budget is not None:
            left = self.seconds_left(state, number)
            return f"this model's budget {lm_budget / 60:.1f} min, the recipe's at most {left / 60:.1f} min more"
        if not state.teachers:
            return "no time budget: each model runs its --epochs (the recipe's ETA follows the first model)"
        per_model = sum(t["seconds"] for t in state.teachers) / len(state.teachers)
        return (f"about {per_model / 60:.1f} min a model, so the language models end in about "
                f"{per_model * rounds / 60:.1f} min; then the span parser")


def vote_rule(recipe: RecipeConfig, right_branching, voters: int) -> str:
    """The record's words for who votes and with what weight."""
    extra = recipe.extra_layers
    layers = (f"parse layer and of the {'layer' if extra == 1 else f'{extra} layers'} next to it (above it, "
              "below where it has too few above)" if extra else "parse layer")
    ratio = recipe.max_ppl_ratio
    return (f"a span's target is its share of the votes: the trees of each of the {voters} language "
            f"models' {layers} weigh 1 each" + (f", a branching tree ({weight_text(right_branching)})"
                                                if right_branching else "")
            + (f"; of the {recipe.seeds} models, one whose validation perplexity is more than {ratio:g} × "
               "their median does not vote" if ratio else ""))


def voting_teachers(teachers: list[dict], max_ratio: float) -> tuple[list[dict], list[dict], float | None]:
    """(the language models that vote, by seed; those left out; the median validation perplexity). A model whose
    perplexity is more than max_ratio × the median of all K is a failed run, not a weak seed: perplexity does not
    rank healthy seeds' trees, but a run that stopped learning pulls every vote down (docs/experiments/levers.md, "A failed
    run does not vote"). The median keeps at least half of the models, so one always votes; 0 keeps every one."""
    teachers = sorted(teachers, key=lambda t: t["seed"])
    known = [t["valid_ppl"] for t in teachers if isinstance(t.get("valid_ppl"), (int, float))]
    if not max_ratio or not known:
        return teachers, [], statistics.median(known) if known else None
    median = statistics.median(known)
    left_out = [t for t in teachers
                if isinstance(t.get("valid_ppl"), (int, float)) and t["valid_ppl"] > max_ratio * median]
    return [t for t in teachers if t not in left_out], left_out, median


class _StageProgress:
    """The recipe's own line every `progress_every` seconds while its language models train side by side, where
    each process's lines say only how its own model goes: the stage, the seeds training, the time left."""

    def __init__(self, run: RecipeRun, state: RecipeState, left: float | None):
        self.run, self.state, self.left = run, state, left
        self.span_budget = run.budgets()[1]
        self.started = self.last = time.monotonic()

    def tick(self, training: list[int], waiting: int) -> None:
        now = time.monotonic()
        if now - self.last < self.run.recipe.progress_every:
            return
        self.last = now
        text = (f"recipe: stage 1 of 2, {len(self.state.teachers)} of {self.run.recipe.seeds} language models done, "
                f"training seed{'s' if len(training) > 1 else ''} {', '.join(map(str, training))}"
                + (f", {waiting} waiting" if waiting else "")
                + f"; {(now - self.started) / 60:.1f} min in this stage")
        if self.left is not None:
            left = max(0.0, self.left - (now - self.started))
            text += (f"; it ends in at most {max(0.0, left - self.span_budget) / 60:.1f} min, the recipe in at most "
                     f"{left / 60:.1f} min")
        self.run.log(text)


@dataclass
class RecipeResult:
    out: Path
    state: RecipeState
    interrupted: bool = False
    stop_signal: int = 0
    seconds: float = 0.0

    def summary(self) -> str:
        teachers = ", ".join(f"seed {t['seed']} {t['valid_ppl']}" + (" (no vote)" if t.get("votes") is False else "")
                             for t in self.state.teachers)
        if self.interrupted:
            return (f"interrupted: {len(self.state.teachers)} language model(s) finished ({teachers or 'none'}); "
                    f"rerun the same command to go on from where it stopped")
        minutes = sum(self.state.stage_seconds.values()) / 60
        voters = sum(t.get("votes", True) is not False for t in self.state.teachers)
        return (f"done: {self.out} (span parser on {voters} language models' votes; validation "
                f"perplexity {teachers}; {minutes:.1f} min in all); the recipe is recorded in {state_path(self.out)}")


def run_recipe(corpus, out, valid, model_config: dict, train_config: TrainConfig, lm_options: dict, seeds: int,
               right_branching: float | None = None, resume=None, reporter=None, log=print,
               self_train: SelfTrainConfig | None = None, side_by_side: int | None = None,
               progress_every: float = RecipeConfig.progress_every,
               max_ppl_ratio: float = RecipeConfig.max_ppl_ratio) -> RecipeResult:
    """The recipe from Python, as `onlstm train CORPUS --seeds K` runs it. Without `valid`, every 20th line of
    the corpus is held out (the two parts are written beside `out`). `resume`: the recipe must exist already
    (its record, OUT.recipe.json, or any file of it); without it a rerun resumes all the same.
    `progress_every`: seconds between the recipe's own progress lines while models train side by side.
    `max_ppl_ratio`: a model whose validation perplexity is more than this × the models' median does not vote
    (0: every one votes)."""
    from onlstm_cli.training.train import LineReporter
    corpus, out = Path(corpus), Path(out)
    recipe = RecipeConfig(seeds=seeds, side_by_side=side_by_side, progress_every=progress_every,
                          max_ppl_ratio=max_ppl_ratio)
    if side_by_side is not None and side_by_side < 1:
        raise TrainingError("--side-by-side must be at least 1")
    if not (max_ppl_ratio == 0 or max_ppl_ratio >= 1):  # below 1 would leave out the median model itself
        raise TrainingError(f"--max-ppl-ratio must be 0 (every model votes) or at least 1, not {max_ppl_ratio:g}")
    try:
        recipe.right_branching = voter_weight(recipe.right_branching if right_branching is None else right_branching)
    except ValueError as e:
        raise TrainingError(str(e)) from None
    if not corpus.is_file():
        raise TrainingError(f"corpus not found: {corpus}")
    if resume is not None and not state_path(out).exists():
        raise TrainingError(f"no recipe to resume beside {out} ({state_path(out)} is missing): run without --resume")
    if not out.is_dir() and not out.parent.is_dir():  # a typo in a path, not a folder to make for hours of work
        raise TrainingError(f"--out {out}: its folder does not exist")
    check_destination(out)  # a directory, a folder that cannot be written
    lines = sum(1 for line in corpus.open(encoding="utf-8", errors="replace") if line.strip())
    if lines < recipe.min_lines:
        raise TrainingError(f"{corpus} has {lines} line{'' if lines == 1 else 's'}: --seeds needs at least "
                            f"{recipe.min_lines}, to train {seeds} models and validate them")
    if valid is None:
        corpus, valid = held_out_split(corpus, out)
    config = self_train or SelfTrainConfig(seed=train_config.seed)
    config = replace(config, right_branching=recipe.right_branching, extra_layers=recipe.extra_layers)
    run = RecipeRun(corpus, out, Path(valid), model_config, train_config, recipe, config, lm_options,
                    reporter or LineReporter(), log)
    return run.run()


def held_out_split(corpus: Path, out: Path) -> tuple[Path, Path]:
    """Every 20th non-blank line of the corpus as validation text, the others to train on, written beside
    `out` (the same corpus gives the same files, so a rerun finds what it trained on). It streams: a corpus
    is read a line at a time, as training reads it, never whole into memory."""
    paths = {name: out.with_name(f"{out.stem}.recipe-{name}.txt") for name in ("train", "valid")}
    with atomic_file(paths["train"], "w", refuse_symlink=True) as train, \
            atomic_file(paths["valid"], "w", refuse_symlink=True) as valid, open(corpus, "rb") as lines:
        kept = 0
        for raw in lines:
            line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
            if line.strip():
                (valid if kept % 20 == 19 else train).write(line + "\n")
                kept += 1
    return paths["train"], paths["valid"]


def weight_text(weight: float | str) -> str:
    return (f"{AUTO}: a right- or left-branching tree, the way the teachers' trees lean (votes.auto_weight)"
            if weight == AUTO else f"right-branching, weight {weight:g}")


def _rounded(value: float | None, digits: int = 2) -> float | None:
    return None if value is None or not math.isfinite(value) else round(value, digits)
