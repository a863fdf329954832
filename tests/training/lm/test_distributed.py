"""Training on several processes: `torchrun --nproc-per-node 2 -m onlstm_cli train` on CPU (gloo)."""
from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import nltk
import pytest
import torch.distributed as dist
from typer.testing import CliRunner

from conftest import (REPO, SAFETY_TIMEOUT, TINY_MODEL, QuietReporter, end_hung_run, has_ended, tiny_train_config,
                      torchrun, torchrun_command, torchrun_env, worker_pid, write_corpus)
from onlstm_cli.cli.commands import app
from onlstm_cli.training.run.distributed import DEFAULT_COLLECTIVE_TIMEOUT, Group, collective_timeout, lost_peer
from onlstm_cli.modelfile import CHECKPOINT_FORMAT, load_model, read_archive
from onlstm_cli.training.lm.train import checkpoint_path, train_model
from onlstm_cli.errors import TrainingError

pytestmark = pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(),
                                reason="torch.distributed with gloo is not available")


# Dropout and DropConnect off, so that the losses depend on the data and the gradients alone.
NO_DROPOUT = dict(dropout=0.0, dropout_h=0.0, dropout_i=0.0, dropout_e=0.0, weight_drop=0.0)
TINY_ARGS = ["--emb-size", "20", "--hidden-size", "40", "--chunk-size", "5", "--bptt", "10", "--seed", "1",
             "--threads", "1", "--device", "cpu", "--time-budget", "none", "--optimizer", "sgd", "--lr", "1"]
NO_DROPOUT_ARGS = ["--dropout", "0", "--dropout-h", "0", "--dropout-i", "0", "--dropout-e", "0", "--weight-drop", "0"]


def error_lines(stderr: str) -> list[str]:
    """What the processes said (torchrun adds its own report of the failure, which is not ours)."""
    return [line for line in stderr.splitlines() if line.startswith("error: ")]


def read_loss_log(path: Path) -> list[tuple[int, int, float]]:
    rows = [line.split("\t") for line in path.read_text().splitlines()]
    return [(int(epoch), int(position), float(loss)) for epoch, position, loss in rows]


@pytest.fixture(scope="module")
def two_processes(tmp_path_factory):
    """One 2-process run, 2 epochs, batch 2 per process, no dropout, SGD on the cosine schedule; its output
    directory holds only what it wrote."""
    data = tmp_path_factory.mktemp("data")
    corpus = {"train": write_corpus(data / "train.txt", 60, seed=0), "valid": write_corpus(data / "valid.txt", 12, 1)}
    out_dir = tmp_path_factory.mktemp("out")
    out, loss_log = out_dir / "m.onlstm", data / "losses.tsv"
    run = torchrun(corpus["train"], "--valid", corpus["valid"], "--out", out, "--epochs", "2", "--batch-size", "2",
                   "--loss-log", loss_log, "--lr-schedule", "cosine", *TINY_ARGS, *NO_DROPOUT_ARGS)
    assert run.returncode == 0, run.stderr[-3000:]
    return {"run": run, "out": out, "loss_log": loss_log, **corpus}


def test_two_processes_train_one_model_that_rank_0_writes(two_processes):
    out, stderr = two_processes["out"], two_processes["run"].stderr
    assert sorted(p.name for p in out.parent.iterdir()) == ["m.onlstm", "m.onlstm.ckpt", "m.onlstm.tokens"]
    assert stderr.count("training on 2 processes (gloo) × batch 2 = global batch 4") == 1
    assert stderr.count("end of epoch 2") == 1 and stderr.count("done: 2.00 epochs") == 1  # rank 0 alone reports

    loaded = load_model(out)
    assert loaded.meta["train"]["world_size"] == 2 and loaded.meta["train"]["global_batch_size"] == 4
    assert loaded.meta["train"]["batch_size"] == 2
    ckpt = read_archive(checkpoint_path(out), CHECKPOINT_FORMAT)
    assert (ckpt["epoch"], ckpt["position"]) == (3, 0)
    assert all(h["valid_ppl"] > 1 for h in ckpt["history"])

    parsed = CliRunner().invoke(app, ["parse", "--model", str(out), "--format", "bracket"],
                                input="The cat sat on the mat .\n")
    assert parsed.exit_code == 0, parsed.output
    assert nltk.Tree.fromstring(parsed.stdout).leaves() == ["The", "cat", "sat", "on", "the", "mat", "."]


def test_two_processes_take_the_steps_of_one_process_with_twice_the_batch(two_processes, tmp_path):
    """2 processes × batch 2 read the columns of 1 process × batch 4, and DDP averages their gradients (before
    clipping), and their rates follow one schedule: without dropout the two runs' losses are the same at every step."""
    loss_log = tmp_path / "losses.tsv"
    config = tiny_train_config(epochs=2, batch_size=4, optimizer="sgd", lr=1.0, loss_log=str(loss_log),
                               lr_schedule="cosine")
    train_model(two_processes["train"], tmp_path / "one.onlstm", {**TINY_MODEL, **NO_DROPOUT}, config,
                valid=two_processes["valid"], reporter=QuietReporter())
    one, two = read_loss_log(loss_log), read_loss_log(two_processes["loss_log"])
    assert len(one) > 20
    assert [step[:2] for step in two] == [step[:2] for step in one]  # the same windows: (epoch, position)
    assert [step[2] for step in two] == pytest.approx([step[2] for step in one], abs=1e-4)


def test_resume_in_one_process_with_the_same_global_batch(two_processes, tmp_path):
    """The columns depend on the global batch alone, so 1 process × batch 4 goes on where 2 × 2 stopped."""
    resume = tmp_path / "two.ckpt"
    shutil.copy(checkpoint_path(two_processes["out"]), resume)
    reporter = QuietReporter()
    result = train_model(two_processes["train"], tmp_path / "r.onlstm", dict(TINY_MODEL),
                         tiny_train_config(epochs=3, batch_size=4, optimizer="sgd", lr=1.0), resume=resume,
                         valid=two_processes["valid"], reporter=reporter)
    assert reporter.epochs_started == [3]
    assert result.epochs_done == pytest.approx(3.0) and len(result.history) == 3
    ckpt = read_archive(checkpoint_path(tmp_path / "r.onlstm"), CHECKPOINT_FORMAT)
    assert ckpt["meta"]["train"]["world_size"] == 1


def test_resume_with_another_global_batch_is_refused_in_one_line(two_processes, tmp_path):
    resume = tmp_path / "two.ckpt"
    shutil.copy(checkpoint_path(two_processes["out"]), resume)
    refusal = r"2 processes × batch 2 \(global batch 4\).*--nproc-per-node 2 --batch-size 2"
    with pytest.raises(TrainingError, match=refusal):
        train_model(two_processes["train"], tmp_path / "r.onlstm", dict(TINY_MODEL), tiny_train_config(batch_size=2),
                    resume=resume, reporter=QuietReporter())
    result = CliRunner().invoke(app, ["train", str(two_processes["train"]), "--out", str(tmp_path / "r.onlstm"),
                                      "--resume", str(resume), "--batch-size", "8", *TINY_ARGS])
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [result.stderr.strip()] and "global batch 4" in result.stderr
    assert not (tmp_path / "r.onlstm").exists()


def wait_until_training(agent: subprocess.Popen, loss_log: Path) -> None:
    deadline = time.monotonic() + SAFETY_TIMEOUT
    while not (loss_log.exists() and len(loss_log.read_text().splitlines()) >= 3):  # both ranks are training
        assert agent.poll() is None, agent.communicate()[1][-3000:]
        assert time.monotonic() < deadline, "the run never started training"
        time.sleep(0.1)


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="finds torchrun's workers through /proc")
def test_sigterm_to_one_rank_stops_every_rank_with_a_checkpoint(tmp_path):
    corpus = write_corpus(tmp_path / "train.txt", 60, seed=0)
    out, loss_log = tmp_path / "out" / "m.onlstm", tmp_path / "losses.tsv"
    agent = subprocess.Popen(torchrun_command(corpus, "--out", out, "--epochs", "1000", "--batch-size", "2",
                                              "--loss-log", loss_log, *TINY_ARGS),
                             cwd=REPO, env=torchrun_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_until_training(agent, loss_log)
        os.kill(worker_pid(agent.pid, rank=1), signal.SIGTERM)
        _, stderr = agent.communicate(timeout=SAFETY_TIMEOUT)
    finally:
        end_hung_run(agent)
    assert agent.returncode != 0  # the processes exit with 130, which torchrun reports as a failure
    assert stderr.count("interrupted: ") == 1, stderr[-3000:]
    # Rank 0 stopped at the step where rank 1 was told to stop, and saved that point.
    last_epoch, last_position, _ = read_loss_log(loss_log)[-1]
    ckpt = read_archive(checkpoint_path(out), CHECKPOINT_FORMAT)
    assert (ckpt["epoch"], ckpt["position"]) == (last_epoch, last_position) and last_position > 0
    assert sorted(p.name for p in out.parent.iterdir()) == ["m.onlstm", "m.onlstm.ckpt", "m.onlstm.tokens"]

    # The same 2 processes resume it and finish its epoch.
    resumed = torchrun(corpus, "--out", out, "--resume", checkpoint_path(out), "--epochs", last_epoch,
                       "--batch-size", "2", *TINY_ARGS)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"resuming from {checkpoint_path(out)} (epoch {last_epoch}" in resumed.stderr
    ckpt = read_archive(checkpoint_path(out), CHECKPOINT_FORMAT)
    assert (ckpt["epoch"], ckpt["position"]) == (last_epoch + 1, 0)


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="finds torchrun's workers through /proc")
def test_a_frozen_rank_ends_the_run_in_one_line_after_the_collective_timeout(tmp_path):
    """A stopped process (SIGSTOP) holds the others only ONLSTM_COLLECTIVE_TIMEOUT seconds: rank 0 then says so
    in one line and exits. torchrun would end the frozen one itself after a 30-second grace period it gives
    every worker (not ours to test): the test ends it as soon as rank 0 has exited."""
    corpus = write_corpus(tmp_path / "train.txt", 60, seed=0)
    out, loss_log = tmp_path / "out" / "m.onlstm", tmp_path / "losses.tsv"
    agent = subprocess.Popen(torchrun_command(corpus, "--out", out, "--epochs", "1000", "--batch-size", "2",
                                              "--loss-log", loss_log, *TINY_ARGS),
                             cwd=REPO, env={**torchrun_env(), "ONLSTM_COLLECTIVE_TIMEOUT": "3"},
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    frozen = None
    try:
        wait_until_training(agent, loss_log)
        frozen, rank_0 = worker_pid(agent.pid, rank=1), worker_pid(agent.pid, rank=0)
        os.kill(frozen, signal.SIGSTOP)
        deadline = time.monotonic() + SAFETY_TIMEOUT
        while not has_ended(rank_0) and time.monotonic() < deadline:
            time.sleep(0.1)
        os.kill(frozen, signal.SIGKILL)
        _, stderr = agent.communicate(timeout=SAFETY_TIMEOUT)
    finally:
        end_hung_run(agent)
        with contextlib.suppress(ProcessLookupError, TypeError):
            if Path(f"/proc/{frozen}").exists() and agent.returncode is None:
                os.kill(frozen, signal.SIGKILL)
    assert agent.returncode != 0
    errors = error_lines(stderr)
    assert len(errors) == 1, stderr[-3000:]
    assert "another process of this run did not answer for 3 s" in errors[0]
    assert "ONLSTM_COLLECTIVE_TIMEOUT" in errors[0] and f"--resume {checkpoint_path(out)} goes on from here" in errors[0]
    # rank 0 kept where it stood: a step the frozen rank took part in, at most the one after the last logged
    last_epoch, last_position, _ = read_loss_log(loss_log)[-1]
    ckpt = read_archive(checkpoint_path(out), CHECKPOINT_FORMAT)
    assert ckpt["epoch"] >= last_epoch and (ckpt["epoch"], ckpt["position"]) >= (last_epoch, last_position)
    assert "Traceback" not in stderr[:stderr.index(errors[0])]  # torchrun's report of the failure comes after it


@pytest.mark.parametrize("env,error", [
    ({}, "error: too little text for batch size 4 × 2 processes (12 tokens)"),
    ({"ONLSTM_COLLECTIVE_TIMEOUT": "soon"}, "error: ONLSTM_COLLECTIVE_TIMEOUT='soon': expected a number of seconds"),
])
def test_a_failed_setup_is_told_once_by_rank_0_and_leaves_no_token_file(tmp_path, env, error):
    corpus = tmp_path / "three.txt"
    corpus.write_text("The cat sat .\nA dog ran .\nThe bird flew .\n", encoding="utf-8")  # 12 tokens with <eos>
    out = tmp_path / "out" / "m.onlstm"
    run = torchrun(corpus, "--out", out, "--batch-size", "4", *TINY_ARGS, env=env)
    assert run.returncode != 0
    errors = error_lines(run.stderr)
    assert len(errors) == 1 and errors[0].startswith(error), run.stderr[-3000:]
    assert not out.parent.exists() or list(out.parent.iterdir()) == []


def test_the_collective_timeout_is_read_from_the_environment(monkeypatch):
    monkeypatch.delenv("ONLSTM_COLLECTIVE_TIMEOUT", raising=False)
    assert collective_timeout() == DEFAULT_COLLECTIVE_TIMEOUT
    monkeypatch.setenv("ONLSTM_COLLECTIVE_TIMEOUT", "2.5")
    assert collective_timeout() == 2.5
    for bad in ("0", "-1", "nan", "inf", "5m"):
        monkeypatch.setenv("ONLSTM_COLLECTIVE_TIMEOUT", bad)
        with pytest.raises(TrainingError, match="expected a number of seconds above 0"):
            collective_timeout()


def test_only_a_lost_peer_is_told_as_one():
    two = Group(rank=0, world_size=2, backend="gloo", timeout=7.0)
    gloo_timeout = RuntimeError("[gloo/transport/tcp/unbound_buffer.cc:78] Timed out waiting 7000ms for recv operation")
    assert "did not answer for 7 s" in lost_peer(gloo_timeout, two)
    assert lost_peer(RuntimeError("[gloo/transport/tcp/pair.cc:534] Connection closed by peer [::1]:2934"),
                     two) == "another process of this run ended"
    assert lost_peer(RuntimeError("CUDA error: out of memory"), two) is None
    assert lost_peer(ValueError("timed out"), two) is None
    assert lost_peer(gloo_timeout, Group()) is None  # one process has no peer
