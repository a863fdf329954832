"""What several commands' options share: durations, the choices of enum options, and the defaults read from the
config dataclasses (one place for each default)."""
from __future__ import annotations

import functools
import inspect
import re
import typing
from dataclasses import MISSING, fields
from enum import Enum

from onlstm_cli.config import (COMBINE_RULES, LEAN_FROM, LR_SCHEDULES, STUDENT_UNIT_CHOICES, TEACHER_WEIGHTS,
                               UNIT_CHOICES,
                               EnsembleConfig, ModelConfig, PcfgConfig, PcfgTrainConfig, RecipeConfig, SelfTrainConfig,
                               TrainConfig)
from onlstm_cli.errors import UserError
from onlstm_cli.trees import PUNCTUATION_RULES, SCORING_PUNCTUATION


def command_of(options: type, panels: dict[str, tuple[str, ...]] | None = None):
    """A command whose options are the fields of the dataclass `options`, each's default its typer.Option or
    typer.Argument: Typer reads them as the decorated function's parameters, and the function is called with one
    `options` object of what was given, not with each option an argument of its own. `panels`: the --help page's
    sections, title → the fields it lists, in the order the page shows them (help_format.PlainCommand); a field
    named there that `options` lacks is an error here, not a section silently short of it."""
    hints = typing.get_type_hints(options)
    panel_of = {name: title for title, names in (panels or {}).items() for name in names}
    by_name = {f.name: f for f in fields(options)}
    if unknown := sorted(set(panel_of) - set(by_name)):
        raise TypeError(f"help panels name options {options.__name__} lacks: {', '.join(unknown)}")
    for name, title in panel_of.items():
        by_name[name].default.rich_help_panel = title
    order = list(panel_of)  # the panels' order; the arguments and the fields in no panel keep theirs, first
    ordered = sorted(by_name.values(), key=lambda f: order.index(f.name) + 1 if f.name in panel_of else 0)
    parameters = [inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=f.default, annotation=hints[f.name])
                  for f in ordered]

    def command(run):
        @functools.wraps(run)
        def with_options(**given):
            return run(options(**given))
        with_options.__signature__ = inspect.Signature(parameters)
        with_options.__annotations__ = {p.name: p.annotation for p in parameters}
        return with_options
    return command


def parse_duration(text: str | None, option: str = "--time-budget") -> float | None:
    """'90', '90s', '45m', '1.5h' → seconds; None or 'none' → no limit."""
    if text is None or text.strip().lower() in ("", "none"):
        return None
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([smh]?)\s*", text.lower())
    if not m:
        raise UserError(f"{option} {text!r}: expected a duration such as 90s, 45m or 1.5h")
    seconds = float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[m.group(2)]
    if seconds <= 0:
        raise UserError(f"{option} {text!r} must be positive ('none' for no limit)")
    return seconds


class MasterInput(str, Enum):
    paper = "paper"
    symmetric = "symmetric"


class SplitRule(str, Enum):
    paper = "paper"
    symmetric = "symmetric"


Units = Enum("Units", {choice: choice for choice in UNIT_CHOICES}, type=str)
StudentUnits = Enum("StudentUnits", {choice: choice for choice in STUDENT_UNIT_CHOICES}, type=str)
LeanFrom = Enum("LeanFrom", {choice: choice for choice in LEAN_FROM}, type=str)
TeacherWeights = Enum("TeacherWeights", {choice: choice for choice in TEACHER_WEIGHTS}, type=str)
LrSchedule = Enum("LrSchedule", {choice: choice for choice in LR_SCHEDULES}, type=str)
PunctuationRule = Enum("PunctuationRule", {choice: choice for choice in PUNCTUATION_RULES}, type=str)
ScoringPunctuation = Enum("ScoringPunctuation", {choice: choice for choice in SCORING_PUNCTUATION}, type=str)
PUNCTUATION_HELP = ("boundaries: a constituent starts right after a punctuation mark (or at an opening bracket or "
                    "quote; a pair of them encloses one), cut before any other; "
                    "ignore: the model's distances alone (the paper's protocol). Default: the model's (boundaries "
                    "for files trained since issue 40, ignore for the bundled ones).")


class VoteTargets(str, Enum):
    shares = "shares"
    tree = "tree"


# The `train` options' defaults are the config dataclasses' (one place for each).
MODEL_DEFAULTS = {f.name: f.default for f in fields(ModelConfig) if f.default is not MISSING}


TRAIN_DEFAULTS = {f.name: f.default for f in fields(TrainConfig)}


SELF_TRAIN_DEFAULTS = {f.name: f.default for f in fields(SelfTrainConfig)}


RECIPE_DEFAULTS = {f.name: f.default for f in fields(RecipeConfig)}
PCFG_DEFAULTS = {f.name: f.default for f in fields(PcfgConfig) if f.default is not MISSING}
PCFG_TRAIN_DEFAULTS = {f.name: f.default for f in fields(PcfgTrainConfig)}
Family = Enum("Family", {name: name for name in ("onlstm", "pcfg")}, type=str)  # training/families.py's FAMILIES
ENSEMBLE_DEFAULTS = {f.name: f.default for f in fields(EnsembleConfig)}


def duration_text(seconds: float | None) -> str:
    """3600 → '1h', 2700 → '45m', 90 → '90s', None → 'none' (what parse_duration reads back)."""
    if seconds is None:
        return "none"
    for unit, size in (("h", 3600), ("m", 60)):
        if seconds % size == 0:
            return f"{seconds / size:g}{unit}"
    return f"{seconds:g}s"


UNITLESS = re.compile(r"\s*[0-9]*\.?[0-9]+\s*")  # parse_duration takes it as seconds


def given_budget(text: str | None, recipe: bool) -> tuple[float | None, list[str]]:
    """--time-budget's seconds (not given: TrainConfig's default) and what the run first says of them: that a
    recipe takes the default (sized for a real corpus, where a user may have meant a short try), and that a
    number without a unit is seconds (--time-budget 6 meant as minutes would end the run before it learnt)."""
    if text is None:
        default = TRAIN_DEFAULTS["time_budget"]
        return default, [f"no --time-budget: the recipe takes its default, {duration_text(default)}"] if recipe else []
    return parse_duration(text), unitless_warning("--time-budget", text)


def unitless_warning(option: str, text: str) -> list[str]:
    """A duration given as a bare number is seconds: a warning saying so (none where it has a unit)."""
    if not UNITLESS.fullmatch(text):
        return []
    number = text.strip()
    return [f"warning: {option} {number} has no unit, so it is {number} seconds; give a unit, e.g. "
            f"{number}s, {number}m, {number}h"]


ENSEMBLE_HELP = ("Combine the distances of every model in an ensemble file, as the file says (averaged as they are, "
                 "or as standard scores or ranks per sentence; see onlstm ensemble); --no-ensemble "
                 "uses its first model only.")


CombineRule = Enum("CombineRule", {rule: rule for rule in COMBINE_RULES}, type=str)
