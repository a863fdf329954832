"""Parsing on several cores: `parse --jobs N` and `parse_in_workers`.

Each worker process holds its own copy of the model (a `LineParser` is sent once, when the worker starts) and
parses whole input batches, the same batches one process would parse, with one torch thread each: a batch's
trees do not depend on how many workers there are, so the output is byte-for-byte that of --jobs 1. Results
come back in input order; at most `2 × jobs` batches are out at once, so memory stays flat on any input, and
when input runs dry (a pipe waiting for its next line) every batch read so far is answered first.

Processes, not threads: the span parser's and the ON-LSTM's steps are small products with Python in between,
which threads of one interpreter share badly. Workers are started with "spawn" (a forked child of a process
that has run OpenMP can hang) and ignore Ctrl-C, which the parent handles by stopping them all.
"""
from __future__ import annotations

import os
import signal
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
import multiprocessing

from onlstm_cli.errors import OnlstmError, WorkerError
from onlstm_cli.text.input_lines import PausedLines

MAX_JOBS = 256  # more workers than this is a typo, not a machine


def usable_cores() -> int:
    """The cores this process may run on (its affinity mask, where the system has one)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def default_jobs() -> int:
    """Workers that serve this machine: one process on up to 2 cores (its threads already run batches side
    by side there; a second process would only add its start-up), else one worker per 2 cores."""
    cores = usable_cores()
    return 1 if cores <= 2 else cores // 2


def check_jobs(jobs: int) -> int:
    if not 1 <= jobs <= MAX_JOBS:
        raise OnlstmError(f"--jobs must be between 1 and {MAX_JOBS}, got {jobs}")
    return jobs


_WORKER_PARSER = None


def _start_worker(parser, threads: int) -> None:
    import torch

    global _WORKER_PARSER
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops every worker on Ctrl-C
    # as `parse` runs (cli/app.with_denormals_flushed, fast.denormals_flushed), which a spawned process does not
    # inherit: set before its threads start so that they flush too (a PCFG's charts make many denormals); the
    # worker's process ends with it, so nothing is set back
    torch.set_flush_denormal(True)
    torch.set_num_threads(threads)
    _WORKER_PARSER = parser


def _parse_batch(lines: list[str]):
    return next(_WORKER_PARSER.parse_batches([lines]))


def parse_in_workers(parser, batches: Iterable[Sequence[str]], jobs: int) -> Iterator[list]:
    """Like `parser.parse_batches(batches)`, over `jobs` worker processes. After a batch that is PausedLines
    (the input had no more ready: read_input_batches) every batch read so far is answered before the next is
    read; other batches go to the workers as they come, whatever their length. An OnlstmError from the input
    (a line that is not UTF-8) comes after the answers to every batch before it."""
    pool = ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn"), initializer=_start_worker,
                               initargs=(parser, max(1, usable_cores() // jobs)))
    pending: deque = deque()
    batches = iter(batches)
    try:
        while True:
            try:
                batch = next(batches)
            except StopIteration:
                break
            except OnlstmError:  # bad input (a line that is not UTF-8): every line before it is answered first
                while pending:
                    yield _result(pending.popleft())
                raise
            pending.append(pool.submit(_parse_batch, list(batch)))
            while pending and (len(pending) >= 2 * jobs or isinstance(batch, PausedLines) or pending[0].done()):
                yield _result(pending.popleft())
        while pending:
            yield _result(pending.popleft())
    except BaseException:
        _stop(pool)
        raise
    pool.shutdown()


def _result(future) -> list:
    try:
        return future.result()
    except BrokenProcessPool:
        raise WorkerError("a parse worker died (killed or out of memory); the lines after the last one "
                          "written were not parsed") from None


def _stop(pool: ProcessPoolExecutor) -> None:
    """End every worker now (Ctrl-C, a dead sibling, a closed stdout), without waiting for their batches."""
    for process in list((pool._processes or {}).values()):  # no public way to kill a pool's processes
        if process.is_alive():
            process.kill()
    pool.shutdown(wait=True, cancel_futures=True)
