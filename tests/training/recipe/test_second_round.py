"""The recipe's last stage (recipe/second_round.py): where the PCFGs are focused, the first span parser is kept beside
--out and a second one trains on the votes of its trees and of the PCFGs; it goes on from its record after an
interruption; its time is what the first leaves; `--one-round` and a record from before the stage go without it."""
from __future__ import annotations

import json
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from conftest import write_corpus
from test_pcfg_family import recipes_the_command_line_makes, tiny_two_family_recipe

from onlstm_cli.config import RecipeConfig, SelfTrainConfig
from onlstm_cli.errors import TrainingError
from onlstm_cli.info import info_text, model_info
from onlstm_cli.training.recipe.budget import StagePlan
from onlstm_cli.training.recipe.files import first_round_path
from onlstm_cli.training.recipe.record import RecipeState, as_recorded, load_state
from onlstm_cli.training.recipe.runner import RecipeRun, state_path
from onlstm_cli.training.recipe.second_round import reserve
from onlstm_cli.training.recipe.voters import second_round_rule
from onlstm_cli.training.run.clock import Budget
from onlstm_cli.training.run.files import checkpoint_path


@pytest.fixture(scope="module")
def two_rounds(tmp_path_factory):
    """One tiny two-family recipe with its second round: (--out, its result, its log)."""
    folder = tmp_path_factory.mktemp("two_rounds")
    out = folder / "r.onlstm"
    result, said = tiny_two_family_recipe(write_corpus(folder / "corpus.txt", 80, seed=9), out, second_round=True)
    return out, result, said


def test_the_second_round_trains_on_the_first_span_parser_and_the_pcfgs(two_rounds):
    out, result, said = two_rounds
    assert not result.interrupted and out.is_file()
    first = first_round_path(out)
    assert first.name == "r.round1.onlstm" and first.is_file()
    record = json.loads(state_path(out).read_text())
    assert record["first_round"]["path"] == first.name and record["first_round"]["epochs"] >= 1
    # the PCFGs that voted in the first round teach the second, beside the first span parser
    assert record["span_parser"]["teachers"] == ["r.round1.onlstm", "r.pcfg-seed1111.onlstm", "r.pcfg-seed1112.onlstm"]
    assert len(record["span_parser"]["teacher_agreement"]) == 3
    assert "student_check" in record["span_parser"] and "branching_agreement" in record["span_parser"]
    assert set(record["stage_seconds"]) == {"language_models", "span_parser", "second_round"}
    stage_2 = next(k for k, line in enumerate(said) if line.startswith("recipe: stage 2 of 3, the span parser"))
    stage_3 = next(k for k, line in enumerate(said) if line.startswith("recipe: stage 3 of 3, a second round"))
    assert stage_2 < stage_3 and f"→ {first}" in said[stage_2] and f"→ {out}" in said[stage_3]
    assert "r.round1.onlstm (the first span parser, on 4 models' votes) and 2 focused PCFGs" in result.summary()
    # the finished recipe keeps the first span parser (a teacher of --out), not its checkpoint
    assert not checkpoint_path(first).exists() and not checkpoint_path(out).exists()
    assert first.name in result.summary()


def test_time_a_second_round_leaves_is_said_as_its_own():
    """A recipe whose second round stopped on its validation loss says so of the time it left, not that its models
    ended before theirs."""
    from onlstm_cli.training.recipe.record import RecipeResult
    spent = {"language_models": 1800.0, "span_parser": 1200.0, "second_round": 90.0}
    state = RecipeState({"train": {"time_budget": 3600.0}}, [], {}, spent, {"path": "r.round1.onlstm"})
    text = RecipeResult(Path("r.onlstm"), state).stages_text()
    assert "the second round 1.5 min" in text and "8.5 min of the 60-min budget not spent (the second round" in text


def test_the_final_file_says_it_is_a_second_round(two_rounds):
    out, _, _ = two_rounds
    report = model_info(out)
    card = info_text(report)
    assert "a second round, on the first span parser's trees (r.round1.onlstm" in card
    assert ("the trees of the first span parser (r.round1.onlstm) and the 2 focused PCFGs' own trees weigh 1 each; "
            "no branching tree (auto gives none" in card)
    span = report["span_parser"]
    assert [p.rsplit("/", 1)[-1] for p in span["teachers"]] == [
        "r.round1.onlstm", "r.pcfg-seed1111.onlstm", "r.pcfg-seed1112.onlstm"]
    assert span["recipe"]["span_parser_teachers"] is True


def test_a_rerun_after_the_first_round_trains_only_the_second(two_rounds, tmp_path):
    """A recipe stopped once its first round was recorded goes on with the second alone: the language models, the
    PCFGs and the first span parser are not trained again."""
    import shutil
    out, _, _ = two_rounds
    copy = tmp_path / out.name
    for path in out.parent.glob("r.*"):
        shutil.copy(path, tmp_path / path.name)
    record = json.loads(state_path(copy).read_text())
    first = first_round_path(copy).read_bytes()
    record["span_parser"] = None
    for name in ("corpus", "valid"):  # the held-out split, as the copy's rerun makes it beside the copy
        record["options"][name] = str(tmp_path / record["options"][name].rsplit("/", 1)[-1])
    state_path(copy).write_text(json.dumps(record))
    copy.unlink()
    result, said = tiny_two_family_recipe(out.parent / "corpus.txt", copy, second_round=True)
    assert not result.interrupted and copy.is_file()
    assert not any("stage 1 of 3" in line or "stage 2 of 3" in line for line in said), said
    assert any(line.startswith("recipe: stage 3 of 3, a second round") for line in said), said
    assert first_round_path(copy).read_bytes() == first
    assert json.loads(state_path(copy).read_text())["span_parser"]["teachers"][0] == "r.round1.onlstm"


def test_the_first_span_parser_leaves_the_second_round_a_third_of_what_the_models_leave():
    plan = StagePlan(Budget(3600.0), 0.75, teachers=6, slots=3)
    state = RecipeState({}, [], None, {"language_models": 1800.0})
    plan.counted_until = time.time()  # the 1800 s counted: the recipe has spent them, no more
    assert reserve(plan, state) == pytest.approx(600.0)
    assert plan.span_parser_budget(state, 0.0, reserve(plan, state)) == pytest.approx(1200.0, abs=2)
    assert plan.span_parser_budget(state, 0.0) == pytest.approx(1800.0, abs=2)  # the second round's: the rest
    assert reserve(StagePlan(Budget(None), 0.75, teachers=6, slots=3), state) == 0.0


def test_one_round_from_the_command_line_and_from_an_older_record(tmp_path, monkeypatch):
    seen = recipes_the_command_line_makes(tmp_path, monkeypatch, [[], ["--one-round"], ["--two-rounds"]])
    assert [r.second_round for r in seen] == [RecipeConfig().second_round, False, True]
    older = {"recipe": {}, "span_parser": {}}
    assert as_recorded(older, RecipeConfig(), SelfTrainConfig())[0].second_round is False
    assert as_recorded({"recipe": {"second_round": True}, "span_parser": {}}, RecipeConfig(),
                       SelfTrainConfig())[0].second_round is True


def test_a_record_whose_first_round_is_not_an_object_is_refused_in_one_line(two_rounds, tmp_path):
    out, _, _ = two_rounds
    record = json.loads(state_path(out).read_text())
    record["first_round"] = ["not", "a", "round"]
    path = state_path(tmp_path / "r.onlstm")
    path.write_text(json.dumps(record))
    with pytest.raises(TrainingError, match="is not a recipe record.*first_round is not an object"):
        load_state(tmp_path / "r.onlstm", record["options"])


def test_the_second_round_vote_rule_names_its_branching_tree_as_the_first_round_does():
    """The second round's vote says the branching tree as the first round's does (voters.share_of_votes), save that
    `auto` gives none to a span parser's trees."""
    rule = second_round_rule("r.round1.onlstm", 3, 0.5)
    assert rule.startswith("a second round: a span's target is its share of the votes: the trees of the first span "
                           "parser (r.round1.onlstm) and the 3 focused PCFGs' own trees weigh 1 each")
    assert rule.endswith(", a branching tree (right-branching, weight 0.5)")
    assert second_round_rule("a", 2, 0).endswith("the 2 focused PCFGs' own trees weigh 1 each")
    assert "no branching tree (auto gives none" in second_round_rule("a", 2, "auto")


def test_the_stage_count_is_three_only_where_a_focused_pcfg_votes_beside_the_first_span_parser():
    """Stage 1 counts the stages the recipe plans; stage 2 those it runs: 2 where no focused PCFG votes."""
    recipe = RecipeConfig(families=("onlstm", "pcfg"))
    focused = {"seed": 1111, "family": "pcfg", "focused_on": ["r.lm-seed1111.onlstm"]}
    for voting, stages in (([focused], 3), ([{"seed": 1111, "family": "pcfg"}], 2)):
        run = SimpleNamespace(recipe=recipe, voters=lambda state, voting=voting: (voting, []))
        state = RecipeState({}, voting, None, {}, None)
        assert RecipeRun.stage_count(run) == 3
        assert RecipeRun.stage_count(run, state) == stages
    alone = SimpleNamespace(recipe=RecipeConfig(families=("onlstm", "pcfg"), second_round=False), voters=None)
    assert RecipeRun.stage_count(alone) == 2 and RecipeRun.stage_count(alone, state) == 2
