"""The recipe's teachers trained side by side: one process a model (a family's seed), the threads shared out.

An ON-LSTM's training step is a chain of small matrix products that one process cannot spread over many
cores, so K seeds in K processes finish sooner than K seeds one after another on all the threads (on a
2-core VM, benchmarks/README.md). Each process trains one job (families.TeacherJob) as its family does, with its
own checkpoint; its log lines carry its label ([seed 1111]). On a terminal (a live display, lm/report.RichReporter)
each process reports to the recipe's process instead, which shows one live line a job. A signal to the recipe is
passed on to every process, each checkpoints and stops; a process whose parent died (kill -9) stops itself the
same way, so nothing trains on unwatched.
"""
from __future__ import annotations

import math
import multiprocessing
import os
import queue
import signal
import sys
import threading
import time
from dataclasses import asdict
from onlstm_cli.errors import StoppedBySignal
from onlstm_cli.induction.parallel import usable_cores
from onlstm_cli.training.families import TeacherJob
from onlstm_cli.training.lm.train import LineReporter
from onlstm_cli.signals import StopSignals


# At most this many training processes a core: more than one a core keeps every core busy where the seeds
# do not divide into the cores (3 seeds on 2 cores: no round with a core idle, 1.31× sooner,
# benchmarks/README.md), while memory stays bounded by the number of cores.
PROCESSES_PER_CORE = 2


def slots(seeds: int, threads: int | None, device: str, asked: int | None) -> int:
    """How many language models train at once: `asked`; else, where --threads holds the run below the cores,
    one a thread (more processes would use more cores than it allows); else all `seeds` at once where that is
    at most two a core (the OS shares the cores out), beyond that as few rounds as can be, made even. One on a
    GPU, whose kernels one process already keeps busy."""
    if asked is not None:
        return max(1, min(asked, seeds))
    if device == "cuda" or (device == "auto" and _cuda_available()):
        return 1
    cores = usable_cores()
    if threads is not None and threads < cores:
        return max(1, min(seeds, threads))
    return math.ceil(seeds / waves(seeds, PROCESSES_PER_CORE * cores))


def threads_each(slots: int, threads: int | None) -> int:
    return max(1, (threads or usable_cores()) // slots)


def waves(seeds: int, slots: int) -> int:
    """Rounds of training the K models take: each model's time budget is the stage's divided by this."""
    return math.ceil(seeds / slots)


def _cuda_available() -> bool:
    import torch
    return torch.cuda.is_available()


class _LineStream:
    """A stream that hands on whole lines (`emit`), each once its newline comes: print() writes the text and its
    newline in two calls, and another process's line written between them would be glued to this one. A partial
    line flushed on purpose (or the process ending) goes out as it is."""

    def __init__(self):
        self.pending = ""

    def write(self, text: str) -> int:
        *lines, self.pending = (self.pending + text).split("\n")
        if lines:
            self.emit(lines, ended=True)
        return len(text)

    def flush(self):
        if self.pending:
            self.emit([self.pending], ended=False)
            self.pending = ""

    def emit(self, lines: list[str], ended: bool) -> None:
        raise NotImplementedError

    def isatty(self) -> bool:
        return False


class _SeedStream(_LineStream):
    """stderr of a seed's process: every line starts with the seed, so side-by-side logs stay readable, and goes
    out whole, in one write."""

    def __init__(self, stream, prefix: str):
        super().__init__()
        self.stream, self.prefix = stream, prefix

    def emit(self, lines: list[str], ended: bool) -> None:
        end = "\n" if ended else ""
        self.stream.write("".join(f"{self.prefix}{line}{end}" for line in lines))
        self.stream.flush()

    def flush(self):
        super().flush()
        self.stream.flush()


def _stop_when_orphaned(parent: int) -> None:
    """SIGTERM to ourselves once the recipe's process is gone: training checkpoints and ends."""
    def watch():
        while os.getppid() == parent:
            time.sleep(1.0)
        os.kill(os.getpid(), signal.SIGTERM)
    threading.Thread(target=watch, daemon=True).start()


class _QueueReporter:
    """A job's reports sent to the recipe's process, for its live display: ("event", its number, method, args) on
    the results queue; progress at most every `every_s` seconds (a step takes milliseconds)."""

    def __init__(self, number: int, results, every_s: float = 0.5):
        self.number, self.results, self.every_s, self.last = number, results, every_s, 0.0

    def send(self, method: str, *args) -> None:
        self.results.put(("event", self.number, method, args))

    def start_epoch(self, epoch, n_tokens):
        self.send("start_epoch", epoch, n_tokens)

    def progress(self, epoch, tokens_done, loss, tokens_per_s, eta_s):
        if time.monotonic() - self.last >= self.every_s:
            self.last = time.monotonic()
            self.send("progress", epoch, tokens_done, loss, tokens_per_s, eta_s)

    def end_epoch(self, epoch, train_ppl, valid_ppl, saved, done=1.0):
        self.send("end_epoch", epoch, train_ppl, valid_ppl, saved, done)

    def message(self, text):
        self.send("message", text)


class _MessageStream(_LineStream):
    """stderr of a job's process under the live display: each line a message on the job's row. Written to the
    terminal itself, a line would land among the display's rows, which the next redraw erases."""

    def __init__(self, reporter: _QueueReporter):
        super().__init__()
        self.reporter = reporter

    def emit(self, lines: list[str], ended: bool) -> None:
        for line in lines:
            self.reporter.message(line)


def train_seed(job: TeacherJob, results, parent: int, live: bool = False) -> None:
    """The body of a job's process: its family trains it, then (its number, outcome) goes on `results`; `live`: its
    reports and its stderr go there too, for the recipe's live display, else they are lines on stderr."""
    reporter = _QueueReporter(job.number, results) if live else LineReporter()
    sys.stderr = _MessageStream(reporter) if live else _SeedStream(sys.__stderr__, f"[{job.label}] ")
    signal.signal(signal.SIGTERM, _interrupt)  # until training's own handlers: files being written are cleaned up
    _stop_when_orphaned(parent)
    try:
        outcome = asdict(job.family.train(job, reporter))
    except KeyboardInterrupt as e:  # stopped before its training's handlers were set: nothing to checkpoint yet
        outcome = {"interrupted": True, "stop_signal": getattr(e, "signal", signal.SIGINT)}
    except StoppedBySignal as e:  # stopped while its teachers parsed (a focused PCFG's): nothing written either
        outcome = {"interrupted": True, "stop_signal": e.signal}
    except Exception as e:  # said in the recipe's one line; the traceback helps no user
        outcome = {"error": str(e) or type(e).__name__}
    sys.stderr.flush()
    results.put((job.number, outcome))


class _Interrupted(KeyboardInterrupt):
    def __init__(self, signum: int):
        super().__init__(f"signal {signum}")
        self.signal = signum


def _interrupt(signum, frame):
    raise _Interrupted(signum)


class _ForwardSignals(StopSignals):
    """While the processes run: Ctrl-C or SIGTERM to the recipe is passed on to each of them (they
    checkpoint and stop), and remembered (`caught`) so that no new seed starts."""

    def __init__(self, running: dict):
        super().__init__()
        self.running = running

    def catch(self, signum, frame):
        super().catch(signum, frame)
        self.stop_all(signal.SIGTERM)

    def stop_all(self, signum: int) -> None:
        for process in self.running.values():
            if process.is_alive():
                os.kill(process.pid, signum)

    def __exit__(self, kind, error, trace):
        if kind is not None:  # a fault of the recipe's own: the models checkpoint and stop before it is said
            self.stop_all(signal.SIGTERM)
            for process in self.running.values():
                process.join(timeout=60)
        super().__exit__(kind, error, trace)


def train_side_by_side(jobs: list[TeacherJob], slots: int, started, finished, tick=None, live=None) -> int:
    """Train the jobs, at most `slots` at once. `started(job)` and `finished(job, outcome)` are called in
    this process as each starts and ends (outcome: train_seed's dict, or {"error": …} for a process that
    died without one), `tick(training, waiting)` about once a second meanwhile (the seeds training, how many
    wait). `live`: a display (train_report.RichReporter) each process reports to, a row a seed, else each
    writes its own lines. Returns the signal that stopped the stage, 0 when every job ran to its end."""
    context = multiprocessing.get_context("spawn")  # fork would copy torch's thread pools mid-state
    results = context.Queue()
    waiting, running, by_number = list(jobs), {}, {job.number: job for job in jobs}
    stop = 0
    with _ForwardSignals(running) as signals:
        while running or (waiting and not (stop or signals.caught)):  # once stopped, no seed starts
            stop = stop or signals.caught
            while waiting and len(running) < slots and not stop:
                job = waiting.pop(0)
                running[job.number] = context.Process(target=train_seed, args=(job, results, os.getpid(), bool(live)))
                running[job.number].start()
                started(job)
            for number, outcome in _collect(results, running, live and (live, by_number)):
                running.pop(number).join()
                if live:  # its row leaves the display, for the next round's
                    live.end_row(_row_name(by_number[number]))
                finished(by_number[number], outcome)
                if outcome.get("interrupted") or "error" in outcome:
                    stop = stop or signals.caught or outcome.get("stop_signal") or signal.SIGTERM
                    signals.stop_all(signal.SIGTERM)  # the others checkpoint and stop: a rerun goes on
            if tick is not None and running and not (stop or signals.caught):
                tick([by_number[n] for n in sorted(running)], len(waiting))
    return signals.caught or stop  # the signal the user sent, not the one passed on


def _collect(results, running: dict, live=None, wait_s: float = 1.0) -> list:
    """(job number, outcome) of the processes that ended: what they said, or an error for one that died silent. The
    reports that came meanwhile go to the `live` display, a row a job."""
    ended = _relay(_drain(results, wait_s), live)
    said = {number for number, _ in ended}
    dead = [number for number, process in running.items() if number not in said and process.exitcode is not None]
    if dead:
        ended += _relay(_drain(results, wait_s), live)  # a result put just before its process ended may be in the pipe
        said = {number for number, _ in ended}
        ended += [(number, _died(running[number].exitcode)) for number in dead if number not in said]
    return ended


def _died(exitcode: int) -> dict:
    """The outcome of a process that ended without saying one: ended by Ctrl-C or SIGTERM (sent to it before it
    had set its handlers, as it started), an interruption to resume; otherwise a failure."""
    if exitcode in (-signal.SIGTERM, -signal.SIGINT):
        return {"interrupted": True, "stop_signal": -exitcode}
    return {"error": f"its process ended with exit code {exitcode} and no result"}


def _relay(items: list, live) -> list:
    """The outcomes among `items`; the reports among them shown on `live` (the display, the jobs by number), each
    on its job's row."""
    outcomes = []
    for item in items:
        if item[0] == "event":
            _, number, method, args = item
            if live:
                display, by_number = live
                getattr(display.row(_row_name(by_number[number])), method)(*args)
        else:
            outcomes.append(item)
    return outcomes


def _row_name(job: TeacherJob) -> str:
    return f"[{job.label}] "


def _drain(results, wait_s: float) -> list:
    ended = []
    try:
        ended.append(results.get(timeout=wait_s))
        while True:
            ended.append(results.get_nowait())
    except queue.Empty:
        return ended
