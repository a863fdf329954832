"""A PCFG on several processes: `torchrun --nproc-per-node 2 -m onlstm_cli train --family pcfg` on CPU (gloo)
trains the model one process trains on the same global batches, and rank 0 alone writes and speaks."""
from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
from typer.testing import CliRunner

from conftest import (REPO, SAFETY_TIMEOUT, end_hung_run, has_ended, torchrun, torchrun_command, torchrun_env,
                      worker_pid, write_corpus)
from test_pcfg_train import SMALL, one_error_line, run

from onlstm_cli.modelfile import CHECKPOINT_FORMAT, MODEL_FORMAT, read_archive

pytestmark = pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(),
                                reason="torch.distributed with gloo is not available")

ARGS = ["--family", "pcfg", "--epochs", "1", "--seed", "7", "--threads", "1", "--device", "cpu",
        "--time-budget", "none", *SMALL]


LINES = ["the cat sat on the mat", "a dog saw the cat", "the bird sang", "dogs bark", "a cat saw a bird today"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """One step, of the same PCFG, by two processes of 2 sentences each and by one process of 4: on 3 training lines
    (shared 2 and 1) and on 1 (the second process has none). The validation text is the last two lines."""
    data = tmp_path_factory.mktemp("data")
    valid = data / "valid.txt"
    valid.write_text("\n".join(LINES[3:]) + "\n")
    made = {"valid": valid}
    for n in (3, 1):
        train = data / f"train{n}.txt"
        train.write_text("\n".join(LINES[:n]) + "\n")
        two, one = (tmp_path_factory.mktemp(f"two{n}") / "m.onlstm", tmp_path_factory.mktemp(f"one{n}") / "m.onlstm")
        ran = torchrun(train, "--valid", valid, "-o", two, "--batch-size", "2", *ARGS)
        assert ran.returncode == 0, ran.stderr[-3000:]
        alone = run(CliRunner(), ["train", train, "--valid", valid, "-o", one, "--batch-size", "4", *ARGS])
        assert alone.exit_code == 0, alone.output
        made[n] = {"two": two, "one": one, "stderr": ran.stderr, "train": train}
    return made


def final_state(out):
    return read_archive(out.with_name(out.name + ".ckpt"), CHECKPOINT_FORMAT)["pcfg_training"]


@pytest.mark.parametrize("lines", [3, 1])
def test_two_processes_take_the_step_one_process_takes_on_their_global_batch(runs, lines):
    """Adam's first moment after one step is (1 − β1) × the step's gradient (clipped): the same gradient, summed
    over the processes' shares of the batch, as one process computes on the whole of it. (The weights themselves
    are not compared: Adam's first step moves a weight whose gradient is nearly 0 by ±lr on its sign, which float
    sums in another order can flip, as a run on another number of threads does.)"""
    two, one = final_state(runs[lines]["two"]), final_state(runs[lines]["one"])
    assert two["step"] == one["step"] == 0 and two["epoch"] == one["epoch"] == 2  # one epoch, done
    first = [state["optimizer"]["state"] for state in (two, one)]
    assert len(first[0]) == len(first[1]) == len(one["state_dict"])
    for k in first[1]:
        assert first[1][k]["step"] == 1
        expected = first[1][k]["exp_avg"]  # float sums in another order: differences far below its largest
        torch.testing.assert_close(first[0][k]["exp_avg"], expected, rtol=1e-3, atol=1e-3 * float(expected.abs().max()))
    assert any(bool(s["exp_avg"].abs().sum() > 0) for s in first[1].values())
    assert two["history"][0]["valid_ppl"] == pytest.approx(one["history"][0]["valid_ppl"], rel=1e-3)
    assert two["identity"]["batch_size"] == one["identity"]["batch_size"] == 4  # the global batch


def test_rank_0_alone_writes_and_speaks(runs):
    out, stderr = runs[3]["two"], runs[3]["stderr"]
    assert sorted(p.name for p in out.parent.iterdir()) == ["m.onlstm", "m.onlstm.ckpt"]
    assert read_archive(out, MODEL_FORMAT)["meta"]["train"]["world_size"] == 2
    assert stderr.count("training on 2 processes (gloo) × batch 2 = global batch 4 sentences") == 1
    assert stderr.count("end of epoch 1") == 1 and stderr.count("done: 1.00 epochs") == 1
    assert "Traceback" not in stderr


def test_a_run_goes_on_in_one_process_with_the_same_global_batch_and_another_is_refused(runs):
    out = runs[3]["two"]
    common = [runs[3]["train"], "--valid", runs["valid"], "--resume", out.with_name(out.name + ".ckpt"),
              *ARGS[:2], "--epochs", "2", *ARGS[4:]]
    refused = run(CliRunner(), ["train", "-o", out, "--batch-size", "2", *common])
    one_error_line(refused, "global batch (--batch-size × torchrun's processes)", "4 there, 2 here")
    resumed = run(CliRunner(), ["train", "-o", out, "--batch-size", "4", *common])
    assert resumed.exit_code == 0, resumed.output
    state = final_state(out)
    assert [h["epoch"] for h in state["history"]] == [1, 2] and state["epoch"] == 3


def start_training(tmp_path, env: dict | None = None) -> tuple[subprocess.Popen, Path, Path, list]:
    """A 2-process run of many epochs, once both of its processes are training: (torchrun, its stderr's file,
    --out, its arguments)."""
    corpus, log = write_corpus(tmp_path / "train.txt", 60, seed=0), tmp_path / "stderr.txt"
    out = tmp_path / "out" / "m.onlstm"
    args = [corpus, "-o", out, "--batch-size", "2", *ARGS[:2], "--epochs", "1000", *ARGS[4:]]
    with open(log, "w") as stderr:
        agent = subprocess.Popen(torchrun_command(*args), cwd=REPO, env={**torchrun_env(), **(env or {})},
                                 stdout=subprocess.DEVNULL, stderr=stderr)
    deadline = time.monotonic() + SAFETY_TIMEOUT
    while "end of epoch 2" not in log.read_text():  # both ranks are training
        if agent.poll() is not None or time.monotonic() > deadline:
            end_hung_run(agent)
            pytest.fail(log.read_text()[-3000:])
        time.sleep(0.1)
    return agent, log, out, args


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="finds torchrun's workers through /proc")
def test_sigterm_to_one_rank_stops_every_rank_at_one_step_and_the_run_resumes(tmp_path):
    """Any rank's signal is shared before each step: both stop at the same step, rank 0 writes the checkpoint
    and says so once, and the same two processes go on from it."""
    agent, log, out, args = start_training(tmp_path)
    try:
        os.kill(worker_pid(agent.pid, rank=1), signal.SIGTERM)
        agent.wait(timeout=SAFETY_TIMEOUT)
    finally:
        end_hung_run(agent)
    said = log.read_text()
    assert agent.returncode != 0 and said.count("interrupted in epoch") == 1, said[-3000:]
    assert not [line for line in said.splitlines() if line.startswith("error")]  # torchrun's own report aside
    state = final_state(out)
    stopped = (state["epoch"], state["step"])
    assert f"interrupted in epoch {stopped[0]} after {stopped[1]} batches" in said
    assert sorted(p.name for p in out.parent.iterdir()) == ["m.onlstm", "m.onlstm.ckpt"]

    resumed = torchrun(*args[:-len(ARGS[4:]) - 2], "--epochs", stopped[0], *ARGS[4:], "--resume",
                       out.with_name(out.name + ".ckpt"))
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"resumed in epoch {stopped[0]} after {stopped[1]} batches" in resumed.stderr
    state = final_state(out)
    assert (state["epoch"], state["step"]) == (stopped[0] + 1, 0)


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="finds torchrun's workers through /proc")
def test_a_frozen_rank_ends_the_run_in_one_line_after_the_collective_timeout(tmp_path):
    """A stopped process (SIGSTOP) holds the other only ONLSTM_COLLECTIVE_TIMEOUT seconds: rank 0 then keeps a
    checkpoint, says so in one line and exits (the test ends the frozen one, as torchrun would after its grace)."""
    agent, log, out, _ = start_training(tmp_path, {"ONLSTM_COLLECTIVE_TIMEOUT": "3"})
    frozen = worker_pid(agent.pid, rank=1)
    try:
        rank_0 = worker_pid(agent.pid, rank=0)
        os.kill(frozen, signal.SIGSTOP)
        deadline = time.monotonic() + SAFETY_TIMEOUT
        while not has_ended(rank_0) and time.monotonic() < deadline:
            time.sleep(0.1)
        os.kill(frozen, signal.SIGKILL)
        agent.wait(timeout=SAFETY_TIMEOUT)
    finally:
        end_hung_run(agent)
    errors = [line for line in log.read_text().splitlines() if line.startswith("error: ")]
    assert agent.returncode != 0 and len(errors) == 1, log.read_text()[-3000:]
    assert "another process of this run did not answer for 3 s" in errors[0]
    assert f"--resume {out.with_name(out.name + '.ckpt')} goes on from here" in errors[0]
    assert final_state(out)["epoch"] >= 2


def test_a_failed_setup_is_told_once_by_rank_0(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n")
    ran = torchrun(empty, "-o", tmp_path / "m.onlstm", *ARGS)
    errors = [line for line in ran.stderr.splitlines() if line.startswith("error: ")]
    assert ran.returncode != 0 and len(errors) == 1, ran.stderr[-3000:]
    assert "empty.txt" in errors[0] and list(tmp_path.iterdir()) == [empty]
