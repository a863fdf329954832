"""The last lines of a run whose validation curve swung at a constant rate (report.swinging_curve)."""
from __future__ import annotations

import onlstm_cli.training.lm.trainer
from conftest import TINY_MODEL, QuietReporter, tiny_train_config, write_corpus
from onlstm_cli.training.lm.report import swinging_curve
from onlstm_cli.training.lm.train import train_model


def epochs(*valid):
    return [{"epoch": k + 1, "train_ppl": 500.0, "valid_ppl": v} for k, v in enumerate(valid)]


def test_two_rises_of_more_than_a_tenth_are_said_with_their_count():
    line = swinging_curve(epochs(300.0, 340.0, 280.0, 320.0, 250.0), "constant")
    assert line.startswith("validation perplexity rose by more than 10% from one epoch to the next 2 times in 5 "
                           "epochs:")
    assert "--lr-schedule cosine" in line and "docs/training.md" in line


def test_a_steady_curve_one_rise_or_another_schedule_say_nothing():
    assert swinging_curve(epochs(300.0, 290.0, 280.0), "constant") is None
    assert swinging_curve(epochs(300.0, 340.0, 280.0, 300.0), "constant") is None  # one rise; +7% is no swing
    assert swinging_curve(epochs(300.0, 340.0, 280.0, 320.0), "cosine") is None
    unvalidated = [{"epoch": 1, "train_ppl": 9.0, "valid_ppl": None}] * 4
    assert swinging_curve(unvalidated, "constant") is None


def test_a_run_whose_curve_swings_ends_by_saying_so(tmp_path, monkeypatch):
    curve = iter([300.0, 340.0, 280.0, 320.0])
    monkeypatch.setattr(onlstm_cli.training.lm.trainer, "evaluate_perplexity", lambda *a, **k: next(curve))
    corpus = {"train": write_corpus(tmp_path / "train.txt", 40, seed=0),
              "valid": write_corpus(tmp_path / "valid.txt", 8, seed=1)}
    reporter = QuietReporter()
    train_model(corpus["train"], tmp_path / "m.onlstm", dict(TINY_MODEL), tiny_train_config(epochs=4),
                valid=corpus["valid"], reporter=reporter)
    said = [m for m in reporter.messages if m.startswith("validation perplexity rose")]
    assert len(said) == 1 and "2 times in 4 epochs" in said[0]
