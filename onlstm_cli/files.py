"""The files a command reads and writes, kept apart and named for what they are.

- An output that is one of the command's inputs, or another of its outputs, is refused before anything is
  written (check_outputs). Files are compared by identity (device and inode), so a hard link, a symbolic link
  or another spelling of the path is the same file; an output that does not exist yet, by its resolved path.
- An output that another running command is writing is refused (output_lock: a lock file beside it, locked
  with flock, which the kernel releases when its process ends however it ends, so a killed run leaves no lock
  that holds).
- A log appended to never follows a symbolic link (open_for_append).
- An output that exists and is not a regular file (a device, a FIFO, a socket) is refused (check_writable_kind):
  every output is written whole beside it and renamed onto it, which would replace the device itself.
- A path that cannot be read says why: missing, a directory, a symbolic-link loop, a dangling link, a device
  (check_readable_file).
- Text is read a line at a time with a bound, MAX_LINE_BYTES a line (bounded_lines), and a whole file with a
  bound on its size (read_bounded): an endless input (/dev/zero) costs that much memory, not all there is.

It imports nothing of onlstm_cli but errors, so any layer may use it.
"""
from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
from pathlib import Path
from typing import Iterable, Iterator

from onlstm_cli.errors import OnlstmError, OutputInUse, UserError

STDIN = "-"  # an input file named "-" is stdin, as for cat or grep


def same_file(a: str | Path, b: str | Path) -> bool:
    """Whether two paths name one file: the same inode where both exist, else the same resolved path."""
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet): an output not written yet is its resolved path
        return os.path.realpath(a) == os.path.realpath(b)


def check_outputs(inputs: Iterable[tuple[str, str | Path | None]],
                  outputs: Iterable[tuple[str, str | Path | None]]) -> None:
    """Refuse, in one line, an output that is one of the inputs or another output: writing it would destroy
    what the command reads (or one output would overwrite the other). `inputs` and `outputs` are (what the
    user calls it, path) pairs, such as ("--valid", "v.txt"); None paths and stdin ("-") are skipped."""
    inputs = [(name, path) for name, path in inputs if path is not None and str(path) != STDIN]
    outputs = [(name, path) for name, path in outputs if path is not None and str(path) != STDIN]
    for k, (out_name, out) in enumerate(outputs):
        check_writable_kind(out, out_name)
        for in_name, source in inputs:
            if same_file(out, source):
                raise UserError(f"{out_name} {out} is the same file as {in_name} {source}: writing it would "
                                f"overwrite an input; give {out_name} another file")
        for other_name, other in outputs[:k]:
            if same_file(out, other):
                raise UserError(f"{out_name} {out} is the same file as {other_name} {other}: give each "
                                "its own file")


SPECIAL_KINDS = ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO"),
                 (stat.S_ISSOCK, "a socket"))


def check_writable_kind(path: str | Path, what: str, error: type[OnlstmError] = UserError) -> None:
    """Refuse, in one line, an output `path` that exists and is not a regular file: outputs are written whole
    beside it and renamed onto it, which would replace a device or a FIFO by a regular file (as root, /dev/null
    itself). Writing to stdout (no output option) and redirecting it is the way to a device or a pipe."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return  # not there yet, or not reachable: the write says why
    for is_kind, kind in SPECIAL_KINDS:
        if is_kind(mode):
            raise error(f"{what} {path} is {kind}, not a regular file: onlstm writes a file whole and renames it into "
                        "place, which would replace it; give a file name (or write to stdout and redirect it)")


def check_readable_file(path: str | Path, what: str, error: type[OnlstmError] = UserError,
                        regular: bool = True) -> None:
    """A one-line `error` unless `path` is a file that can be opened: `what` names it ("input file",
    "model file"), and the message says whether it is missing, a directory, a symbolic-link loop or a link
    to nothing. Unless `regular` is False, a device, FIFO or socket is refused too: a model, a corpus or a
    gold file is read whole (or twice), and /dev/zero never ends (`parse` reads a pipe a line at a time)."""
    try:
        mode = os.stat(path).st_mode
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise error(f"{what} {path} is a symbolic-link loop: it cannot be resolved to a file") from None
        if os.path.islink(path):
            raise error(f"{what} {path} is a symbolic link to {os.readlink(path)}, which does not exist") from None
        if e.errno in (errno.ENOENT, errno.ENOTDIR):
            raise error(f"{what} not found: {path}") from None
        raise error(f"cannot read {what} {path}: {(e.strerror or type(e).__name__).lower()}") from None
    if stat.S_ISDIR(mode):
        raise error(f"{what} {path} is a directory, not a file")
    if regular and not stat.S_ISREG(mode):
        kind = next((kind for is_kind, kind in SPECIAL_KINDS if is_kind(mode)), "a special file")
        raise error(f"{what} {path} is {kind}, not a regular file: give a file")


# A line of text longer than this is no sentence: a file without line breaks, or a device that never ends one.
# It is refused as it is read. (The longest sentence parse parses, trees.MAX_SENTENCE_WORDS, fits in it at
# about 10 bytes a word; real sentences are a few hundred bytes.)
MAX_LINE_BYTES = 1 << 20


class LineTooLong(OnlstmError):
    """A line longer than MAX_LINE_BYTES (bounded_lines); the message names the file and the line."""


def too_long(where: str | Path, number: int, limit: int = MAX_LINE_BYTES) -> LineTooLong:
    """The error for line `number` (1-based) of `where` (a file, or "stdin"), longer than `limit` bytes."""
    return LineTooLong(f"{where} line {number} is longer than {limit:,} bytes: not a line of text (a file without "
                       "line breaks, or a device?); give text with one sentence a line")


def bounded_lines(stream, where: str | Path, limit: int = MAX_LINE_BYTES) -> Iterator[bytes]:
    """The lines of a binary stream, each with its newline (the last one may have none). A line longer than
    `limit` bytes is a LineTooLong as soon as that many bytes have come without a newline, not once the whole
    line is in memory: /dev/zero, or a gigabyte on one line, costs `limit` bytes."""
    number = 0
    while line := stream.readline(limit + 1):
        number += 1
        if len(line) > limit and not line.endswith(b"\n"):
            raise too_long(where, number, limit)
        yield line


def read_bounded(path: str | Path, what: str, error: type[OnlstmError], limit: int) -> bytes:
    """The bytes of a regular file (check_readable_file), refused in one line where it holds more than `limit`."""
    check_readable_file(path, what, error)
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except OSError as e:
        raise error(f"cannot read {what} {path}: {(e.strerror or type(e).__name__).lower()}") from None
    if len(data) > limit:
        raise error(f"{what} {path} is larger than {limit:,} bytes, more than onlstm reads")
    return data


def open_for_append(path: str | Path):
    """`path` opened to append text lines (line-buffered, readable while a run writes it); a symbolic link is
    refused, not written through (O_NOFOLLOW: the check and the open are one step)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise UserError(f"{path} is a symbolic link; not writing through it (give the file it points to)") \
                from None
        raise UserError(f"cannot write {path}: {(e.strerror or type(e).__name__).lower()}") from None
    return os.fdopen(fd, "a", encoding="utf-8", buffering=1)


def lock_path(out: str | Path) -> Path:
    """The lock file beside an output: .NAME.lock, hidden, removed when the run ends."""
    out = Path(out)
    return out.with_name(f".{out.name}.lock")


@contextlib.contextmanager
def output_lock(out: str | Path, option: str = "--out"):
    """Hold `out` for this process while the block runs; another process holding it makes this a one-line
    OutputInUse. The lock is flock's on an open lock file: the kernel drops it when the process ends (a
    killed run's lock file stays, unlocked, and the next run takes it). Not reentrant: one holder a process."""
    lock = lock_path(out)
    fd = _locked_file(lock, out, option)
    try:
        yield lock
    finally:
        with contextlib.suppress(OSError):
            os.unlink(lock)  # before unlocking: a run waiting on this file finds it gone and takes a new one
        os.close(fd)


def _locked_file(lock: Path, out: str | Path, option: str) -> int:
    for _ in range(100):
        if not lock.parent.is_dir():  # not made here: a mistyped folder is the user's to see
            raise UserError(f"{option} {out}: its folder does not exist")
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise UserError(f"the lock file {lock} is a symbolic link; not following it (remove it)") from None
            raise UserError(f"cannot write {option} {out}: cannot create its lock file {lock}: "
                            f"{(e.strerror or type(e).__name__).lower()}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            os.close(fd)
            if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise UserError(f"cannot lock {option} {out} ({lock}): {(e.strerror or '').lower()}") from None
            raise OutputInUse(f"{option} {out} is being written by another onlstm run"
                              f"{f' (process {holder})' if holder.isdigit() else ''}: wait for it to end, or "
                              f"give {option} another file") from None
        if _still_named(fd, lock):
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
            return fd
        os.close(fd)  # its holder ended and removed it between our open and our lock: take the new one
    raise UserError(f"cannot lock {option} {out}: its lock file {lock} keeps changing")


def _still_named(fd: int, lock: Path) -> bool:
    try:
        named, held = os.stat(lock, follow_symlinks=False), os.fstat(fd)
    except OSError:
        return False
    return (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)
