"""`onlstm train --family pcfg`: a PCFG file that parse, evaluate, info and --teacher read; the run layer's resume,
divergence guard and refusals; a damaged PCFG file refused in one line."""
import json
import math

import pytest
import torch

from conftest import FIXTURES, QuietReporter
from onlstm_cli.cli.commands import app
from onlstm_cli.config import PcfgTrainConfig
from onlstm_cli.errors import Diverged, ModelFileError, TrainingError

SMALL = ["--nonterminals", "4", "--preterminals", "6", "--rank", "8"]
SMALL_SIZES = dict(nonterminals=4, preterminals=6, rank=8)


def run(runner, args, input=None):
    result = runner.invoke(app, [str(a) for a in args], input=input)
    assert "Traceback" not in result.output
    return result


def one_error_line(result, *fragments):
    assert result.exit_code != 0, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


@pytest.fixture(scope="module")
def pcfg_file(tmp_path_factory, tiny_corpus):
    from typer.testing import CliRunner
    out = tmp_path_factory.mktemp("pcfg") / "tiny.onlstm"
    result = run(CliRunner(), ["train", tiny_corpus["train"], "--family", "pcfg", "--valid", tiny_corpus["valid"],
                               "--epochs", "2", "--threads", "1", "-o", out, *SMALL])
    assert result.exit_code == 0, result.output
    assert "a PCFG of 4 nonterminals, 6 preterminals, rank 8" in result.stderr
    assert "best valid ppl" in result.stderr.splitlines()[-1]
    return out


def test_a_pcfg_file_parses_with_each_sentences_log_likelihood(runner, pcfg_file):
    result = run(runner, ["parse", "-m", pcfg_file, "-f", "json"], input="The cat sat on the mat .\nDog\n")
    assert result.exit_code == 0, result.output
    first, second = [json.loads(line) for line in result.stdout.splitlines()]
    assert first["words"] == ["The", "cat", "sat", "on", "the", "mat", "."]
    assert first["log_likelihood"] < 0 and math.isfinite(first["log_likelihood"])
    assert "log_likelihood" not in second  # one word: no binary rule scores it
    bracket = run(runner, ["parse", "-m", pcfg_file], input="The cat sat on the mat .\n")
    assert bracket.stdout.count("(") == 2 * 7 - 1  # a binary tree over seven tokens


def test_info_and_evaluate_read_a_pcfg_file(runner, pcfg_file):
    info = run(runner, ["info", pcfg_file])
    assert info.exit_code == 0 and "a neural PCFG" in info.stdout and "PCFG training" in info.stdout
    assert "4 nonterminals, 6 preterminals, binary rules of rank 8" in info.stdout
    scored = run(runner, ["evaluate", "--gold", FIXTURES / "cli_gold.trees", "-m", pcfg_file])
    assert scored.exit_code == 0, scored.output
    assert "pcfg (MBR trees)" in scored.stdout and "right-branching" in scored.stdout


def test_a_pcfg_is_refused_where_layers_are_asked_for(runner, pcfg_file, model):
    one_error_line(run(runner, ["parse", "-m", pcfg_file, "--layer", "1"], input="the cat sat\n"), "is a PCFG")
    one_error_line(run(runner, ["ensemble", model, pcfg_file, "-o", pcfg_file.with_name("e.onlstm")]),
                   "is a PCFG, not a language model")


def test_a_pcfg_teaches_a_span_parser(tmp_path, tiny_corpus, pcfg_file):
    from onlstm_cli.config import SelfTrainConfig
    from onlstm_cli.modelfile import load_model
    from onlstm_cli.training.student.train import self_train
    out = tmp_path / "student.onlstm"
    result = self_train(tiny_corpus["train"], out, load_model(pcfg_file), tiny_corpus["valid"],
                        train=SelfTrainConfig(epochs=1), log=lambda line: None)
    assert result.out.is_file() and load_model(out).kind == "span"  # a PCFG hosts no student: one of its own


def test_an_interrupted_run_resumes_and_other_sizes_are_refused(tmp_path, tiny_corpus):
    from onlstm_cli.training.pcfg.train import train_pcfg
    out = tmp_path / "p.onlstm"
    first = train_pcfg(tiny_corpus["train"], out, SMALL_SIZES, PcfgTrainConfig(epochs=1, time_budget=None),
                       valid=tiny_corpus["valid"], reporter=QuietReporter())
    ckpt = first.checkpoint
    assert ckpt.is_file() and first.epochs_done == 1
    reporter = QuietReporter()
    second = train_pcfg(tiny_corpus["train"], out, SMALL_SIZES, PcfgTrainConfig(epochs=2, time_budget=None),
                        valid=tiny_corpus["valid"], resume=ckpt, reporter=reporter)
    assert second.epochs_done == 2 and [e[0] for e in reporter.epochs_ended] == [2]  # epoch 1 is not trained again
    with pytest.raises(TrainingError, match="other the PCFG's sizes"):
        train_pcfg(tiny_corpus["train"], out, dict(SMALL_SIZES, rank=9), PcfgTrainConfig(epochs=3, time_budget=None),
                   valid=tiny_corpus["valid"], resume=ckpt, reporter=QuietReporter())


def test_the_epoch_the_time_budget_cuts_says_how_much_of_it_ran(tmp_path, tiny_corpus):
    from onlstm_cli.training.pcfg.train import train_pcfg
    reporter = QuietReporter()
    result = train_pcfg(tiny_corpus["train"], tmp_path / "p.onlstm", SMALL_SIZES,
                        PcfgTrainConfig(epochs=5, time_budget=1e-6, batch_size=1), valid=tiny_corpus["valid"],
                        reporter=reporter)
    assert result.stopped_by_time and 0 < result.epochs_done < 1
    (epoch, *_, done), = reporter.epochs_ended  # one line, for the part of epoch 1 that ran
    assert epoch == 1 and done == pytest.approx(result.epochs_done, abs=1e-3)


def test_long_lines_are_left_out_and_counted(tmp_path, tiny_corpus):
    from onlstm_cli.training.pcfg.train import train_pcfg
    corpus = tmp_path / "c.txt"
    corpus.write_text(tiny_corpus["train"].read_text() + " ".join(["dog"] * 50) + "\n")
    reporter = QuietReporter()
    result = train_pcfg(corpus, tmp_path / "p.onlstm", SMALL_SIZES,
                        PcfgTrainConfig(epochs=1, time_budget=None, max_len=12), reporter=reporter)
    assert result.left_out == 1
    assert any("1 lines over 12 words left out" in m for m in reporter.messages)


def test_a_run_whose_loss_is_never_finite_ends_as_diverged(tmp_path, tiny_corpus, monkeypatch):
    from onlstm_cli.pcfg.model import NeuralPCFG
    from onlstm_cli.training.pcfg.train import train_pcfg
    real = NeuralPCFG.log_likelihood
    monkeypatch.setattr(NeuralPCFG, "log_likelihood",
                        lambda self, ids, lengths, log_mask=None: real(self, ids, lengths, log_mask) * math.nan)
    with pytest.raises(Diverged, match="5 steps in a row"):
        train_pcfg(tiny_corpus["train"], tmp_path / "p.onlstm", SMALL_SIZES,
                   PcfgTrainConfig(epochs=1, time_budget=None, batch_size=2), reporter=QuietReporter())


def test_a_damaged_or_hostile_pcfg_file_is_refused_in_one_line(tmp_path, pcfg_file):
    from onlstm_cli.modelfile import atomic_save, load_model, read_archive
    archive = read_archive(pcfg_file)
    hostile = dict(archive, pcfg=dict(archive["pcfg"], config=dict(archive["pcfg"]["config"], vocab_size=10 ** 9)))
    atomic_save(hostile, tmp_path / "h.onlstm")
    with pytest.raises(ModelFileError, match="is damaged") as excinfo:
        load_model(tmp_path / "h.onlstm")  # refused before 10^9 rows are allocated
    assert "\n" not in str(excinfo.value)
    nan = dict(archive, pcfg=dict(archive["pcfg"], state_dict={k: v * math.nan if v.is_floating_point() else v
                                                               for k, v in archive["pcfg"]["state_dict"].items()}))
    torch.save(nan, tmp_path / "n.onlstm")
    with pytest.raises(ModelFileError, match="not finite"):
        load_model(tmp_path / "n.onlstm")


def test_the_families_options_are_checked_in_one_line(runner, tmp_path, tiny_corpus):
    corpus = tiny_corpus["train"]
    one_error_line(run(runner, ["train", corpus, "--family", "pcfg", "--seeds", "2", "-o", tmp_path / "a.onlstm"]),
                   "--families")
    one_error_line(run(runner, ["train", corpus, "--families", "onlstm,pcfg", "-o", tmp_path / "b.onlstm"]),
                   "--seeds K")
    one_error_line(run(runner, ["train", corpus, "--seeds", "2", "--families", "onlstm,cky", "-o",
                                tmp_path / "c.onlstm"]), "no model family cky")
    one_error_line(run(runner, ["train", corpus, "--family", "pcfg", "--units", "ngrams", "-o",
                                tmp_path / "d.onlstm"]), "words or endings")
    one_error_line(run(runner, ["train", corpus, "--family", "pcfg", "--patience", "-1", "-o",
                                tmp_path / "e.onlstm"]), "--patience must be at least 0")
    assert not any(tmp_path.iterdir())  # nothing written


def test_sigterm_stops_a_run_at_a_checkpoint_that_resumes(tmp_path, tiny_corpus, monkeypatch):
    import os
    import signal
    from onlstm_cli.training.pcfg.train import train_pcfg
    from onlstm_cli.training.pcfg.trainer import PcfgRun
    real_step, steps = PcfgRun.step, []

    def step_then_terminated(self, batch):
        steps.append(len(batch))
        if len(steps) == 2:
            os.kill(os.getpid(), signal.SIGTERM)  # as `kill` or a scheduler would, between two steps
        return real_step(self, batch)

    monkeypatch.setattr(PcfgRun, "step", step_then_terminated)
    out, reporter = tmp_path / "p.onlstm", QuietReporter()
    stopped = train_pcfg(tiny_corpus["train"], out, SMALL_SIZES, PcfgTrainConfig(epochs=1, time_budget=None,
                                                                                batch_size=4), reporter=reporter)
    assert stopped.interrupted and stopped.stop_signal == signal.SIGTERM and len(steps) == 2
    assert stopped.checkpoint.is_file() and any("resume with --resume" in m for m in reporter.messages)
    monkeypatch.setattr(PcfgRun, "step", real_step)
    resumed = train_pcfg(tiny_corpus["train"], out, SMALL_SIZES, PcfgTrainConfig(epochs=1, time_budget=None,
                                                                                batch_size=4),
                         resume=stopped.checkpoint, reporter=QuietReporter())
    assert not resumed.interrupted and resumed.epochs_done == 1 and out.is_file()


def branching_heights(n: int, side: str) -> list[int]:
    """Split heights whose symmetric-split tree is the right- (or left-) branching tree of n words."""
    return [0] + (list(range(n, 1, -1)) if side == "right" else list(range(2, n + 1)))


@pytest.mark.parametrize("side", ["right", "left"])
def test_a_run_whose_trees_are_a_branching_rule_says_so(tmp_path, tiny_corpus, monkeypatch, side):
    import onlstm_cli.training.pcfg.trainer as trainer
    from onlstm_cli.evaluation.metrics import left_branching_spans, right_branching_spans
    from onlstm_cli.training.pcfg.train import train_pcfg
    from onlstm_cli.trees import build_tree, tree_spans
    shape = right_branching_spans if side == "right" else left_branching_spans
    assert tree_spans(build_tree(branching_heights(6, side), list(range(6)), "symmetric")) == shape(6)
    parsed = []
    monkeypatch.setattr(trainer, "pcfg_trees", lambda model, sentences: parsed.append(len(sentences)) or (
        [branching_heights(len(ids), side) for ids in sentences], [None] * len(sentences)))
    reporter = QuietReporter()
    train_pcfg(tiny_corpus["train"], tmp_path / "p.onlstm", SMALL_SIZES, PcfgTrainConfig(epochs=1, time_budget=None),
               valid=tiny_corpus["valid"], reporter=reporter)
    warning = [line for line in reporter.messages if line.startswith("warning:")]
    assert len(warning) == 1 and f"agree 100.0 with {side}-branching trees" in warning[0], reporter.messages
    assert parsed and parsed[0] <= trainer.BRANCHING_CHECK_SENTENCES


def test_trees_that_are_no_branching_rule_give_no_warning(monkeypatch):
    import onlstm_cli.training.pcfg.trainer as trainer
    from onlstm_cli.pcfg.model import NeuralPCFG
    from onlstm_cli.config import PcfgConfig
    model = NeuralPCFG(PcfgConfig(vocab_size=20, **SMALL_SIZES))
    sentences = [[2, 3, 4, 5, 6, 7], [3, 4, 5, 6, 7, 8], [2, 2], [5, 6, 7, 8, 9, 10]]
    # two right-branching trees of three: 66.7 with right-branching trees, under the vote's 90
    monkeypatch.setattr(trainer, "pcfg_trees", lambda m, ids: ([branching_heights(len(s), side) for s, side in
                                                                zip(ids, ["right", "left", "right"])], None))
    assert trainer.branching_warning(model, sentences) is None
    assert trainer.branching_warning(model, [[2, 3]]) is None  # no sentence of 3 words: nothing to compare


def test_a_training_perplexity_that_went_uphill_is_warned_of():
    from onlstm_cli.training.pcfg.trainer import uphill_warning
    # entry 179's seed 1111 at the default rate: lowest after epoch 3, 79% above it after epoch 9
    went_up = [{"train_ppl": v} for v in (696.49, 552.59, 519.24, 534.17, 555.77, 615.17, 794.17, 830.72, 929.84)]
    warning = uphill_warning(went_up)
    assert warning.startswith("warning: the training perplexity went uphill, from 519.24 after epoch 3 to 929.84 "
                              "after epoch 9") and "--lr" in warning
    # the same run at 0.001: its last, part epoch 4.1% above its lowest is an epoch's noise
    steady = [{"train_ppl": v} for v in (716.72, 506.85, 477.50, 472.02, 468.68, 458.00, 456.80, 450.46, 447.56,
                                         465.81)]
    assert uphill_warning(steady) is None
    assert uphill_warning([{"train_ppl": 100.0}, {"train_ppl": 110.0}]) is None  # 10% is not more than 10%
    assert uphill_warning([{"train_ppl": 100.0}, {"train_ppl": 110.01}]) is not None
    # a history of an older version, or an epoch with no finite loss, has no training perplexity to read
    assert uphill_warning([{"valid_ppl": 50.0}, {"train_ppl": None}, {"train_ppl": 40.0}]) is None
    assert uphill_warning([]) is None


def test_a_run_records_its_training_perplexity_and_says_where_it_went_uphill(tmp_path, tiny_corpus, monkeypatch):
    from onlstm_cli.modelfile import load_model
    from onlstm_cli.training.pcfg import trainer
    from onlstm_cli.training.pcfg.train import train_pcfg
    curve_of([100.0, 90.0, 95.0], monkeypatch)
    losses = iter([5.0, 4.0, 4.5])  # each epoch's training loss per word: exp 148.41, 54.60, 90.02
    end_epoch = trainer.PcfgRun.end_epoch

    def with_loss(run):
        run.train_loss = next(losses)
        end_epoch(run)
    monkeypatch.setattr(trainer.PcfgRun, "end_epoch", with_loss)
    reporter = QuietReporter()
    out = tmp_path / "p.onlstm"
    train_pcfg(tiny_corpus["train"], out, SMALL_SIZES, PcfgTrainConfig(epochs=3, time_budget=None, patience=0),
               valid=tiny_corpus["valid"], reporter=reporter)
    assert [round(e[1], 2) for e in reporter.epochs_ended] == [148.41, 54.6, 90.02]
    # the file holds epoch 2, the best validation perplexity, and the history up to it
    assert [h["train_ppl"] for h in load_model(out).meta["history"]] == [148.41, 54.6]
    warning = [line for line in reporter.messages if "went uphill" in line]
    assert len(warning) == 1 and "from 54.60 after epoch 2 to 90.02 after epoch 3" in warning[0], reporter.messages


def curve_of(values, monkeypatch):
    """Validation perplexities `values`, one an epoch, in place of the inside pass's."""
    from onlstm_cli.training.pcfg import trainer
    left = list(values)
    monkeypatch.setattr(trainer, "perplexity", lambda *a, **k: left.pop(0))


def test_a_run_stops_once_validation_perplexity_is_no_better_for_patience_epochs(tmp_path, tiny_corpus, monkeypatch):
    from onlstm_cli.training.pcfg.train import train_pcfg
    curve_of([100.0, 90.0, 95.0, 90.0, 97.0, 80.0, 70.0], monkeypatch)  # a tie is no gain
    reporter = QuietReporter()
    result = train_pcfg(tiny_corpus["train"], tmp_path / "p.onlstm", SMALL_SIZES,
                        PcfgTrainConfig(epochs=20, time_budget=None, patience=3), valid=tiny_corpus["valid"],
                        reporter=reporter)
    assert result.epochs_done == 5 and result.stopped_early == 3 and not result.stopped_by_time
    assert result.best_valid_ppl == 90.0 and [e[3] for e in reporter.epochs_ended] == [True, True, False, False, False]
    assert result.summary().startswith("stopped early, validation perplexity no better for 3 epochs")


def test_patience_0_trains_every_epoch_and_a_resumed_run_keeps_counting(tmp_path, tiny_corpus, monkeypatch):
    from onlstm_cli.training.pcfg.train import train_pcfg
    out = tmp_path / "p.onlstm"
    curve_of([100.0, 90.0, 95.0, 96.0], monkeypatch)
    first = train_pcfg(tiny_corpus["train"], out, SMALL_SIZES, PcfgTrainConfig(epochs=4, time_budget=None, patience=0),
                       valid=tiny_corpus["valid"], reporter=QuietReporter())
    assert first.epochs_done == 4 and first.stopped_early == 0 and first.summary().startswith("done")
    # two epochs without a gain are in its checkpoint: resumed with --patience 2, it trains no further
    reporter = QuietReporter()
    second = train_pcfg(tiny_corpus["train"], out, SMALL_SIZES, PcfgTrainConfig(epochs=20, time_budget=None,
                        patience=2), valid=tiny_corpus["valid"], resume=first.checkpoint, reporter=reporter)
    assert second.epochs_done == 4 and second.stopped_early == 2 and reporter.epochs_ended == []


def test_a_pcfg_trains_with_denormals_flushed_and_sets_them_back(tiny_corpus, tmp_path, monkeypatch):
    """A trained grammar's products make many denormal floats, which a CPU computes many times slower: training
    flushes them (fast.denormals_flushed) and sets Python's floats back after. (Whether torch's other threads
    flush too depends on whether they start within it, which an earlier test's torch op decides here.)"""
    import sys

    import onlstm_cli.training.pcfg.train as module
    seen = {}
    original = module.run_together

    def run_together(*args, **kwargs):
        seen["python"] = sys.float_info.min / 2  # 0.0 where subnormals are flushed
        seen["torch"] = int((torch.full((1000,), 1e-30) * 1e-10).count_nonzero())  # small: on this thread
        return original(*args, **kwargs)
    monkeypatch.setattr(module, "run_together", run_together)
    assert sys.float_info.min / 2 > 0
    module.train_pcfg(tiny_corpus["train"], tmp_path / "m.onlstm", SMALL_SIZES,
                      PcfgTrainConfig(epochs=1, time_budget=None), valid=tiny_corpus["valid"], reporter=QuietReporter())
    assert seen == {"python": 0.0, "torch": 0}
    assert sys.float_info.min / 2 > 0  # set back: Python's floats (and hypothesis) keep their subnormals
