"""stdout as filters use it: a reader that goes away (`onlstm parse big.txt | head -1`) ends the command
quietly with 141, as `cat` or `grep` do, from the CLI and from the library's rich output alike."""
from __future__ import annotations

import os
import sys

import typer


SIGPIPE_EXIT = 141  # 128 + SIGPIPE: what `cat`, `grep` or `yes` end with when the reader goes away


def stdout_closed() -> None:
    """The reader of stdout went away (`onlstm parse big.txt | head -1`): stop quietly, as filters do.

    stdout now points at /dev/null, so the flush at exit finds no broken pipe to complain about (the
    convention of Python's signal documentation)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # stdout is no real file (a test's capture): nothing to silence
        pass
    raise typer.Exit(SIGPIPE_EXIT)


def stdout_console(**options):
    """A rich Console on stdout that ends like the rest of the CLI when its reader goes away (rich's own
    ending is exit code 1)."""
    from rich.console import Console

    class StdoutConsole(Console):
        def on_broken_pipe(self) -> None:
            self.quiet = True
            stdout_closed()

    return StdoutConsole(**options)
