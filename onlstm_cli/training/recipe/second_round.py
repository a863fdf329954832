"""The recipe's last stage (recipe/runner.py; RecipeConfig.second_round). Where its PCFGs are focused on the ON-LSTMs'
votes, the first span parser (stage 2) trains in two thirds of the time stage 1 leaves, keeps its best epoch as
always, and is written beside --out (files.first_round_path, OUT.round1.onlstm). Stage 3 then trains a second span
parser on the votes of the first one's trees and of the focused PCFGs that voted, as `train --teacher …
--second-round` would (`auto` gives no branching voter to such teachers: student/votes.py), in the rest of the
recipe's time, until its validation loss has not improved for the span parser's --patience epochs; it is written
to --out, and the student check compares it with these teachers, the first span parser among them.

Why: the first span parser finds its best epoch early and the time after it is spent on nothing, while a second
round on its trees and the PCFGs' was above the first in every protocol on the one-hour recipes' files measured
(docs/experiments/pcfg.md)."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from onlstm_cli.training.recipe.files import first_round_path
from onlstm_cli.training.recipe.voters import second_round_rule

FIRST_ROUND_SHARE = 2 / 3  # of the time stage 1 leaves: the first span parser's best epoch came well within it in
                           # every one-hour recipe recorded (docs/experiments/pcfg.md)


def planned(recipe) -> bool:
    """Whether the recipe (a RecipeConfig) ends with a second round: where its PCFGs are focused by the ON-LSTMs."""
    return bool(recipe.second_round and recipe.focus_pcfgs and {"onlstm", "pcfg"} <= set(recipe.families))


def follows(run, state) -> bool:
    """Whether a second round follows (or has followed) the first span parser of `run`'s recipe: planned, and a
    focused PCFG votes beside the first span parser (else it would teach alone, and be its own student)."""
    if not planned(run.recipe):
        return False
    return state.first_round is not None or any(t.get("focused_on") for t in run.voters(state)[0])


def reserve(clock, state) -> float:
    """The time the first span parser leaves the second round (a StagePlan `clock`): a third of what stage 1 left;
    0 without a time budget, where each trains its epochs."""
    if clock.budget is None:
        return 0.0
    return (1 - FIRST_ROUND_SHARE) * max(0.0, clock.budget - state.stage_seconds.get("language_models", 0.0))


def teacher_files(out: Path, state) -> list[Path]:
    """The second round's teachers: the first span parser's file, then the focused PCFGs that voted in its round."""
    pcfgs = [t["path"] for t in state.teachers if t.get("focused_on") and t.get("votes", True) is not False]
    return [first_round_path(out)] + [out.with_name(path) for path in pcfgs]


def training(run, budget: float | None):
    """The second round's options (a SelfTrainConfig): the recipe's span parser's, every teacher voting with its
    span parser's trees (a PCFG with its grammar's), and stopping after --patience epochs without a better
    validation loss, or once the recipe's time is spent."""
    return replace(run.span_parser_training(budget), span_parser_teachers=True, patience=run.self_train.patience)


def train(run, state):
    """Stage 3: the second span parser, written to --out and recorded as the recipe's span parser; the result of
    its training (student/train.SelfTrainResult)."""
    from onlstm_cli.modelfile import load_model
    from onlstm_cli.training.student.train import checkpoint_seconds, self_train
    from onlstm_cli.training.run.files import checkpoint_path
    files = teacher_files(run.out, state)
    pcfgs = len(files) - 1
    ckpt = checkpoint_path(run.out)
    resume = ckpt if ckpt.exists() else None
    budget = run.clock.span_parser_budget(state, checkpoint_seconds(resume))
    run.log(f"recipe: stage 3 of {run.stage_count(state)}, a second round: a span parser on the votes of "
            f"{files[0].name} (its trees) and {pcfgs} focused PCFG{'s' if pcfgs > 1 else ''} → {run.out}"
            f"{', resumed from its checkpoint' if resume else ''}"
            + (f"; the recipe's time left {budget / 60:.1f} min" if budget is not None else ""))
    votes = second_round_rule(files[0].name, pcfgs, run.self_train.right_branching)
    record = {**run.recipe_record(state), "votes": votes, "first_round": state.first_round}
    result = self_train(run.corpus, run.out, [load_model(path) for path in files], run.valid, None,
                        training(run, budget), run.budget.part(budget), resume, log=run.log, recipe=record)
    if not result.interrupted:
        state.span_parser = {**run.span_parser_record(result),
                             "teachers": [path.name for path in files],
                             "teacher_agreement": result.teacher_agreement or []}
    run.save(state, "second_round")
    return result


def validation_votes(run, state):
    """The second round's votes of the validation text, for a rerun whose second span parser had trained but whose
    checks had not run (voters.validation_votes)."""
    from onlstm_cli.modelfile import load_model
    from onlstm_cli.training.recipe.voters import validation_votes as votes_of
    teachers = [load_model(path) for path in teacher_files(run.out, state)]
    return votes_of(run.out, teachers, run.valid, training(run, None))
