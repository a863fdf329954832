"""Training faults a hard user hits: divergence, failed saves, resuming wrongly, a bad --out; and NT-ASGD."""
from __future__ import annotations

import math
import signal
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

import onlstm_cli.errors
import onlstm_cli.modelfile as modelfile
import onlstm_cli.training.lm.checks
import onlstm_cli.training.run.files
import onlstm_cli.training.lm.train
import onlstm_cli.training.lm.trainer
from conftest import TINY_MODEL, QuietReporter, tiny_train_config, write_corpus
from onlstm_cli.cli.commands import app
from onlstm_cli.modelfile import CHECKPOINT_FORMAT, atomic_save, load_model, read_archive
from onlstm_cli.errors import Diverged, ModelFileError, TrainingError
from onlstm_cli.training.lm.train import TrainResult, checkpoint_path, should_average, train_model
import onlstm_cli.training.run.clock
from onlstm_cli.training.run.clock import Budget, Clock
from onlstm_cli.training.lm.steps import annealings, learning_rate


@pytest.fixture
def corpus(tmp_path):
    return {"train": write_corpus(tmp_path / "train.txt", 60, seed=0),
            "valid": write_corpus(tmp_path / "valid.txt", 12, seed=1)}


def train(corpus, out, reporter=None, valid=True, model=None, **config):
    return train_model(corpus["train"], out, dict(model or TINY_MODEL), tiny_train_config(**config),
                       valid=corpus["valid"] if valid else None, reporter=reporter or QuietReporter())


def one_line(text: str) -> str:
    assert "\n" not in text.strip() and "Traceback" not in text
    return text


# --- divergence -----------------------------------------------------------------------------------------

def test_a_diverging_run_stops_with_a_clear_error_and_keeps_the_last_good_files(corpus, tmp_path):
    out = tmp_path / "m.onlstm"
    train(corpus, out, epochs=1, optimizer="sgd", lr=1.0)
    model_before, ckpt_before = out.read_bytes(), checkpoint_path(out).read_bytes()
    with pytest.raises(Diverged) as excinfo:
        train_model(corpus["train"], out, dict(TINY_MODEL), tiny_train_config(epochs=3, optimizer="sgd", lr=1e30, clip=0),
                    valid=corpus["valid"], resume=checkpoint_path(out), reporter=QuietReporter())
    message = one_line(str(excinfo.value))
    assert "diverged" in message and "--lr" in message
    assert out.read_bytes() == model_before  # never replaced by weights that are not finite
    assert checkpoint_path(out).read_bytes() == ckpt_before
    assert all(torch.isfinite(p).all() for p in load_model(out).model.state_dict().values())


def test_a_step_with_a_gradient_that_is_not_finite_is_skipped(corpus, tmp_path, monkeypatch):
    """One bad step (say, a float16 overflow) is not applied, and training goes on."""
    original = torch.nn.utils.clip_grad_norm_
    calls = []

    def nan_norm_once(params, max_norm, *args, **kwargs):
        calls.append(1)
        norm = original(params, max_norm, *args, **kwargs)
        return torch.tensor(float("nan")) if len(calls) == 2 else norm

    monkeypatch.setattr(torch.nn.utils, "clip_grad_norm_", nan_norm_once)
    reporter = QuietReporter()
    result = train(corpus, tmp_path / "m.onlstm", reporter, epochs=1)
    assert len(calls) > 3
    assert reporter.progress_calls == len(calls) - 1  # every step but the skipped one
    assert math.isfinite(result.best_valid_ppl)
    ckpt = read_archive(checkpoint_path(tmp_path / "m.onlstm"), CHECKPOINT_FORMAT)
    assert min(float(s["step"]) for s in ckpt["optimizer"]["state"].values()) == len(calls) - 1  # Adam's steps


def test_a_validation_perplexity_that_is_not_finite_never_becomes_the_model(corpus, tmp_path, monkeypatch):
    monkeypatch.setattr(onlstm_cli.training.lm.trainer, "evaluate_perplexity", lambda *a, **k: float("nan"))
    reporter = QuietReporter()
    out = tmp_path / "m.onlstm"
    result = train(corpus, out, reporter, epochs=1)
    assert not out.exists() and result.best_valid_ppl is None
    assert any("not a finite number" in m for m in reporter.messages)


# --- saving ---------------------------------------------------------------------------------------------

def test_a_failed_write_is_one_line_and_leaves_no_partial_file(tmp_path, monkeypatch):
    def full_disk(obj, f):
        f.write(b"x" * 1000)
        raise RuntimeError("[enforce fail at inline_container.cc:778] . PytorchStreamWriter failed writing "
                           "file data/3: file write failed; unexpected pos 8388608")

    monkeypatch.setattr(modelfile.torch, "save", full_disk)
    with pytest.raises(ModelFileError) as excinfo:
        atomic_save({"a": 1}, tmp_path / "m.onlstm")
    message = one_line(str(excinfo.value))
    assert "could not write" in message and "unexpected pos" not in message and ".tmp" not in message
    assert list(tmp_path.iterdir()) == []


def test_a_failed_save_during_training_is_reported_and_training_goes_on(corpus, tmp_path, monkeypatch):
    real_save, failures = modelfile.torch.save, []

    def fail_checkpoints_once(obj, f):
        if obj.get("format") == CHECKPOINT_FORMAT and not failures:
            failures.append(1)
            raise OSError(28, "No space left on device")
        return real_save(obj, f)

    monkeypatch.setattr(modelfile.torch, "save", fail_checkpoints_once)
    reporter = QuietReporter()
    out = tmp_path / "m.onlstm"
    result = train(corpus, out, reporter, epochs=2)
    assert failures and result.epochs_done == pytest.approx(2.0)
    warning = [m for m in reporter.messages if "no space left on device" in m]
    assert len(warning) == 1 and "goes on" in warning[0]
    assert read_archive(checkpoint_path(out), CHECKPOINT_FORMAT)["epoch"] == 3  # the next save succeeded


def test_a_run_whose_last_save_failed_ends_with_an_error(corpus, tmp_path, monkeypatch):
    real_save = modelfile.torch.save

    def fail_checkpoints(obj, f):
        if obj.get("format") == CHECKPOINT_FORMAT:
            raise OSError(30, "Read-only file system")
        return real_save(obj, f)

    monkeypatch.setattr(modelfile.torch, "save", fail_checkpoints)
    with pytest.raises(TrainingError, match="last save failed: could not write .*read-only file system"):
        train(corpus, tmp_path / "m.onlstm", epochs=1)


# --- --out ----------------------------------------------------------------------------------------------

def test_out_that_is_a_directory_is_refused_before_training(corpus, tmp_path):
    reporter = QuietReporter()
    with pytest.raises(TrainingError, match="is a directory") as excinfo:
        train(corpus, tmp_path, reporter)
    one_line(str(excinfo.value))
    assert reporter.progress_calls == 0


def test_out_that_cannot_be_written_is_refused_before_training(corpus, tmp_path, monkeypatch):
    def read_only(*args, **kwargs):
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(onlstm_cli.training.run.files.tempfile, "mkstemp", read_only)
    reporter = QuietReporter()
    with pytest.raises(TrainingError, match="cannot write --out .*: read-only file system"):
        train(corpus, tmp_path / "m.onlstm", reporter)
    assert reporter.progress_calls == 0


def test_too_little_disk_space_is_refused_before_training(corpus, tmp_path, monkeypatch):
    import collections
    usage = collections.namedtuple("usage", "total used free")
    monkeypatch.setattr(onlstm_cli.training.lm.checks.shutil, "disk_usage", lambda path: usage(10**9, 10**9 - 1000, 1000))
    with pytest.raises(TrainingError, match="not enough free space"):
        train(corpus, tmp_path / "m.onlstm")


def test_stale_temporary_files_of_a_killed_save_are_removed(corpus, tmp_path):
    out = tmp_path / "m.onlstm"
    stale = [tmp_path / ".m.onlstm.k1l2d.tmp", tmp_path / ".m.onlstm.ckpt.x9y8.tmp",
             tmp_path / ".m.onlstm.tokens.abcd.tmp"]
    for path in stale:
        path.write_bytes(b"\0" * 4096)
    other = tmp_path / ".other.onlstm.k1l2d.tmp"
    other.write_bytes(b"keep")
    train(corpus, out, epochs=1)
    assert not any(path.exists() for path in stale)
    assert other.exists()  # another model's file is not ours to remove


# --- resuming -------------------------------------------------------------------------------------------

def test_resuming_a_validated_run_without_valid_is_refused(corpus, tmp_path):
    out = tmp_path / "m.onlstm"
    train(corpus, out, epochs=1)
    before = out.read_bytes()
    with pytest.raises(TrainingError, match="resume with --valid") as excinfo:
        train_model(corpus["train"], out, dict(TINY_MODEL), tiny_train_config(epochs=2),
                    resume=checkpoint_path(out), reporter=QuietReporter())
    assert str(corpus["valid"]) in one_line(str(excinfo.value))
    assert out.read_bytes() == before


@pytest.mark.parametrize("changed,option", [
    (dict(hidden_size=30), "--hidden-size 40"),
    (dict(reverse=True), "--reverse off"),
    (dict(dropout=0.2), "--dropout 0.45"),
])
def test_resuming_with_an_option_that_changes_the_model_is_refused(corpus, tmp_path, changed, option):
    out = tmp_path / "m.onlstm"
    train(corpus, out, epochs=1)
    with pytest.raises(TrainingError) as excinfo:
        train_model(corpus["train"], out, {**TINY_MODEL, **changed}, tiny_train_config(epochs=2),
                    valid=corpus["valid"], resume=checkpoint_path(out), reporter=QuietReporter())
    assert option in one_line(str(excinfo.value))


def test_resuming_with_another_keep_punct_is_refused(corpus, tmp_path):
    out = tmp_path / "m.onlstm"
    train(corpus, out, epochs=1)
    with pytest.raises(TrainingError, match="--keep-punct off"):
        train_model(corpus["train"], out, dict(TINY_MODEL), tiny_train_config(epochs=2), valid=corpus["valid"],
                    keep_punct=True, resume=checkpoint_path(out), reporter=QuietReporter())


def test_a_model_file_newer_than_the_checkpoint_is_not_replaced_by_a_worse_one(corpus, tmp_path):
    """A kill between writing the model and the checkpoint leaves the model newer than the checkpoint."""
    out = tmp_path / "m.onlstm"
    train(corpus, out, epochs=1)
    archive = read_archive(out)
    archive["meta"]["valid_ppl"] = 1.5  # as if the killed epoch had reached this
    atomic_save(archive, out)
    before = out.read_bytes()
    reporter = QuietReporter()
    result = train_model(corpus["train"], out, dict(TINY_MODEL), tiny_train_config(epochs=2),
                         valid=corpus["valid"], resume=checkpoint_path(out), reporter=reporter)
    assert out.read_bytes() == before and result.best_valid_ppl == 1.5
    assert any("newer than the checkpoint" in m for m in reporter.messages)


def test_resuming_with_another_optimizer_is_refused_but_sgd_may_become_ntasgd(corpus, tmp_path):
    out = tmp_path / "m.onlstm"
    train(corpus, out, epochs=1)  # adam
    with pytest.raises(TrainingError, match="--optimizer adam"):
        train_model(corpus["train"], out, dict(TINY_MODEL), tiny_train_config(epochs=2, optimizer="sgd", lr=1.0),
                    valid=corpus["valid"], resume=checkpoint_path(out), reporter=QuietReporter())
    train(corpus, out, epochs=1, optimizer="sgd", lr=1.0)
    result = train_model(corpus["train"], out, dict(TINY_MODEL), tiny_train_config(epochs=2, optimizer="ntasgd", lr=1.0),
                         valid=corpus["valid"], resume=checkpoint_path(out), reporter=QuietReporter())
    assert result.epochs_done == pytest.approx(2.0)


def test_resume_takes_this_runs_learning_rate(corpus, tmp_path):
    out = tmp_path / "m.onlstm"
    train(corpus, out, epochs=1, optimizer="sgd", lr=1.0)
    train_model(corpus["train"], out, dict(TINY_MODEL), tiny_train_config(epochs=2, optimizer="sgd", lr=0.25),
                valid=corpus["valid"], resume=checkpoint_path(out), reporter=QuietReporter())
    ckpt = read_archive(checkpoint_path(out), CHECKPOINT_FORMAT)
    assert {g["lr"] for g in ckpt["optimizer"]["param_groups"]} == {0.25}


# --- NT-ASGD --------------------------------------------------------------------------------------------

def test_the_non_monotone_trigger():
    history = [{"valid_ppl": v} for v in (100.0, 90.0, 95.0, 96.0)]
    assert not should_average(history, 97.0, nonmono=5)  # too few epochs yet
    assert should_average(history, 97.0, nonmono=2)       # worse than min(100, 90)
    assert not should_average(history, 89.0, nonmono=2)   # still improving
    assert should_average(history, 91.0, nonmono=0)


def test_ntasgd_averages_the_weights_once_validation_stalls_and_resumes_averaging(corpus, tmp_path, monkeypatch):
    monkeypatch.setattr(onlstm_cli.training.lm.trainer, "should_average", lambda history, ppl, nonmono: len(history) >= 1)
    reporter = QuietReporter()
    out = tmp_path / "m.onlstm"
    result = train(corpus, out, reporter, epochs=3, optimizer="ntasgd", lr=1.0)
    assert any("averaging" in m for m in reporter.messages)
    ckpt = read_archive(checkpoint_path(out), CHECKPOINT_FORMAT)
    assert ckpt["averaging"] is True
    averages = [s["ax"] for s in ckpt["optimizer"]["state"].values()]
    assert averages and all("ax" in s for s in ckpt["optimizer"]["state"].values())
    saved = load_model(out)
    if result.history[-1]["valid_ppl"] == result.best_valid_ppl:  # the last epoch's model is the file's
        weights = dict(saved.model.named_parameters())
        ckpt_weights = ckpt["state_dict"]
        # the file holds the averaged weights, not the current ones
        differs = [n for n in weights if not torch.allclose(weights[n].float(), ckpt_weights[n].float(), atol=1e-2)]
        assert differs
    resumed = QuietReporter()
    train_model(corpus["train"], out, dict(TINY_MODEL), tiny_train_config(epochs=4, optimizer="ntasgd", lr=1.0),
                valid=corpus["valid"], resume=checkpoint_path(out), reporter=resumed)
    again = read_archive(checkpoint_path(out), CHECKPOINT_FORMAT)
    assert again["averaging"] is True
    steps_before = {float(s["step"]) for s in ckpt["optimizer"]["state"].values()}
    steps_after = {float(s["step"]) for s in again["optimizer"]["state"].values()}
    assert min(steps_after) == min(steps_before) + resumed.progress_calls  # the average went on


# --- annealing the learning rate ---------------------------------------------------------------------------

def test_the_learning_rate_is_divided_after_epochs_without_a_better_validation_perplexity():
    history = [{"valid_ppl": v} for v in (100.0, 90.0, 95.0, 96.0, 91.0, 80.0, 85.0, None, 86.0)]
    assert annealings(history, after=0) == 0
    assert annealings(history, after=3) == 1   # 95, 96, 91 after the best of 90; 85, 86 after 80 are only two
    assert annealings(history, after=2) == 2   # 95, 96; then 85, 86 (an epoch without validation counts for nothing)
    assert annealings(history, after=1) == 5   # each epoch that is not a new best
    assert annealings(history[:2], after=1) == 0


def test_an_annealed_run_trains_and_resumes_at_the_lower_rate(corpus, tmp_path, monkeypatch):
    rising = iter(range(100, 200))
    monkeypatch.setattr(onlstm_cli.training.lm.trainer, "evaluate_perplexity", lambda *a, **k: float(next(rising)))
    reporter = QuietReporter()
    out = tmp_path / "m.onlstm"
    train(corpus, out, reporter, epochs=3, optimizer="sgd", lr=1.0, lr_schedule="plateau", anneal_after=1)
    ckpt = read_archive(checkpoint_path(out), CHECKPOINT_FORMAT)
    assert {g["lr"] for g in ckpt["optimizer"]["param_groups"]} == {1.0 / 16}  # epochs 2 and 3 were no better
    assert sum("learning rate 0.25 from here on" in m for m in reporter.messages) == 1
    train_model(corpus["train"], out, dict(TINY_MODEL), tiny_train_config(epochs=4, optimizer="sgd", lr=1.0,
                lr_schedule="plateau", anneal_after=1), valid=corpus["valid"], resume=checkpoint_path(out),
                reporter=QuietReporter())
    again = read_archive(checkpoint_path(out), CHECKPOINT_FORMAT)
    assert {g["lr"] for g in again["optimizer"]["param_groups"]} == {1.0 / 64}  # not --lr again: its history says


def test_the_cosine_schedule_falls_from_the_rate_to_zero_over_the_run(corpus, tmp_path):
    config = tiny_train_config(lr=2.0, lr_schedule="cosine")
    assert learning_rate(config, [], 0.0) == 2.0
    assert learning_rate(config, [], 0.5) == pytest.approx(1.0)
    assert learning_rate(config, [], 1.0) == pytest.approx(0.0)
    assert learning_rate(tiny_train_config(lr=2.0), [], 0.5) == 2.0  # constant
    out = tmp_path / "m.onlstm"
    train(corpus, out, epochs=4, optimizer="sgd", lr=1.0, lr_schedule="cosine")
    ckpt = read_archive(checkpoint_path(out), CHECKPOINT_FORMAT)
    assert all(g["lr"] == pytest.approx(0.0, abs=1e-12) for g in ckpt["optimizer"]["param_groups"])  # the run's end
    assert len(ckpt["history"]) == 4


def test_the_share_of_a_run_done_is_its_epochs_or_its_time_whichever_ends_it_first(monkeypatch):
    now = [1000.0]
    monkeypatch.setattr(onlstm_cli.training.run.clock.time, "time", lambda: now[0])
    clock = Clock(Budget(None), seconds_before=0.0, epoch_tokens=100, epochs=10)
    assert clock.share_done(2.5) == 0.25 and clock.share_before(2.5) == 0.25
    clock = Clock(Budget(600.0), seconds_before=60.0, epoch_tokens=100, epochs=10)
    assert clock.share_before(0.5) == 0.1   # 60 of 600 seconds, before this run
    now[0] += 210.0
    assert clock.share_done(0.5) == pytest.approx(0.45)  # 270 of 600 seconds
    assert clock.share_done(8.0) == 0.8     # the epochs come first
    now[0] += 10_000.0
    assert clock.share_done(8.0) == 1.0


def test_without_the_plateau_schedule_the_rate_stays(corpus, tmp_path, monkeypatch):
    rising = iter(range(100, 200))
    monkeypatch.setattr(onlstm_cli.training.lm.trainer, "evaluate_perplexity", lambda *a, **k: float(next(rising)))
    out = tmp_path / "m.onlstm"
    train(corpus, out, epochs=3, optimizer="sgd", lr=1.0, anneal_after=1)  # the constant schedule
    ckpt = read_archive(checkpoint_path(out), CHECKPOINT_FORMAT)
    assert {g["lr"] for g in ckpt["optimizer"]["param_groups"]} == {1.0}


# --- the CLI --------------------------------------------------------------------------------------------

def run_cli(args, monkeypatch=None, result=None):
    if monkeypatch is not None:
        monkeypatch.setattr(onlstm_cli.training.lm.train, "train_model", lambda *a, **k: result)
    return CliRunner().invoke(app, args)


def test_sigterm_exits_143_and_ctrl_c_130(corpus, tmp_path, monkeypatch):
    for signum, code in ((signal.SIGTERM, 143), (signal.SIGINT, 130)):
        stopped = TrainResult(str(tmp_path / "m"), str(tmp_path / "m.ckpt"), 0.5, None, interrupted=True,
                              stop_signal=int(signum))
        got = run_cli(["train", str(corpus["train"]), "--out", str(tmp_path / "m")], monkeypatch, stopped)
        assert got.exit_code == code, got.output


def test_the_checkpoint_interval_is_an_option(corpus, tmp_path, monkeypatch):
    seen = {}

    def fake(corpus_, out, model_config, train_config, **kwargs):
        seen["tc"] = train_config
        Path(out).write_bytes(b"")
        return TrainResult(str(out), str(out) + ".ckpt", 1.0, None)

    monkeypatch.setattr(onlstm_cli.training.lm.train, "train_model", fake)
    got = CliRunner().invoke(app, ["train", str(corpus["train"]), "--out", str(tmp_path / "m.onlstm"),
                                   "--checkpoint-every", "2m"])
    assert got.exit_code == 0, got.output
    assert seen["tc"].checkpoint_every == 120
    assert "not chosen by validation" in got.output  # no --valid: the summary says what the model is
    got = CliRunner().invoke(app, ["train", str(corpus["train"]), "--checkpoint-every", "soon"])
    assert got.exit_code == 2 and "--checkpoint-every" in got.output


@pytest.mark.parametrize("every,mid_epoch", [(1e9, False), (0.0, True)])
def test_a_checkpoint_is_written_every_interval(corpus, tmp_path, every, mid_epoch):
    out = tmp_path / "m.onlstm"
    seen = []

    class Looking(QuietReporter):
        def progress(self, *args):
            super().progress(*args)
            if self.progress_calls == 3:  # the checkpoint, if any, of the step before this one
                path = checkpoint_path(out)
                seen.append(read_archive(path, CHECKPOINT_FORMAT)["position"] if path.exists() else None)

    train_model(corpus["train"], out, dict(TINY_MODEL), tiny_train_config(epochs=1, checkpoint_every=every),
                valid=corpus["valid"], reporter=Looking())
    assert (seen[0] is not None and seen[0] > 0) if mid_epoch else seen == [None]


def test_bad_threads_is_one_line(corpus):
    got = CliRunner().invoke(app, ["train", str(corpus["train"]), "--threads", "-1"])
    assert got.exit_code == 2 and "--threads must be at least 1" in got.output


def test_a_one_line_validation_file_names_no_hidden_batch_size(corpus, tmp_path):
    short = tmp_path / "short.txt"
    short.write_text("a cat\n", encoding="utf-8")
    with pytest.raises(TrainingError) as excinfo:
        train_model(corpus["train"], tmp_path / "m.onlstm", dict(TINY_MODEL), tiny_train_config(), valid=short,
                    reporter=QuietReporter())
    message = one_line(str(excinfo.value))
    assert "too short to validate" in message and "batch size" not in message


def test_a_corpus_of_punctuation_points_at_keep_punct(tmp_path):
    corpus = tmp_path / "p.txt"
    corpus.write_text(". , !\n?? ...\n", encoding="utf-8")
    with pytest.raises(TrainingError, match="--keep-punct"):
        train_model(corpus, tmp_path / "m.onlstm", dict(TINY_MODEL), tiny_train_config(), reporter=QuietReporter())


def test_train_help_describes_every_option():
    got = CliRunner().invoke(app, ["train", "--help"])
    text = " ".join(got.output.replace("│", " ").split())  # the help column's lines, joined
    for phrase in ("L2 penalty", "Random seed", "totals over all the runs", "--checkpoint-every", "ntasgd"):
        assert phrase in text


def test_bad_threads_through_the_api_is_a_training_error(corpus, tmp_path):
    with pytest.raises(TrainingError, match="--threads must be at least 1"):
        train(corpus, tmp_path / "m.onlstm", threads=-1)


# --- one run an --out (issue 41 item 4) -----------------------------------------------------------------

TINY_CLI = ["--emb-size", "20", "--hidden-size", "40", "--chunk-size", "5", "--batch-size", "4", "--threads", "1",
            "--bptt", "10", "--optimizer", "adam", "--lr", "0.01", "--time-budget", "none"]


def holder_process(out: Path):
    """Another process holding `out`, as a run training into it does, until it is killed."""
    import subprocess
    import sys
    code = ("import sys\nfrom onlstm_cli.files import output_lock\n"
            f"with output_lock({str(out)!r}):\n    print('held', flush=True)\n    sys.stdin.read()\n")
    holder = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    return holder


@pytest.mark.parametrize("mode", ["language model", "recipe", "teacher"])
def test_a_second_run_on_the_same_out_is_refused_while_the_first_holds_it(corpus, tmp_path, mode, tiny_model_path):
    out = tmp_path / "m.onlstm"
    out.write_bytes(b"the first run's model")
    extra = {"language model": [], "recipe": ["--seeds", "2"],
             "teacher": ["--teacher", str(tiny_model_path), "--valid", str(corpus["valid"])]}[mode]
    holder = holder_process(out)
    try:
        got = run_cli(["train", str(corpus["train"]), "-o", str(out), "--epochs", "1", *TINY_CLI, *extra])
    finally:
        holder.kill()
        holder.wait()
    assert got.exit_code == 2 and "being written by another onlstm run" in one_line(got.output), got.output
    assert f"process {holder.pid}" in got.output
    assert out.read_bytes() == b"the first run's model"


def test_a_killed_runs_lock_does_not_stop_a_resume_and_a_finished_run_leaves_none(corpus, tmp_path):
    from onlstm_cli.files import lock_path
    out = tmp_path / "m.onlstm"
    first = run_cli(["train", str(corpus["train"]), "-o", str(out), "--valid", str(corpus["valid"]), "--epochs", "1",
                     *TINY_CLI])
    assert first.exit_code == 0, first.output
    assert not lock_path(out).exists()  # released and removed on the way out
    holder = holder_process(out)
    holder.kill()  # killed: its lock file stays, but the kernel has dropped its lock
    holder.wait()
    assert lock_path(out).exists()
    resumed = run_cli(["train", str(corpus["train"]), "-o", str(out), "--valid", str(corpus["valid"]), "--epochs", "2",
                       "--resume", str(checkpoint_path(out)), *TINY_CLI])
    assert resumed.exit_code == 0, resumed.output
    assert load_model(out).meta["epochs"] == 2 and not lock_path(out).exists()


def test_a_lock_file_that_is_a_symbolic_link_is_not_followed(tmp_path):
    from onlstm_cli.files import lock_path, output_lock
    target = tmp_path / "precious.txt"
    target.write_text("mine\n")
    lock_path(tmp_path / "m.onlstm").symlink_to(target)
    with pytest.raises(onlstm_cli.errors.OnlstmError, match="symbolic link"):
        with output_lock(tmp_path / "m.onlstm"):
            pass
    assert target.read_text() == "mine\n"
