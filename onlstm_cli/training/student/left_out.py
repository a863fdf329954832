"""Which teachers vote: a teacher whose trees are a branching rule's does not (Collapsed), nor one whose trees agree
with the other teachers' far less than theirs do with each other (FarApart). Both are read from the teachers' trees
of the validation text, before the vote; no gold tree is read."""
from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path

from onlstm_cli.evaluation.metrics import mutual_agreement, nearest_branching

RECORD_KEYS = ("branching_rule", "far_apart")  # a recipe's record of a teacher left out says why under one of these


@dataclass
class Collapsed:
    """A teacher left out of the vote: its trees are nearly a branching rule's (without_collapsed)."""
    teacher: str      # its name (a model file's path)
    side: str         # "right" or "left"
    agreement: float  # its trees' agreement with that side's branching trees of the validation text (%)

    def __str__(self) -> str:
        return (f"{Path(self.teacher).name} does not vote: its trees of the validation text agree "
                f"{self.agreement:.1f} with {self.side}-branching trees, a rule it learned instead of the text's "
                "structure (--max-branching-agreement 100 lets it vote)")

    def record(self) -> dict:
        """What the recipe's record says of it (no_vote_text reads it)."""
        return {"branching_rule": {"side": self.side, "agreement": self.agreement}}


def without_collapsed(teachers: list, free_trees: list, lengths: list[int], above: float,
                      log) -> tuple[list, list, list[Collapsed]]:
    """The teachers that vote, with their direction-free trees of the validation text, and those that do not: a
    teacher whose trees agree more than `above` (%) with right- or left-branching trees has learned that rule, not
    the text's structure (PCFGs on 28,000 Turkish words whose grammars fell to one branching direction,
    docs/experiments/pcfg.md). Its vote would count a branching tree again, and with `auto` tip the lean toward
    it. Where every teacher has, all vote, with a warning: there is nothing else to learn from."""
    collapsed = []
    for teacher, own in zip(teachers, free_trees):
        side, value = nearest_branching(own[teacher.weighing], lengths)
        if above < 100 and value > above:
            collapsed.append(Collapsed(teacher.name, side, round(value, 1)))
    if collapsed and len(collapsed) == len(teachers):
        log("warning: every teacher's trees of the validation text are nearly branching trees ("
            + ", ".join(f"{Path(c.teacher).name} {c.agreement:.1f} {c.side}" for c in collapsed)
            + "): they all vote, and the span parser can learn little beyond that rule")
        return teachers, free_trees, []
    for c in collapsed:
        log(str(c))
    names = {c.teacher for c in collapsed}
    kept = [k for k, teacher in enumerate(teachers) if teacher.name not in names]
    return [teachers[k] for k in kept], [free_trees[k] for k in kept], collapsed


@dataclass
class FarApart:
    """A teacher left out of the vote: its trees agree with the other teachers' far less than theirs do with each
    other (without_far_apart)."""
    teacher: str      # its name (a model file's path)
    agreement: float  # its mean agreement with the other teachers' trees of the validation text (%)
    line: float       # the agreement below which a teacher does not vote (%): a share of the teachers' median

    def __str__(self) -> str:
        return (f"{Path(self.teacher).name} does not vote: its trees of the validation text agree {self.agreement:.1f} "
                f"with the other teachers', below {self.line:.1f}, a share of their median agreement (a run that "
                "learned little the others share; --min-relative-agreement 0 lets it vote)")

    def record(self) -> dict:
        """What the recipe's record says of it (no_vote_text reads it)."""
        return {"far_apart": {"agreement": self.agreement, "line": self.line}}


def without_far_apart(teachers: list, free_trees: list, share: float, log) -> tuple[list, list, list[FarApart]]:
    """The teachers that vote, with their direction-free trees of the validation text, and those that do not: a
    teacher whose mean agreement with the others (their parse layers' trees, metrics.mutual_agreement) is below
    `share` × the median of the teachers' agreements. Why: such a teacher learned little the others share (of a
    small Turkish text's twelve teachers, the three far below the rest were its three worst on gold trees, and the
    student gained without them: docs/experiments/pcfg.md). The median keeps at least half of the teachers; 0 lets
    every teacher vote."""
    if share <= 0 or len(teachers) < 3:  # two teachers agree with each other alike
        return teachers, free_trees, []
    mutual = mutual_agreement([own[teacher.weighing] for teacher, own in zip(teachers, free_trees)])
    line = share * statistics.median(mutual)
    kept = [k for k, value in enumerate(mutual) if value >= line]
    apart = [FarApart(teachers[k].name, round(100 * value, 2), round(100 * line, 2))
             for k, value in enumerate(mutual) if value < line]
    for teacher in apart:
        log(str(teacher))
    return [teachers[k] for k in kept], [free_trees[k] for k in kept], apart


def no_vote_text(teacher: dict) -> str:
    """Why a recipe's teacher did not vote, from its record (`info` says it): its trees were a branching rule's
    (Collapsed), or far from the other teachers' (FarApart), else a failed run."""
    rule, apart = teacher.get("branching_rule"), teacher.get("far_apart")
    if isinstance(rule, dict) and isinstance(rule.get("agreement"), (int, float)):
        return f"; no vote: its trees agree {rule['agreement']:.1f} with {rule.get('side')}-branching ones"
    if isinstance(apart, dict) and all(isinstance(apart.get(k), (int, float)) for k in ("agreement", "line")):
        return (f"; no vote: its trees agree {apart['agreement']:.1f} with the other teachers', below "
                f"{apart['line']:.1f}")
    return "; no vote: a failed run"
