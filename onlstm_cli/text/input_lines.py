"""The lines `onlstm parse` reads, in batches: whole blocks from a file, what has arrived from a pipe."""
from __future__ import annotations

import os
import sys
from pathlib import Path

from onlstm_cli.errors import InputError
from onlstm_cli.files import MAX_LINE_BYTES, STDIN, LineTooLong, bounded_lines, check_readable_file, too_long


# How long stdin may stay quiet before the lines read so far are parsed and answered: short enough that a
# pipe fed a line at a time (`tail -f`, another program) gets each answer at once, long enough that lines
# arriving together are parsed together.
STALL_SECONDS = 0.05
# A batch ends at `block` lines or at this much text, whichever comes first: lines of up to MAX_LINE_BYTES
# each, a block of them would hold gigabytes, and their tokens many times that.
BATCH_BYTES = 8 << 20
FIRST_BLOCK = 16  # a source's first list: its first answers come at once (`parse big.txt | head -1`), the
                  # lists after it double up to the block, where parsing is as fast as it gets
_STALL = None  # what _pipe_lines gives where the input pauses


class PausedLines(list):
    """A list of lines after which the input paused (a pipe with no further complete line yet): every line
    read so far is to be answered before the next is waited for. A list of any other kind may be followed at
    once by more (a file's first lists are short too, so that its first answers come at once)."""


def read_input_batches(files: list[Path], block: int):
    """Lists of lines (without newline) from the files, or stdin (no files, or a file named "-"), up to `block`
    lines (and BATCH_BYTES) each; a source's first lists are shorter (FIRST_BLOCK lines, doubling).

    A file gives full lists; a pipe (or terminal) gives what it has ready: a list ends early, as PausedLines,
    when no further complete line arrives within STALL_SECONDS, so each line can be answered before the next
    comes. Invalid UTF-8, or a line longer than MAX_LINE_BYTES (refused as it is read: /dev/zero has no line
    break), is a one-line error, raised once the lines before it are given out; a byte order mark at the
    start of a source is dropped.
    """
    files = [None if str(path) == STDIN else path for path in files]
    for path in files:
        if path is not None:  # a FIFO too (`parse <(command)`): read a line at a time, it needs no end
            check_readable_file(path, "input file", InputError, regular=False)
    for path in files or [None]:
        where = "stdin" if path is None else str(path)
        stream = sys.stdin.buffer if path is None else open(path, "rb")
        try:
            number = 0
            for raw_lines in _raw_batches(stream, block, where):
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
                yield PausedLines(lines) if isinstance(raw_lines, PausedLines) else lines
        finally:
            if path is not None:
                stream.close()


def _raw_batches(stream, block: int, where: str):
    """Lists of raw lines of a binary stream: full ones from a regular file, what is ready from a pipe. A
    line too long (LineTooLong) ends them, after the lines before it."""
    import stat
    try:
        fd = stream.fileno()
        waits = os.name == "posix" and not stat.S_ISREG(os.fstat(fd).st_mode)
    except (AttributeError, OSError, ValueError):  # not a real file (a test's in-memory stdin)
        waits = False
    pending: list[bytes] = []  # lines not yet given out
    size, limit = 0, min(block, FIRST_BLOCK)
    try:
        for line in _pipe_lines(fd, where) if waits else bounded_lines(stream, where):
            if line is _STALL:  # the input stalls: answer what has come
                if pending:
                    yield PausedLines(pending)
                pending, size = [], 0
                continue
            pending.append(line)
            size += len(line)
            if len(pending) >= limit or size >= BATCH_BYTES:
                yield pending
                pending, size, limit = [], 0, min(block, 2 * limit)
    except LineTooLong:
        if pending:
            yield pending
        raise
    if pending:
        yield pending


def _pipe_lines(fd: int, where: str):
    """The lines of a pipe as they come (without newline), and _STALL where no complete line has come within
    STALL_SECONDS of the last one given. A line longer than MAX_LINE_BYTES is refused as soon as that much of
    it has come."""
    import select
    partial: list[bytes] = []  # the start of a line whose newline has not come
    partial_size, number, given = 0, 0, False
    while True:
        if given and not select.select([fd], [], [], STALL_SECONDS)[0]:
            yield _STALL
            given = False
            continue
        data = os.read(fd, 1 << 16)  # blocks only when every complete line has been given out
        if not data:
            break
        *lines, rest = data.split(b"\n")
        for line in lines:
            line = b"".join([*partial, line]) if partial else line
            partial, partial_size, number = [], 0, number + 1
            if len(line) > MAX_LINE_BYTES:
                raise too_long(where, number)
            yield line
            given = True
        if rest:
            partial.append(rest)
            partial_size += len(rest)
            if partial_size > MAX_LINE_BYTES:
                raise too_long(where, number + 1)
    if partial:
        yield b"".join(partial)  # a last line without a newline
