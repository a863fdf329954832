"""The lines `onlstm parse` reads, in batches: whole blocks from a file, what has arrived from a pipe."""
from __future__ import annotations

import os
import sys
from pathlib import Path

from onlstm_cli.errors import InputError
from onlstm_cli.files import STDIN, check_readable_file


# How long stdin may stay quiet before the lines read so far are parsed and answered: short enough that a
# pipe fed a line at a time (`tail -f`, another program) gets each answer at once, long enough that lines
# arriving together are parsed together.
STALL_SECONDS = 0.05


def read_input_batches(files: list[Path], block: int):
    """Lists of lines (without newline) from the files, or stdin (no files, or a file named "-"), up to `block`
    lines each.

    A file gives full lists; a pipe (or terminal) gives what it has ready: a list ends early when no
    further complete line arrives within STALL_SECONDS, so each line can be answered before the next
    comes. Invalid UTF-8 is a one-line error, raised once the lines before it are given out; a byte order
    mark at the start of a source is dropped.
    """
    files = [None if str(path) == STDIN else path for path in files]
    for path in files:
        if path is not None:
            check_readable_file(path, "input file", InputError)
    for path in files or [None]:
        where = "stdin" if path is None else str(path)
        stream = sys.stdin.buffer if path is None else open(path, "rb")
        try:
            number = 0
            for raw_lines in _raw_batches(stream, block):
                lines = []
                for raw in raw_lines:
                    number += 1
                    try:
                        line = raw.decode("utf-8").rstrip("\r\n")
                    except UnicodeDecodeError:
                        if lines:
                            yield lines  # every line before the bad one is answered before the error
                        raise InputError(f"{where} line {number} is not valid UTF-8") from None
                    lines.append(line.removeprefix("\ufeff") if number == 1 else line)
                yield lines
        finally:
            if path is not None:
                stream.close()


def _raw_batches(stream, block: int):
    """Lists of raw lines of a binary stream: full ones from a regular file, what is ready from a pipe."""
    import itertools
    import select
    import stat
    try:
        fd = stream.fileno()
        waits = os.name == "posix" and not stat.S_ISREG(os.fstat(fd).st_mode)
    except (AttributeError, OSError, ValueError):  # not a real file (a test's in-memory stdin)
        waits = False
    if not waits:
        while batch := list(itertools.islice(stream, block)):
            yield batch
        return
    pending: list[bytes] = []  # complete lines not yet given out
    partial: list[bytes] = []  # the start of a line whose newline has not come
    while True:
        if pending and not select.select([fd], [], [], STALL_SECONDS)[0]:
            yield pending  # the input stalls: answer what has come
            pending = []
            continue
        data = os.read(fd, 1 << 16)  # blocks only when every complete line has been given out
        if not data:
            break
        end = data.rfind(b"\n")
        if end < 0:
            partial.append(data)
            continue
        pending.extend(b"".join([*partial, data[:end]]).split(b"\n"))
        partial = [data[end + 1:]] if end + 1 < len(data) else []
        while len(pending) >= block:
            yield pending[:block]
            pending = pending[block:]
    if partial:
        pending.append(b"".join(partial))  # a last line without a newline
    if pending:
        yield pending
