"""What `onlstm train` says at its start of the choices made for the user (issue 53): the recipe's default
--time-budget, a budget given without a unit, and a run of one model without validation text."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from conftest import write_corpus
from onlstm_cli.cli.commands import app
from onlstm_cli.cli.options import duration_text
from onlstm_cli.config import TrainConfig

TINY = ["--emb-size", "20", "--hidden-size", "20", "--chunk-size", "5", "--batch-size", "4", "--bptt", "10",
        "--optimizer", "adam", "--lr", "0.01", "--threads", "1", "--device", "cpu", "--epochs", "1"]
NO_VALID = "no --valid: nothing is validated on"


def invoke(args: list) -> SimpleNamespace:
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert "Traceback" not in result.output
    return result


def stand_in(module: str, name: str, monkeypatch, seen: dict):
    """`module.name` (a run: run_recipe, train_pcfg) as a stand-in that records its budget, says a line as the
    run's first and ends at once."""
    import importlib

    def run(*args, budget, **kwargs):
        seen["budget"] = budget.seconds
        (kwargs.get("log") or kwargs["reporter"].message)("the run's first line")
        return SimpleNamespace(interrupted=False, stop_signal=0, summary=lambda *valid: "done")
    monkeypatch.setattr(importlib.import_module(module), name, run)


def test_a_recipe_without_a_time_budget_says_it_takes_the_default_first(tmp_path, monkeypatch):
    seen: dict = {}
    stand_in("onlstm_cli.training.recipe.runner", "run_recipe", monkeypatch, seen)
    corpus = write_corpus(tmp_path / "c.txt", 30)
    result = invoke(["train", corpus, "-o", tmp_path / "r.onlstm", "--seeds", "2", *TINY])
    assert result.exit_code == 0, result.output
    default = TrainConfig().time_budget
    lines = result.stderr.splitlines()
    assert lines[0] == f"no --time-budget: the recipe takes its default, {duration_text(default)}"
    assert seen["budget"] == default and NO_VALID not in result.stderr  # the recipe holds lines out itself
    given = invoke(["train", corpus, "-o", tmp_path / "r.onlstm", "--seeds", "2", *TINY, "--time-budget", "5m"])
    assert given.exit_code == 0 and seen["budget"] == 300.0
    assert "--time-budget" not in given.stderr


def test_a_time_budget_without_a_unit_is_seconds_with_a_warning_and_a_run_without_valid_says_so(tmp_path):
    corpus, valid = write_corpus(tmp_path / "c.txt", 20, seed=2), write_corpus(tmp_path / "v.txt", 6, seed=3)
    bare = invoke(["train", corpus, "-o", tmp_path / "a.onlstm", *TINY, "--time-budget", "6", "--valid", valid])
    assert bare.exit_code == 0, bare.output
    lines = bare.stderr.splitlines()
    assert lines[0] == "warning: --time-budget 6 has no unit, so it is 6 seconds; give a unit, e.g. 6s, 6m, 6h"
    assert any(line.startswith("corpus: ") and "time budget 6.0 s" in line for line in lines)
    assert NO_VALID not in bare.stderr
    unit = invoke(["train", corpus, "-o", tmp_path / "b.onlstm", *TINY, "--time-budget", "6s"])
    assert unit.exit_code == 0, unit.output
    assert "has no unit" not in unit.stderr
    # without --valid, the run says what --out gets after the language it took, before the run's own lines
    notes = unit.stderr.splitlines()
    assert notes[0].startswith("language en, tokenizer ptb") and notes[1].startswith(NO_VALID)
    assert "every 20th line" in notes[1] and notes[2].startswith("corpus: ")


def test_a_checkpoint_interval_without_a_unit_is_seconds_with_a_warning(tmp_path):
    corpus = write_corpus(tmp_path / "c.txt", 20, seed=2)
    bare = invoke(["train", corpus, "-o", tmp_path / "a.onlstm", *TINY, "--time-budget", "3s",
                   "--checkpoint-every", "5"])
    assert bare.exit_code == 0, bare.output
    assert bare.stderr.splitlines()[0] == ("warning: --checkpoint-every 5 has no unit, so it is 5 seconds; give a "
                                           "unit, e.g. 5s, 5m, 5h")
    unit = invoke(["train", corpus, "-o", tmp_path / "b.onlstm", *TINY, "--time-budget", "3s",
                   "--checkpoint-every", "5m"])
    assert unit.exit_code == 0, unit.output
    assert "has no unit" not in unit.stderr


@pytest.mark.parametrize("budget", ["90s", "45m", "1.5h", "none", "NONE"])
def test_a_budget_with_a_unit_or_none_gives_no_warning(budget):
    from onlstm_cli.cli.options import given_budget
    assert given_budget(budget, recipe=True)[1] == []
    assert given_budget(None, recipe=False) == (TrainConfig().time_budget, [])


def test_a_pcfg_without_valid_says_what_it_keeps(tmp_path, monkeypatch):
    seen: dict = {}
    stand_in("onlstm_cli.training.pcfg.train", "train_pcfg", monkeypatch, seen)
    corpus = write_corpus(tmp_path / "c.txt", 10)
    result = invoke(["train", corpus, "-o", tmp_path / "p.onlstm", "--family", "pcfg", "--epochs", "1",
                     "--time-budget", "2s"])
    assert result.exit_code == 0, result.output
    lines = result.stderr.splitlines()
    assert lines[0].startswith("language en") and lines[1].startswith(NO_VALID) and seen["budget"] == 2.0
