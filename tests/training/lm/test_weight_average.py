"""The moving average of the weights (--average-steps): what validation scores, what the file keeps, what a
resumed run goes on from, and a damaged one refused."""
from __future__ import annotations

import pytest
import torch

from conftest import TINY_MODEL, QuietReporter, tiny_train_config, write_corpus
from onlstm_cli.errors import TrainingError
from onlstm_cli.modelfile import CHECKPOINT_FORMAT, atomic_save, load_model, read_archive
from onlstm_cli.training.lm.steps import WeightAverage
from onlstm_cli.training.lm.train import checkpoint_path, train_model


@pytest.fixture
def corpus(tmp_path):
    return {"train": write_corpus(tmp_path / "train.txt", 60, seed=0),
            "valid": write_corpus(tmp_path / "valid.txt", 12, seed=1)}


def train(corpus, out, resume=None, **config):
    reporter = QuietReporter()
    result = train_model(corpus["train"], out, dict(TINY_MODEL), tiny_train_config(**config),
                         valid=corpus["valid"], resume=resume, reporter=reporter)
    return result, reporter


def test_the_average_follows_the_weights_the_first_steps_weighing_more():
    weight = torch.nn.Parameter(torch.zeros(3))
    average = WeightAverage([("w", weight)], steps=100)
    with torch.no_grad():
        weight.fill_(1.0)
    average.update()  # the first step's decay is 2/11, not 0.99: the initial weights are mostly forgotten
    assert average.weights[0] == pytest.approx(torch.full((3,), 9 / 11))
    for _ in range(1000):
        average.update()
    assert average.weights[0] == pytest.approx(torch.ones(3), abs=1e-4)
    with torch.no_grad():
        weight.fill_(2.0)
    average.update()  # by now the decay is 1 - 1/100
    assert average.weights[0] == pytest.approx(torch.full((3,), 1.01), abs=1e-4)
    assert average.count == 1002


def test_the_file_keeps_the_average_and_a_resumed_run_goes_on_averaging(corpus, tmp_path):
    out = tmp_path / "m.onlstm"
    result, reporter = train(corpus, out, epochs=2, optimizer="sgd", lr=1.0, average_steps=5)
    ckpt = read_archive(checkpoint_path(out), CHECKPOINT_FORMAT)
    saved = ckpt["weight_average"]
    assert saved["count"] == reporter.progress_calls  # one update a good step
    current = ckpt["state_dict"]
    assert set(saved["weights"]) == set(current)
    assert any(not torch.allclose(saved["weights"][n], current[n].float()) for n in current)
    if result.history[-1]["valid_ppl"] == result.best_valid_ppl:  # the last epoch's model is the file's
        kept = dict(load_model(out).model.named_parameters())
        for name, weight in saved["weights"].items():
            assert torch.allclose(kept[name].float(), weight, atol=1e-3), name  # the average, not the weights
    _, resumed = train(corpus, out, resume=checkpoint_path(out), epochs=3, optimizer="sgd", lr=1.0, average_steps=5)
    again = read_archive(checkpoint_path(out), CHECKPOINT_FORMAT)["weight_average"]
    assert again["count"] == saved["count"] + resumed.progress_calls


def test_without_average_steps_the_checkpoint_keeps_no_average(corpus, tmp_path):
    out = tmp_path / "m.onlstm"
    train(corpus, out, epochs=1, optimizer="sgd", lr=1.0)
    assert "weight_average" not in read_archive(checkpoint_path(out), CHECKPOINT_FORMAT)


def test_a_damaged_average_is_refused_in_one_line(corpus, tmp_path):
    out = tmp_path / "m.onlstm"
    train(corpus, out, epochs=1, optimizer="sgd", lr=1.0, average_steps=5)
    ckpt = read_archive(checkpoint_path(out), CHECKPOINT_FORMAT)
    name = next(iter(ckpt["weight_average"]["weights"]))
    ckpt["weight_average"]["weights"][name] = torch.zeros(10 ** 4)  # not its weight's shape
    atomic_save(ckpt, checkpoint_path(out))
    with pytest.raises(TrainingError, match="average of the weights does not fit"):
        train(corpus, out, resume=checkpoint_path(out), epochs=2, optimizer="sgd", lr=1.0, average_steps=5)


def test_a_negative_average_is_refused():
    with pytest.raises(TrainingError, match="--average-steps"):
        tiny_train_config(average_steps=-1).check()


def test_info_says_a_model_was_kept_as_its_average_and_says_nothing_of_a_zero():
    from onlstm_cli.info import options_text
    assert "moving average of its weights over about 100 steps" in options_text({"lr": 30, "average_steps": 100})
    assert "average" not in options_text({"lr": 30, "average_steps": 0})
