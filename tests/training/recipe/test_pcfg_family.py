"""Issue 52: `train --seeds 2 --families onlstm,pcfg`: PCFGs train after the language models, focused on their votes
(or beside them, with --no-focus-pcfgs), vote with their own trees, and the record, the card and the end line name
both families."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from conftest import write_corpus

from onlstm_cli.config import RecipeConfig, SelfTrainConfig, TrainConfig
from onlstm_cli.info import info_text, model_info
from onlstm_cli.modelfile import load_model
from onlstm_cli.text.tokenizers import Tokenizer
from onlstm_cli.training.recipe.runner import run_recipe, state_path
from onlstm_cli.training.run.clock import Budget


def tiny_two_family_recipe(corpus: Path, out: Path, **recipe) -> tuple:
    """A recipe of two tiny ON-LSTMs and two PCFGs (and, with more_pcfgs=True, the four more PCFGs), one epoch each,
    one after another, then its span parser (and, with second_round=True, a second round): its result and its log."""
    said = []
    result = run_recipe(corpus, out, None, dict(emb_size=20, hidden_size=20, n_layers=3, chunk_size=5),
                        TrainConfig(epochs=1, time_budget=None, batch_size=4, bptt=10, optimizer="adam", lr=0.01,
                                    threads=1),
                        dict(tokenizer=Tokenizer("ptb")),
                        RecipeConfig(seeds=2, side_by_side=1, families=("onlstm", "pcfg"),
                                     **{"more_pcfgs": False, "second_round": False, **recipe}),
                        # one epoch on a toy text may leave a PCFG a branching rule, which would not vote
                        self_train=SelfTrainConfig(max_branching_agreement=100.0),
                        log=said.append, budget=Budget(None))
    return result, said


def test_pcfgs_train_and_vote_beside_the_language_models(tmp_path):
    """By default (RecipeConfig.focus_pcfgs) the PCFGs train after the language models, each focused on the trees
    their votes propose: the record, the log and each PCFG's file say so."""
    out = tmp_path / "mixed.onlstm"
    result, said = tiny_two_family_recipe(write_corpus(tmp_path / "corpus.txt", 100, seed=5), out)
    assert not result.interrupted and out.is_file()
    record = json.loads(state_path(out).read_text())
    assert [(t["family"], t["seed"]) for t in record["teachers"]] == [
        ("onlstm", 1111), ("onlstm", 1112), ("pcfg", 1111), ("pcfg", 1112)]
    pcfgs = [out.with_name(t["path"]) for t in record["teachers"][2:]]
    assert [load_model(p).kind for p in pcfgs] == ["pcfg", "pcfg"]
    assert all(t["valid_ppl"] > 1 and t["votes"] for t in record["teachers"])
    assert any("PCFG 3 of 4 (seed 1111)" in line for line in said), said
    assert [t.get("focused_on") for t in record["teachers"]] == [None, None] + [
        ["mixed.lm-seed1111.onlstm", "mixed.lm-seed1112.onlstm"]] * 2
    focusing = [k for k, line in enumerate(said) if "train on the trees that the votes of 2 language models" in line]
    second_lm_done = next(k for k, line in enumerate(said) if "language model 2 of 4 (seed 1112) done" in line)
    assert focusing and focusing[0] > second_lm_done, said  # after the language models, not beside them
    for pcfg in pcfgs:
        focus = model_info(pcfg)["pcfg"]["focus"]
        assert [Path(t).name for t in focus["teachers"]] == ["mixed.lm-seed1111.onlstm", "mixed.lm-seed1112.onlstm"]
    assert any("mixed.pcfg-seed1111.onlstm, mixed.pcfg-seed1112.onlstm with their own trees" in line
               for line in said), said
    assert "span parser on 4 models' votes" in result.summary() and "beside it 4 models (" in result.summary()
    card = info_text(model_info(out))
    assert "the 2 other models' own trees weigh 1 each" in card
    assert f"seed 1111 (pcfg, valid ppl {record['teachers'][2]['valid_ppl']}" in card


def test_without_focus_the_pcfgs_train_on_the_text_alone_and_an_older_record_goes_on_so(tmp_path):
    """--no-focus-pcfgs: the PCFGs are trained as `train --family pcfg` trains them, nothing focused; a record
    written before the option existed goes on that way too (as_recorded)."""
    from onlstm_cli.training.recipe.runner import as_recorded
    out = tmp_path / "plain.onlstm"
    result, said = tiny_two_family_recipe(write_corpus(tmp_path / "corpus.txt", 60, seed=6), out, focus_pcfgs=False)
    assert not result.interrupted
    record = json.loads(state_path(out).read_text())
    assert record["options"]["recipe"]["focus_pcfgs"] is False
    assert not any("focused_on" in t for t in record["teachers"]) and len(record["teachers"]) == 4
    assert not any("parse-focusing" in line for line in said), said
    assert model_info(out.with_name(record["teachers"][2]["path"]))["pcfg"].get("focus") is None
    older = {"recipe": {}, "span_parser": {}}
    assert as_recorded(older, RecipeConfig(), SelfTrainConfig())[0].focus_pcfgs is False
    assert as_recorded({"recipe": {"focus_pcfgs": True}, "span_parser": {}}, RecipeConfig(),
                       SelfTrainConfig())[0].focus_pcfgs is True


def test_the_focused_round_gets_the_rounds_after_the_language_models():
    """The stage's time left is shared out in rounds: the language models' first, the focused PCFGs' after (their
    deadlines are set as they start, from what is left)."""
    import time
    from onlstm_cli.training.recipe.budget import StagePlan
    from onlstm_cli.training.recipe.record import RecipeState
    plan = StagePlan(Budget(400.0), 0.75, teachers=6, slots=3)
    state = RecipeState({}, [], None, {})
    now = time.time()
    alone, with_later = plan.lm_deadlines(state, 3), plan.lm_deadlines(state, 3, later_rounds=1)
    assert all(abs(end - now - 300) < 2 for end in alone)            # the whole stage: 75 % of 400 s
    assert all(abs(end - now - 150) < 2 for end in with_later)       # its first half: the PCFGs' round comes after
    sequential = StagePlan(Budget(400.0), 0.75, teachers=6, slots=1).lm_deadlines(state, 3, later_rounds=3)
    assert [round(end - now) for end in sequential] == [50, 100, 150]


def recipes_the_command_line_makes(tmp_path, monkeypatch, extras: list[list[str]]) -> list[RecipeConfig]:
    """The RecipeConfig `train --seeds 2 --families onlstm,pcfg` hands the recipe with each of `extras` added."""
    import onlstm_cli.training.recipe.runner as recipe_module
    from onlstm_cli.cli.commands import main
    corpus = write_corpus(tmp_path / "corpus.txt", 30, seed=7)
    seen = []
    monkeypatch.setattr(recipe_module, "run_recipe", lambda *args, **kwargs: seen.append(kwargs["recipe"]) or sys.exit(0))
    for extra in extras:
        monkeypatch.setattr(sys, "argv", ["onlstm", "train", str(corpus), "--seeds", "2", "--families", "onlstm,pcfg",
                                          "--out", str(tmp_path / "r.onlstm"), *extra])
        with pytest.raises(SystemExit):
            main()
    return seen


def test_the_command_line_turns_the_focus_off_and_on(tmp_path, monkeypatch):
    """`--no-focus-pcfgs` reaches the recipe's RecipeConfig; without it the default (RecipeConfig's) does."""
    seen = recipes_the_command_line_makes(tmp_path, monkeypatch, [[], ["--no-focus-pcfgs"], ["--focus-pcfgs"]])
    assert [r.focus_pcfgs for r in seen] == [RecipeConfig().focus_pcfgs, False, True]
    assert all(r.families == ("onlstm", "pcfg") for r in seen)
