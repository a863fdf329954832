"""`--families auto`, the recipe's default: ON-LSTMs and PCFGs where the training text is small for its budget,
ON-LSTMs alone where it is large; a resumed recipe keeps the families it began with, and the line that says why
comes only once the record has been read."""
from __future__ import annotations

import json
import re
import sys

import pytest

from conftest import write_corpus

from onlstm_cli.config import RecipeConfig, SelfTrainConfig, TrainConfig
from onlstm_cli.errors import TrainingError
from onlstm_cli.text.tokenizers import Tokenizer
from onlstm_cli.training.recipe.families_auto import auto_families, corpus_words
from onlstm_cli.training.recipe.record import recorded_families
from onlstm_cli.training.recipe.runner import RecipeResult, RecipeRun, run_recipe, state_path
from onlstm_cli.training.run.clock import Budget


def test_words_are_counted_as_wc_counts_them_with_each_cjk_character_one(tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("the cat  sat\n\n爱真的需要勇气 ok\n  ,\n", encoding="utf-8")
    assert corpus_words(corpus) == 3 + 7 + 1 + 1


def test_both_families_below_the_line_per_hour_of_budget_and_the_language_models_alone_from_it():
    assert auto_families(30_000, 3600.0, 200_000)[0] == ("onlstm", "pcfg")
    assert auto_families(200_000, 3600.0, 200_000)[0] == ("onlstm",)
    assert auto_families(300_000, 2 * 3600.0, 200_000)[0] == ("onlstm", "pcfg")  # 150,000 an hour
    families, why = auto_families(40_000, 600.0, 200_000)  # 240,000 an hour in ten minutes
    assert families == ("onlstm",) and "40,000 words for a 10-minute budget" in why
    assert "for a 2-hour budget" in auto_families(300_000, 2 * 3600.0, 200_000)[1]
    families, why = auto_families(250_000, None, 200_000)  # no budget: read as one hour
    assert families == ("onlstm",) and "250,000 words" in why and "without a budget" in why


@pytest.mark.parametrize("given, expected", [("auto", "auto"), (("auto",), "auto"), (("onlstm",), ("onlstm",))])
def test_auto_is_the_default_and_is_checked(given, expected):
    assert RecipeConfig().check().families == "auto"
    assert RecipeConfig(families=given).check().families == expected


@pytest.mark.parametrize("given, said", [(("auto", "pcfg"), "auto chooses them, alone"),
                                         ("onlstm", "name them (onlstm,pcfg) or give auto")])
def test_auto_beside_a_family_or_a_bare_name_is_refused_in_one_line(given, said):
    with pytest.raises(TrainingError, match=re.escape(said)):
        RecipeConfig(families=given).check()


def record(out, recipe_options: dict):
    options = {"recipe": recipe_options, "span_parser": {}}
    state_path(out).write_text(json.dumps({"version": 2, "options": options, "teachers": [], "span_parser": None,
                                           "stage_seconds": {}}), encoding="utf-8")


def test_a_resumed_recipe_keeps_its_families_and_an_older_record_is_an_onlstm_recipe(tmp_path):
    out = tmp_path / "r.onlstm"
    assert recorded_families(out) is None
    record(out, {"families": ["onlstm", "pcfg"]})
    assert recorded_families(out) == ("onlstm", "pcfg")
    record(out, {"seeds": 2})  # recorded before the recipe had families
    assert recorded_families(out) == ("onlstm",)
    state_path(out).write_text('{"options": ', encoding="utf-8")  # load_state refuses it, in its own words
    assert recorded_families(out) is None


def stopped_after_the_record(monkeypatch) -> list:
    """RecipeRun's stages as a stand-in that keeps the families it was given: what the recipe chose, untrained."""
    chosen = []
    monkeypatch.setattr(RecipeRun, "stages", lambda run, state: chosen.append(run.recipe.families)
                        or RecipeResult(run.out, state, interrupted=True))
    return chosen


def auto_recipe(corpus, out, seconds, said):
    return run_recipe(corpus, out, None, dict(emb_size=20, hidden_size=20, n_layers=3, chunk_size=5),
                      TrainConfig(epochs=1, time_budget=seconds, threads=1), dict(tokenizer=Tokenizer("ptb")),
                      RecipeConfig(seeds=2), SelfTrainConfig(), log=said.append, budget=Budget(seconds))


def test_the_recipe_chooses_by_the_words_an_hour_and_says_so(tmp_path, monkeypatch):
    chosen = stopped_after_the_record(monkeypatch)
    corpus = write_corpus(tmp_path / "corpus.txt", 40, seed=3)
    words = corpus_words(corpus)
    said = []
    auto_recipe(corpus, tmp_path / "small.onlstm", 3600.0, said)
    # the same text in a budget so short that it is more than 200,000 words an hour
    auto_recipe(corpus, tmp_path / "short.onlstm", 3600.0 * words / 300_000, said)
    assert chosen == [("onlstm", "pcfg"), ("onlstm",)]
    assert said[0].startswith("recipe: families onlstm,pcfg (--families auto: ") and f"{words:,} words" in said[0]
    assert any(line.startswith("recipe: families onlstm (--families auto: ") for line in said)


def test_a_rerun_goes_on_with_the_families_its_record_names_without_a_second_line(tmp_path, monkeypatch):
    chosen = stopped_after_the_record(monkeypatch)
    corpus = write_corpus(tmp_path / "corpus.txt", 40, seed=3)
    out, said = tmp_path / "r.onlstm", []
    record(out, {"families": ["onlstm"]})  # begun as ON-LSTMs alone (under a shorter budget, say)
    auto_recipe(corpus, out, 3600.0, said)  # a budget in which this text would add PCFGs
    assert chosen == [("onlstm",)] and not any("--families auto" in line for line in said)


def test_the_command_line_takes_auto_and_gives_it_by_default(tmp_path, monkeypatch):
    import onlstm_cli.training.recipe.runner as recipe_module
    from onlstm_cli.cli.commands import main
    corpus = write_corpus(tmp_path / "corpus.txt", 30, seed=7)
    seen = []
    monkeypatch.setattr(recipe_module, "run_recipe", lambda *args, **kwargs: seen.append(kwargs["recipe"]) or sys.exit(0))
    for extra in ([], ["--families", "auto"], ["--families", "onlstm"]):
        monkeypatch.setattr(sys, "argv", ["onlstm", "train", str(corpus), "--seeds", "2",
                                          "--out", str(tmp_path / "r.onlstm"), *extra])
        with pytest.raises(SystemExit):
            main()
    assert [r.check().families for r in seen] == ["auto", "auto", ("onlstm",)]
