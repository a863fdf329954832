"""The recipe's record, OUT.recipe.json (recipe/runner.py): the options a rerun must repeat, the language models
finished, the span parser once trained, and the wall time of each stage over all the recipe's runs; and the
recipe's end (RecipeResult), the line that says what it made and what it left beside --out."""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from onlstm_cli.config import RecipeConfig, SelfTrainConfig
from onlstm_cli.errors import TrainingError
from onlstm_cli.modelfile import atomic_file
from onlstm_cli.training.recipe.files import LeftBeside, recipe_files, state_path
from onlstm_cli.training.student.direction import no_branching_tree_text

RECIPE_VERSION = 2  # 2: each teacher names its model family (1: every teacher an ON-LSTM)
MAX_RECORD_BYTES = 16 << 20  # a record is a few kB a seed: anything far larger is not one, and is not read


@dataclass
class RecipeState:
    options: dict                                      # what a rerun must repeat
    teachers: list = field(default_factory=list)       # per finished language model: seed, path, ppl, seconds
    span_parser: dict | None = None                    # once the span parser stage has finished (the second
                                                       # round's, where one follows the first)
    stage_seconds: dict = field(default_factory=dict)  # wall time per stage, over all runs
    first_round: dict | None = None                    # the first span parser, once trained, where a second
                                                       # round follows it (RecipeConfig.second_round)

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
        data = read_record(path)
        state = RecipeState(data["options"], data["teachers"], data["span_parser"], data["stage_seconds"],
                            data.get("first_round"))
        if not isinstance(state.first_round, (dict, type(None))):
            raise TypeError("its first_round is not an object")
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise TrainingError(f"{path} is not a recipe record ({e}); remove it to start the recipe anew") from None
    extended_from = None
    for key, recorded, given in differences(state.options, options):
        if key == "train.time_budget" and recorded is not None and (given is None or given > recorded):
            extended_from = recorded
            continue
        hint = " (a recipe's --time-budget can be raised, not lowered)" if key == "train.time_budget" else ""
        files = " ".join(str(p) for p in recipe_files(out))
        raise TrainingError(f"{path} records a recipe with {key} = {recorded!r}, this command has {given!r}{hint}: "
                            f"rerun it with the recipe's options, use another --out, or delete its files to start it "
                            f"anew: {files}")
    return state, extended_from


def read_record(path: Path) -> dict:
    """A record's data as this version writes it; OSError, ValueError, KeyError or TypeError where it is none."""
    size = path.stat().st_size
    if size > MAX_RECORD_BYTES:
        raise ValueError(f"{size:,} bytes, more than a record's {MAX_RECORD_BYTES:,}")
    return migrated(json.loads(path.read_text(encoding="utf-8")))


def recorded_families(out: Path) -> tuple | None:
    """The families of the recipe recorded beside `out` (an ON-LSTM alone where the record predates families),
    so that `--families auto` goes on as the recipe began whatever the budget is now; None where there is no record
    to read (load_state says what is wrong with one that cannot be)."""
    try:
        families = read_record(state_path(out))["options"]["recipe"].get("families", ["onlstm"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return tuple(families) if isinstance(families, list) and all(isinstance(f, str) for f in families) else None


def migrated(data: dict) -> dict:
    """A record of an older version as this version writes it, in the one place that knows the versions."""
    version = data.get("version", 1)
    if not isinstance(version, int) or version > RECIPE_VERSION:
        raise ValueError(f"version {version!r}, newer than this onlstm's {RECIPE_VERSION}")
    for section in ("recipe", "span_parser"):  # the option's name until teachers could vote with layers below
        if "layers_above" in data["options"][section]:
            data["options"][section]["extra_layers"] = data["options"][section].pop("layers_above")
    if version < 2:  # before families, every teacher was an ON-LSTM language model
        for teacher in data["teachers"]:
            teacher.setdefault("family", "onlstm")
    return {**data, "version": RECIPE_VERSION}


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
class RecipeResult:
    out: Path
    state: RecipeState
    interrupted: bool = False
    stop_signal: int = 0
    seconds: float = 0.0
    left: LeftBeside | None = None    # what a finished recipe left beside --out

    def summary(self) -> str:
        teachers = ", ".join(("" if t.get("family", "onlstm") == "onlstm" else f"{t['family']} ")
                             + f"seed {t['seed']} {t.get('valid_ppl', t.get('health'))}"
                             + (" (no vote)" if t.get("votes") is False else "") for t in self.state.teachers)
        models = models_name(self.state.teachers)
        if self.interrupted:
            return (f"interrupted: {len(self.state.teachers)} {models[:-1]}(s) finished ({teachers or 'none'}); "
                    f"rerun the same command to go on from where it stopped")
        minutes = sum(self.state.stage_seconds.values()) / 60
        voters = sum(t.get("votes", True) is not False for t in self.state.teachers)
        beside = f"; {self.left.text()}" if self.left is not None else ""
        return (f"done: {self.out} ({self.shipped_text(voters, models)}; validation "
                f"perplexity {teachers}; {minutes:.1f} min in all, over every run: {self.stages_text()}){beside}; "
                f"the recipe is recorded in {state_path(self.out)}")

    def stages_text(self) -> str:
        """How the time went, stage by stage, and what of the budget was left unspent."""
        names = {"language_models": models_name(self.state.teachers), "span_parser": "the span parser",
                 "second_round": "the second round"}
        spent = self.state.stage_seconds
        text = ", ".join(f"{names.get(stage, stage.replace('_', ' '))} {seconds / 60:.1f} min"
                         for stage, seconds in spent.items())
        budget = self.state.options.get("train", {}).get("time_budget")
        left = None if budget is None else budget - sum(spent.values())
        if left is not None and left > 0.05 * budget:  # more than the recipe's own rounding: say where it went
            why = ("the second round stops once its validation loss has stopped improving" if "second_round" in spent
                   else "every model and the span parser ended before their time: their epochs, or a recipe "
                   "recorded before the span parser trained until the budget")
            text += f"; {left / 60:.1f} min of the {budget / 60:.0f}-min budget not spent ({why})"
        return text

    def shipped_text(self, voters: int, models: str) -> str:
        """What --out holds, as `info` names it: the span parser, or the consensus parser that the student check
        shipped in its place (the student then lies beside it)."""
        check = (self.state.span_parser or {}).get("student_check") or {}
        second = (self.state.span_parser or {}).get("teachers") if self.state.first_round else None
        if isinstance(second, list) and second:  # recipe/second_round.py
            return (f"span parser, a second round, on the votes of {second[0]} (the first span parser, on {voters} "
                    f"{models}' votes) and {len(second) - 1} focused PCFGs{self.branching_text()}")
        if check.get("shipped") != "consensus parser":
            return f"span parser on {voters} {models}' votes{self.branching_text()}"
        from onlstm_cli.training.student.check import student_path
        return (f"the consensus parser: an ensemble of the {voters} voting {models}, shipped because the span parser "
                f"on their votes agreed less with their consensus; that span parser is beside it, "
                f"{student_path(self.out).name}")

    def branching_text(self) -> str:
        """The branching tree that voted beside the models, as the run chose it, or why none did where their
        trees were too lexical to show a direction (student/direction.py)."""
        record = self.state.span_parser or {}
        for side in ("right", "left"):
            weight = record.get(f"{side}_branching")
            if isinstance(weight, (int, float)) and weight > 0:
                return f" and a {side}-branching tree's ({weight:.2f})"
        return no_branching_tree_text(record.get("lexical_agreement"))


def models_name(teachers: list) -> str:
    """The teachers as the recipe's lines name them: language models, or models where other families teach too."""
    return "language models" if all(t.get("family", "onlstm") == "onlstm" for t in teachers) else "models"


def rounded(value: float | None, digits: int = 2) -> float | None:
    return None if value is None or not math.isfinite(value) else round(value, digits)


def as_recorded(options: dict, recipe: RecipeConfig, self_train: SelfTrainConfig):
    """A recipe recorded before an option existed goes on as it began: the option's old behaviour."""
    if "extra_layers" not in options["recipe"]:  # recorded before teachers voted with several layers
        recipe, self_train = replace(recipe, extra_layers=0), replace(self_train, extra_layers=0)
    if "max_ppl_ratio" not in options["recipe"]:  # recorded before failed runs were left out of the vote
        recipe = replace(recipe, max_ppl_ratio=0.0)
    if "units" not in options["span_parser"]:  # recorded before a student read n-grams its host did not
        self_train = replace(self_train, units="host")
    if "span_parser_until_budget" not in options["recipe"]:  # recorded while the span parser stopped at its cap
        recipe = replace(recipe, span_parser_until_budget=False)
    if "max_branching_agreement" not in options["span_parser"]:  # recorded while every teacher voted
        self_train = replace(self_train, max_branching_agreement=100.0)
    if "min_relative_agreement" not in options["span_parser"]:  # recorded while teachers far apart voted
        self_train = replace(self_train, min_relative_agreement=0.0)
    if "lean_from" not in options["span_parser"]:  # recorded while auto read the direction from the trees' lean
        self_train = replace(self_train, lean_from="trees")
    if "focus_pcfgs" not in options["recipe"]:  # recorded while PCFGs trained beside the ON-LSTMs, unfocused
        recipe = replace(recipe, focus_pcfgs=False)
    if "more_pcfgs" not in options["recipe"]:  # recorded while the recipe trained K PCFGs, however fast they ended
        recipe = replace(recipe, more_pcfgs=False)
    if "second_round" not in options["recipe"]:  # recorded while the recipe's span parser was its last stage
        recipe = replace(recipe, second_round=False)
    return recipe, self_train


def record_in_file(out: Path, agreement: dict, teachers: list[dict]) -> None:
    """The shipped parser's branching agreement, and the teachers as they voted (the span parser's run leaves some
    out), into its file's recipe record (a consensus parser's: the one it took from the student), where `info`
    reads the recipe."""
    from onlstm_cli.modelfile import atomic_save, read_archive
    archive = read_archive(out)
    recipe = archive.get("span_parser", {}).get("meta", {}).get("recipe",
                                                                archive.get("meta", {}).get("self_training_recipe"))
    if isinstance(recipe, dict):
        recipe["branching_agreement"] = agreement
        recipe["teachers"] = teachers
        atomic_save(archive, out)
