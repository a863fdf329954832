"""RecipeConfig.more_pcfgs: once the focused PCFGs have ended, the recipe trains more PCFGs in the time stage 1 has
left (K unfocused ones reading rare words by their endings, then K more focused ones), in the rounds that fit;
they vote as the others do, and a recipe recorded before the option goes on without them."""
from __future__ import annotations

import json
from types import SimpleNamespace

from conftest import write_corpus
from test_pcfg_family import recipes_the_command_line_makes, tiny_two_family_recipe

from onlstm_cli.config import ENDING_CHARS, RecipeConfig, SelfTrainConfig
from onlstm_cli.info import info_text, model_info
from onlstm_cli.modelfile import load_model
from onlstm_cli.training.families import FAMILIES
from onlstm_cli.training.recipe.record import RecipeState
from onlstm_cli.training.recipe.runner import as_recorded, state_path, teacher_files
from onlstm_cli.training.recipe.stages import TeacherStage, more_pcfgs


def test_which_more_pcfgs_a_recipe_may_train():
    both = RecipeConfig(families=("onlstm", "pcfg"), more_pcfgs=True)
    assert more_pcfgs(both, [1111, 1112, 1113]) == [
        ("pcfg-endings", 1111), ("pcfg-endings", 1112), ("pcfg-endings", 1113),
        ("pcfg", 1114), ("pcfg", 1115), ("pcfg", 1116)]
    named = RecipeConfig(families=("onlstm", "pcfg", "pcfg-endings"), more_pcfgs=True)  # its ending PCFGs are already planned
    assert more_pcfgs(named, [7, 8]) == [("pcfg", 9), ("pcfg", 10)]
    for off in (RecipeConfig(families=("onlstm", "pcfg")),  # the default: off
                RecipeConfig(families=("onlstm", "pcfg"), more_pcfgs=True, focus_pcfgs=False),  # nothing focused
                RecipeConfig(families=("onlstm",), more_pcfgs=True), RecipeConfig(families=("pcfg",), more_pcfgs=True)):
        assert more_pcfgs(off, [1111, 1112]) == []


def test_the_recipe_locks_and_tidies_the_more_pcfgs_files_too(tmp_path):
    out = tmp_path / "r.onlstm"
    names = [path.name for _, path in teacher_files(out, RecipeConfig(families=("onlstm", "pcfg"), more_pcfgs=True),
                                                       [1, 2])]
    assert names == ["r.lm-seed1.onlstm", "r.lm-seed2.onlstm", "r.pcfg-seed1.onlstm", "r.pcfg-seed2.onlstm",
                     "r.pcfg-endings-seed1.onlstm", "r.pcfg-endings-seed2.onlstm", "r.pcfg-seed3.onlstm",
                     "r.pcfg-seed4.onlstm"]


class FakeClock:
    def __init__(self, left):
        self.left = left

    def stage_one_left(self, state):
        return self.left


def stage_with(tmp_path, left, took, span_parser=None, slots=2):
    """A TeacherStage whose stage 1 has `left` seconds left after two focused PCFGs that took `took` seconds each;
    its rounds are caught instead of trained: (the stage, the rounds it would train, its log)."""
    said, rounds = [], []
    run = SimpleNamespace(recipe=RecipeConfig(seeds=2, families=("onlstm", "pcfg"), more_pcfgs=True),
                          seeds=lambda: [1111, 1112],
                          out=tmp_path / "r.onlstm", corpus=tmp_path / "c.txt", valid=tmp_path / "v.txt",
                          clock=FakeClock(left), slots=lambda: slots, log=said.append, model_config={},
                          train_config=None, lm_options={}, self_train=None)
    run.families = [FAMILIES[name](run) for name in ("onlstm", "pcfg", "pcfg-endings")]
    run.teacher_count = lambda: 4
    teachers = ([{"family": "onlstm", "seed": s, "path": f"r.lm-seed{s}.onlstm", "valid_ppl": 100.0} for s in (1111, 1112)]
                + [{"family": "pcfg", "seed": s, "path": f"r.pcfg-seed{s}.onlstm", "valid_ppl": 500.0, "seconds": took,
                    "focused_on": ["r.lm-seed1111.onlstm"]} for s in (1111, 1112)])
    stage = TeacherStage(run, RecipeState({}, teachers, span_parser, {}))
    stage.train_round = lambda jobs, later_rounds=0: (rounds.append(jobs) if jobs else None) or 0
    return stage, rounds, said


def test_the_more_pcfgs_train_in_the_rounds_the_time_left_fits(tmp_path):
    stage, rounds, said = stage_with(tmp_path, left=250.0, took=100.0)  # two rounds of two fit
    assert stage.train() == 0
    [jobs] = rounds
    assert [(job.family.name, job.seed) for job in jobs] == [("pcfg-endings", 1111), ("pcfg-endings", 1112),
                                                             ("pcfg", 1113), ("pcfg", 1114)]
    assert [job.number for job in jobs] == [5, 6, 7, 8] and {job.total for job in jobs} == {8}
    assert [bool(job.focus) for job in jobs] == [False, False, True, True]  # the more focused ones: on the votes
    assert jobs[2].focus == (tmp_path / "r.lm-seed1111.onlstm", tmp_path / "r.lm-seed1112.onlstm")
    assert any("4 more PCFGs in the time stage 1 has left" in line
               and line.endswith(": 2 unfocused reading endings, then 2 focused") for line in said), said

    stage, rounds, said = stage_with(tmp_path, left=150.0, took=100.0)  # one round fits: the ending PCFGs
    stage.train()
    assert [(job.family.name, job.seed) for job in rounds[0]] == [("pcfg-endings", 1111), ("pcfg-endings", 1112)]
    assert said[-1].endswith(": 2 unfocused reading endings"), said


def test_no_more_pcfgs_where_no_round_fits_or_the_span_parser_has_trained(tmp_path):
    stage, rounds, said = stage_with(tmp_path, left=90.0, took=100.0)  # a larger text: the PCFGs used their time
    assert stage.train() == 0 and rounds == []
    assert any("less than a focused PCFG took" in line and "no more PCFGs" in line for line in said), said
    stage, rounds, said = stage_with(tmp_path, left=900.0, took=100.0, span_parser={"epochs": 3})
    assert stage.train() == 0 and rounds == []  # its votes are trained on: no teacher joins them


def test_a_recipe_trains_votes_with_and_records_the_more_pcfgs(tmp_path):
    out = tmp_path / "more.onlstm"
    result, said = tiny_two_family_recipe(write_corpus(tmp_path / "corpus.txt", 60, seed=8), out, more_pcfgs=True)
    assert not result.interrupted and out.is_file()
    record = json.loads(state_path(out).read_text())
    assert record["options"]["recipe"]["more_pcfgs"] is True
    assert [(t["family"], t["seed"]) for t in record["teachers"]] == [
        ("onlstm", 1111), ("onlstm", 1112), ("pcfg", 1111), ("pcfg", 1112), ("pcfg", 1113), ("pcfg", 1114),
        ("pcfg-endings", 1111), ("pcfg-endings", 1112)]
    by_name = {(t["family"], t["seed"]): t for t in record["teachers"]}
    endings = load_model(out.with_name(by_name["pcfg-endings", 1111]["path"]))
    assert endings.kind == "pcfg" and endings.pcfg.config.endings == ENDING_CHARS
    assert "focused_on" not in by_name["pcfg-endings", 1111] and by_name["pcfg", 1114]["focused_on"]
    assert load_model(out.with_name(by_name["pcfg", 1114]["path"])).pcfg.config.endings == 0
    assert all(t["votes"] for t in record["teachers"])
    assert "span parser on 8 models' votes" in result.summary()
    assert f"seed 1111 (pcfg-endings, valid ppl {by_name['pcfg-endings', 1111]['valid_ppl']}" in info_text(model_info(out))
    assert not any(path.name.endswith(".ckpt") for path in tmp_path.iterdir())  # each one's checkpoint tidied


def test_an_older_record_goes_on_without_more_pcfgs():
    assert as_recorded({"recipe": {}, "span_parser": {}}, RecipeConfig(), SelfTrainConfig())[0].more_pcfgs is False
    assert as_recorded({"recipe": {"more_pcfgs": True}, "span_parser": {}}, RecipeConfig(more_pcfgs=True),
                       SelfTrainConfig())[0].more_pcfgs is True


def test_the_command_line_turns_more_pcfgs_off_and_on(tmp_path, monkeypatch):
    seen = recipes_the_command_line_makes(tmp_path, monkeypatch, [[], ["--no-more-pcfgs"], ["--more-pcfgs"]])
    assert [r.more_pcfgs for r in seen] == [RecipeConfig().more_pcfgs, False, True]
