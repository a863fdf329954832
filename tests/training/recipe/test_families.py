"""Issue 51: the recipe's unit is a model family. A toy family (toy_family.py: one module) registered with one table
line trains beside the ON-LSTM through the entry point the CLI uses (run_recipe), is stopped by SIGTERM mid-stage,
resumes from its checkpoint, votes, and the finished file's card names both families."""
from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from conftest import write_corpus
from toy_family import ToyFamily

from onlstm_cli.config import RecipeConfig, TrainConfig
from onlstm_cli.info import info_text, model_info
from onlstm_cli.modelfile import read_archive
from onlstm_cli.modelfile import load_model
from onlstm_cli.text.tokenizers import Tokenizer
from onlstm_cli.training.families import FAMILIES
from onlstm_cli.training.run.files import checkpoint_path
from onlstm_cli.training.recipe.runner import run_recipe, state_path
from onlstm_cli.training.run.clock import Budget

TINY_LM = dict(emb_size=20, hidden_size=20, n_layers=3, chunk_size=5)


def recipe(corpus: Path, out: Path, log):
    return run_recipe(corpus, out, None, TINY_LM,
                      TrainConfig(epochs=1, time_budget=None, batch_size=4, bptt=10, optimizer="adam", lr=0.01,
                                  threads=1),
                      dict(tokenizer=Tokenizer("ptb")), RecipeConfig(seeds=2, side_by_side=1, families=("onlstm", "toy")),
                      log=log, budget=Budget(None))


def test_a_family_registered_by_one_table_line_trains_votes_and_resumes_in_the_recipe(tmp_path, monkeypatch):
    monkeypatch.setitem(FAMILIES, "toy", ToyFamily)  # the table line
    corpus = write_corpus(tmp_path / "corpus.txt", 200, seed=5)
    out = tmp_path / "mixed.onlstm"
    monkeypatch.setattr(ToyFamily, "interrupt_at", 3)
    said = []
    first = recipe(corpus, out, said.append)
    assert first.interrupted and first.stop_signal == signal.SIGTERM
    record = json.loads(state_path(out).read_text())
    assert [(t["family"], t["seed"]) for t in record["teachers"]] == [("onlstm", 1111), ("onlstm", 1112)]
    toy = ToyFamily.path(out, 1111)
    assert json.loads(checkpoint_path(toy).read_text()) == {"step": 3} and not toy.exists()

    monkeypatch.setattr(ToyFamily, "interrupt_at", None)
    said.clear()
    second = recipe(corpus, out, said.append)
    assert not second.interrupted and out.is_file(), said
    assert any(f"toy model 3 of 4 (seed 1111) → {toy}, resumed from its checkpoint" in line for line in said), said
    record = json.loads(state_path(out).read_text())
    assert record["version"] == 2
    assert [(t["family"], t["seed"]) for t in record["teachers"]] == [
        ("onlstm", 1111), ("onlstm", 1112), ("toy", 1111), ("toy", 1112)]
    assert [t.get("health") for t in record["teachers"][2:]] == [1.1, 1.0]  # the toy's own figure, by seed
    assert all(t["votes"] for t in record["teachers"])
    assert load_model(out).span_parser is not None
    assert str(toy) in read_archive(out)["span_parser"]["meta"]["teacher"]  # the toy voted
    card = info_text(model_info(out))
    assert "toy, health 1.1" in card and "valid ppl" in card


def test_an_unknown_family_is_refused_in_one_line(tmp_path):
    from onlstm_cli.errors import TrainingError
    corpus = write_corpus(tmp_path / "corpus.txt", 40, seed=5)
    with pytest.raises(TrainingError, match="no model family dop: the families are onlstm, pcfg"):
        run_recipe(corpus, tmp_path / "m.onlstm", None, TINY_LM, TrainConfig(), {},
                   RecipeConfig(seeds=2, families=("onlstm", "dop")))


def test_a_recipe_of_a_family_without_a_language_model_ships_a_span_parser_of_its_own(tmp_path, monkeypatch):
    """No teacher hosts the student: it is written as a span parser file (kind "span"), and the card says which
    family taught it."""
    monkeypatch.setitem(FAMILIES, "toy", ToyFamily)
    corpus = write_corpus(tmp_path / "corpus.txt", 200, seed=5)
    out = tmp_path / "toy.onlstm"
    result = run_recipe(corpus, out, None, TINY_LM, TrainConfig(time_budget=None), dict(tokenizer=Tokenizer("ptb")),
                        RecipeConfig(seeds=2, families=("toy",)), log=lambda line: None)
    assert not result.interrupted
    student = load_model(out)
    assert student.kind == "span" and student.model is None and student.span_parser is not None
    card = info_text(model_info(out))
    assert "a span parser without a language model" in card and "toy, health 1.1" in card


def test_a_model_that_stopped_early_is_said_so_as_it_ends(tmp_path, monkeypatch):
    """A family's run that its validation figure stopped (a PCFG's --patience) ends with a line that says so, and
    one that did not with none."""
    monkeypatch.setitem(FAMILIES, "toy", ToyFamily)
    corpus = write_corpus(tmp_path / "corpus.txt", 200, seed=5)
    for stops_early, out in ((4, tmp_path / "early.onlstm"), (0, tmp_path / "whole.onlstm")):
        monkeypatch.setattr(ToyFamily, "stops_early", stops_early)
        said = []
        run_recipe(corpus, out, None, TINY_LM, TrainConfig(time_budget=None), dict(tokenizer=Tokenizer("ptb")),
                   RecipeConfig(seeds=2, side_by_side=1, families=("toy",)), log=said.append)
        done = [line for line in said if line.startswith("recipe: toy model") and " done: " in line]
        assert len(done) == 2, said
        assert all(("(stopped early: no better for 4 epochs; the time it leaves goes to what trains after it)"
                    in line) == bool(stops_early) for line in done), done
