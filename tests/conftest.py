"""Shared fixtures: a tiny corpus, a tiny trained model (trained once per session), a quiet reporter.

Everything here is deliberately small (emb 20, hidden 40, chunk 5, a few hundred tokens) so the whole
suite stays fast on a busy two-core machine.
"""
from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).parent / "fixtures"

# Keep torch to one thread: the machine is shared and tiny models gain nothing from more.
torch.set_num_threads(1)

# Without a GPU, Triton kernels (the optional Triton cell, tests/fast/test_triton_cell.py) can only run in
# Triton's interpreter, on CPU tensors. It must be chosen before the first `import triton`: triton's own
# library functions (tl.cumsum, tl.sum, ...) are defined as kernels then.
if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

TINY_MODEL = dict(emb_size=20, hidden_size=40, n_layers=3, chunk_size=5)

_DETS = ["the", "a"]
_NOUNS = ["cat", "dog", "mat", "man", "woman", "bird", "house", "tree"]
_VERBS = ["sat", "saw", "liked", "found", "chased"]
_PREPS = ["on", "in", "near", "under"]


def make_sentences(n: int, seed: int = 0) -> list[str]:
    """Simple English sentences with punctuation (dropped at training time, so ',' is not in the vocab)."""
    rng = random.Random(seed)
    lines = []
    for k in range(n):
        subj = f"{rng.choice(_DETS).capitalize()} {rng.choice(_NOUNS)}"
        obj = f"{rng.choice(_DETS)} {rng.choice(_NOUNS)}"
        if k % 5 == 0:
            lines.append(f"Hello , world ! {subj} {rng.choice(_VERBS)} {obj} .")
        elif k % 3 == 0:
            lines.append(f"{subj} {rng.choice(_VERBS)} {obj} {rng.choice(_PREPS)} {obj} .")
        else:
            lines.append(f"{subj} {rng.choice(_VERBS)} {obj} , {rng.choice(_PREPS)} the {rng.choice(_NOUNS)} .")
    return lines


def write_corpus(path: Path, n: int, seed: int = 0) -> Path:
    path.write_text("\n".join(make_sentences(n, seed)) + "\n", encoding="utf-8")
    return path


def sigterm_after_first_chunk(monkeypatch, teacher, chunk: int = 5) -> list[int]:
    """Makes the teachers' parse (votes.parsed_in_time) go `chunk` training sentences at a time and `teacher` send
    its process SIGTERM as it parses each chunk; returns the list of chunk sizes it was asked to parse."""
    from onlstm_cli.training.student import votes
    monkeypatch.setattr(votes, "PARSE_CHUNK", chunk)
    chunks, real = [], teacher.voter_trees

    def parse_then_signal(sentences, *args, **kwargs):
        if len(sentences) == chunk:  # a chunk of the training text, not the validation text
            chunks.append(len(sentences))
            os.kill(os.getpid(), signal.SIGTERM)
        return real(sentences, *args, **kwargs)

    monkeypatch.setattr(teacher, "voter_trees", parse_then_signal)
    return chunks


class QuietReporter:
    """A Reporter that records what training told it instead of printing."""

    def __init__(self):
        self.progress_calls = 0
        self.epochs_started: list[int] = []
        self.epochs_ended: list[tuple] = []
        self.messages: list[str] = []

    def start_epoch(self, epoch, n_tokens):
        self.epochs_started.append(epoch)

    def progress(self, epoch, tokens_done, loss, tokens_per_s, eta_s):
        self.progress_calls += 1

    def end_epoch(self, epoch, train_ppl, valid_ppl, saved, done=1.0):
        self.epochs_ended.append((epoch, train_ppl, valid_ppl, saved, done))

    def message(self, text):
        self.messages.append(text)


def forget_backend_probes() -> tuple:
    """Clear the cached backend probes, so that the next backend choice probes again, as a fresh process does;
    the probes, for callers that check they ran."""
    from onlstm_cli import fast
    from onlstm_cli.fast import onednn, span
    probes = (fast._select, fast.c_cell_works, onednn.works, span.c_span_works)
    for probe in probes:
        probe.cache_clear()
    return probes


@pytest.fixture
def quiet_reporter():
    return QuietReporter()


def tiny_train_config(**overrides):
    from onlstm_cli.training.lm.train import TrainConfig
    options = dict(epochs=1, time_budget=None, batch_size=4, bptt=10, optimizer="adam", lr=0.01, seed=1, device="cpu",
                   threads=1, eval_batch_size=2)
    options.update(overrides)
    return TrainConfig(**options)


@pytest.fixture(scope="session")
def tiny_corpus(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("corpus")
    return {"train": write_corpus(root / "train.txt", 60, seed=0),
            "valid": write_corpus(root / "valid.txt", 12, seed=1)}


@pytest.fixture(scope="session")
def tiny_model_path(tmp_path_factory, tiny_corpus) -> Path:
    """A tiny model trained for 2 epochs once per session (parse layer 2 of 3)."""
    from onlstm_cli.training.lm.train import train_model
    out = tmp_path_factory.mktemp("model") / "tiny.onlstm"
    train_model(tiny_corpus["train"], out, dict(TINY_MODEL), tiny_train_config(epochs=2),
                valid=tiny_corpus["valid"], reporter=QuietReporter())
    assert out.is_file()
    return out


@pytest.fixture
def model(tiny_model_path) -> str:
    """The tiny model's path, as the CLI takes it."""
    return str(tiny_model_path)


@pytest.fixture
def runner():
    from typer.testing import CliRunner
    return CliRunner()


@pytest.fixture(scope="session")
def tiny_loaded(tiny_model_path):
    from onlstm_cli.modelfile import load_model
    return load_model(tiny_model_path)


def right_to_left_copy(path, tmp_path):
    """The tiny model's weights marked as a right-to-left model (what `train --reverse` writes)."""
    from onlstm_cli.modelfile import atomic_save, read_archive
    archive = read_archive(path)
    archive["config"] = dict(archive["config"], reverse=True)
    target = tmp_path / "r.onlstm"
    atomic_save(archive, target)
    return target


def read_terminal(reader: int, process, timeout_s: float) -> bytes:
    """All that a pseudo-terminal's far end (`reader`) receives until `process`, writing to it, has closed it;
    the process is killed after `timeout_s` seconds."""
    import select
    import time
    chunks, deadline = [], time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not select.select([reader], [], [], 1.0)[0]:
            continue
        try:
            chunk = os.read(reader, 65536)
        except OSError:  # the terminal's far end closed: the process has exited
            break
        if not chunk:
            break
        chunks.append(chunk)
    else:
        process.kill()
    return b"".join(chunks)


# torchrun's runs (tests of training on several processes)
SAFETY_TIMEOUT = 300  # seconds; only so that a hung run fails the test instead of the whole CI job


def torchrun_command(*args, nproc: int = 2) -> list[str]:
    # --standalone: a rendezvous on a free local port, so that tests running side by side do not collide
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(nproc),
            "-m", "onlstm_cli", "train", *map(str, args)]


def torchrun_env() -> dict:
    return {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}


def torchrun(*args, nproc: int = 2, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(torchrun_command(*args, nproc=nproc), cwd=REPO, env={**torchrun_env(), **(env or {})},
                          capture_output=True, text=True, timeout=SAFETY_TIMEOUT)


def worker_pid(agent_pid: int, rank: int) -> int | None:
    """The pid of torchrun's worker process of `rank` (from Linux's /proc)."""
    for task in Path(f"/proc/{agent_pid}/task").iterdir():
        for pid in (task / "children").read_text().split():
            with contextlib.suppress(FileNotFoundError, ProcessLookupError):  # a process that has just ended
                if f"RANK={rank}".encode() in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
                    return int(pid)
    return None


def has_ended(pid: int) -> bool:
    """The process has exited (a zombie its parent has not yet reaped counts)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def end_hung_run(agent: subprocess.Popen) -> None:
    """Leaves no process of a hung run behind (the workers have sessions of their own)."""
    if agent.poll() is None:
        for rank in (0, 1):
            with contextlib.suppress(ProcessLookupError, TypeError):
                os.kill(worker_pid(agent.pid, rank), signal.SIGKILL)
        agent.kill()
        agent.wait()
