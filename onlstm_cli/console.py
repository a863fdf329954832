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


# Characters a terminal acts on rather than shows: C0 controls but tab, DEL, C1 controls (U+009B is a CSI),
# the line and paragraph separators, and the bidirectional controls that reorder what is shown: embeddings and
# overrides (U+202A-U+202E), isolates (U+2066-U+2069) and the marks (LRM, RLM, the Arabic letter mark).
_ACTED_ON = {c: f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"
             for c in (*range(0x00, 0x09), *range(0x0a, 0x20), *range(0x7f, 0xa0), 0x2028, 0x2029,
                       *range(0x202a, 0x202f), *range(0x2066, 0x206a), 0x200e, 0x200f, 0x061c)}


def printable(text: object) -> str:
    """`text` (from a file, or a path) safe to print on a terminal: every control character written as an
    escape (ESC as \\x1b), so that a crafted model file or tree cannot set the terminal's title, clear its
    screen or break a one-line message into several."""
    return str(text).translate(_ACTED_ON)


def printable_json(text: str) -> str:
    """JSON text (json.dumps escapes C0 controls already) with DEL, C1 controls and the separators escaped
    too: the same data when parsed, nothing a terminal acts on when shown."""
    return text.translate({c: f"\\u{c:04x}" for c in _ACTED_ON if c >= 0x7f})


def duration(seconds: float) -> str:
    """90 → '1.5 min', 40 → '40 s', 9000 → '2.5 h'."""
    return f"{seconds:.0f} s" if seconds < 60 else f"{seconds / 60:.1f} min" if seconds < 7200 else f"{seconds / 3600:.1f} h"


def count(value, unit: str) -> str:
    """4.498 epochs → '4.5 epochs' (a run cut short ends within an epoch), 1 → '1 epoch'."""
    if not isinstance(value, (int, float)):
        return f"{value} {unit}s"
    shown = f"{round(value, 2):g}"
    return f"{shown} {unit}{'' if shown == '1' else 's'}"
