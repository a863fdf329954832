"""Ctrl-C and SIGTERM as a request to stop training at the end of a step (language models, span parsers,
the recipe's stages alike)."""
from __future__ import annotations

import signal
import threading


class StopSignals:
    """Ctrl-C (SIGINT) and SIGTERM (`kill`, `timeout`, a job scheduler, torchrun passing a Ctrl-C on) ask
    training to stop after its current step: the ranks agree on it (see Trainer.agree) and write a
    checkpoint, where an exception at a random point could leave the others waiting in a collective.
    Handlers can only be set in the main thread; elsewhere nothing is caught."""

    def __init__(self):
        self.caught = 0  # the signal number, 0 while none came
        self.previous = {}

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self.previous[sig] = signal.signal(sig, self.catch)
        return self

    def catch(self, signum, frame):
        self.caught = signum

    def __exit__(self, *exc):
        for sig, handler in self.previous.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
