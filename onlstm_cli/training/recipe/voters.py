"""Who votes in the recipe's span parser stage (recipe/runner.py), the record's words for the vote, and what the
student learned: how far its trees are from the trees a fixed branching rule gives (a student that only
learned right-branching trees adds nothing to that rule, and a newcomer cannot tell otherwise)."""
from __future__ import annotations

import statistics
from pathlib import Path

from onlstm_cli.config import AUTO, RecipeConfig


def vote_rule(recipe: RecipeConfig, right_branching, voters: int, others: int = 0) -> str:
    """The record's words for who votes and with what weight: `voters` language models, and `others`, models of other
    families (a PCFG), which vote with their own trees."""
    extra = recipe.extra_layers
    layers = (f"parse layer and of the {'layer' if extra == 1 else f'{extra} layers'} next to it (above it, "
              "below where it has too few above)" if extra else "parse layer")
    ratio = recipe.max_ppl_ratio
    models = f"the trees of each of the {voters} language models' {layers}" if voters else ""
    own = f"the {others} other models' own trees" if others else ""
    return (share_of_votes([models, own], right_branching)
            + (f"; of the {recipe.seeds} models, one whose validation perplexity is more than {ratio:g} × "
               "their median does not vote" if ratio else ""))


def second_round_rule(first_round: str, pcfgs: int, right_branching) -> str:
    """The record's words for the second round's vote (recipe/second_round.py): the first span parser's trees (its
    file's name `first_round`) and the `pcfgs` focused PCFGs' own trees."""
    return "a second round: " + share_of_votes(
        [f"the trees of the first span parser ({first_round})", f"the {pcfgs} focused PCFGs' own trees"],
        right_branching, auto_gives_none="auto gives none where a teacher votes with a span parser's trees")


def share_of_votes(voters: list[str], right_branching, auto_gives_none: str | None = None) -> str:
    """Who votes (`voters`, each weighing 1; an empty one left out) and the branching tree beside them; where `auto`
    gives none to these teachers, `auto_gives_none` says why."""
    text = f"a span's target is its share of the votes: {' and '.join(v for v in voters if v)} weigh 1 each"
    if right_branching == AUTO and auto_gives_none:
        return f"{text}; no branching tree ({auto_gives_none})"
    return text + (f", a branching tree ({weight_text(right_branching)})" if right_branching else "")


def voting_teachers(teachers: list[dict], max_ratio: float,
                    health: str = "valid_ppl") -> tuple[list[dict], list[dict], float | None]:
    """(the models of one family that vote, by seed; those left out; the median of their `health` figure, the
    record's key for it: validation perplexity for language models). A model whose figure is more than max_ratio ×
    the median of all K is a failed run, not a weak seed: perplexity does not rank healthy seeds' trees, but a run
    that stopped learning pulls every vote down (docs/experiments/levers.md, "A failed run does not vote"). The
    median keeps at least half of the models, so one always votes; 0 keeps every one."""
    teachers = sorted(teachers, key=lambda t: t["seed"])
    known = [t[health] for t in teachers if isinstance(t.get(health), (int, float))]
    if not max_ratio or not known:
        return teachers, [], statistics.median(known) if known else None
    median = statistics.median(known)
    left_out = [t for t in teachers if isinstance(t.get(health), (int, float)) and t[health] > max_ratio * median]
    return [t for t in teachers if t not in left_out], left_out, median


def voters_by_family(teachers: list[dict], max_ratio: float, families: list) -> tuple[list[dict], list[tuple]]:
    """Every family's voting teachers (family by family, by seed), each family's failed runs left out against its
    own median; and (teacher, family, median) for each one left out."""
    voting, left_out = [], []
    for family in families:
        own = [t for t in teachers if t.get("family", "onlstm") == family.name]
        votes, out, median = voting_teachers(own, max_ratio, family.health_key)
        voting += votes
        left_out += [(t, family, median) for t in out]
    return voting, left_out


def branching_agreement(student_path: Path, valid: Path, batch_size: int = 64) -> dict[str, float]:
    """The student's trees of the validation text against right- and left-branching trees: the mean
    (symmetric) sentence F1 over its sentences of 3 words or more, in %, as the teachers' agreement with
    them is read (self_training.auto_weight); {} for a text without such sentences."""
    from onlstm_cli.induction.teachers import model_trees
    from onlstm_cli.modelfile import load_model
    from onlstm_cli.text.corpus import read_as_trained
    from onlstm_cli.training.student.votes import branching_agreements
    student = load_model(student_path)
    sentences = [s for s in read_as_trained(valid, student) if len(s) >= 3]  # shorter ones have one tree
    if not sentences:
        return {}
    trees = model_trees(student, sentences, batch_size, span_parsers=True)  # as it parses
    right, left = branching_agreements(trees, [len(s) for s in sentences])
    return {"right": round(100 * right, 1), "left": round(100 * left, 1)}


def branching_warning(agreement: dict[str, float], threshold: float) -> str | None:
    """The recipe's last warning when the student's trees are (nearly) all right- or left-branching ones."""
    for side, value in sorted(agreement.items(), key=lambda item: -item[1]):
        if value > threshold:
            return (f"warning: the span parser's trees of the validation text agree {value:.1f} (sentence F1) with "
                    f"{side}-branching trees: it adds little to that rule, which needs no training (more text, "
                    "a larger --time-budget" + (" or a lower --right-branching" if side == "right" else "")
                    + " may help)")
    return None


def weight_text(weight: float | str) -> str:
    return (f"{AUTO}: a right- or left-branching tree, the way the teachers lean (votes.auto_voter), or none"
            if weight == AUTO else f"right-branching, weight {weight:g}")


def validation_votes(student: Path, teachers: list, valid: Path, self_train):
    """The votes of the validation text as the span parser's run counted them, for a rerun whose span parser had
    trained but whose checks had not run: the same teachers (the record's voting ones, loaded), text, rule and
    reading (the student's file's) give the same votes. The checks read nothing of the training part: the
    validation text stands in for it, one sentence of it parsed."""
    from onlstm_cli.modelfile import load_model
    from onlstm_cli.training.student.votes import votes_of
    return votes_of(teachers, valid, valid, self_train, lambda line: None, load_model(student), limit=1)
