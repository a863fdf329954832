"""The read side of onlstm_cli/files.py: what a path is (check_readable_file), lines and files read with a bound."""
from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from onlstm_cli.cli.commands import app
from onlstm_cli.errors import GoldFormatError, ModelFileError, UserError
from onlstm_cli.files import LineTooLong, bounded_lines, check_readable_file, read_bounded

ZERO = Path("/dev/zero")
needs_dev_zero = pytest.mark.skipif(not ZERO.exists(), reason="no /dev/zero")


@needs_dev_zero
def test_a_device_or_a_fifo_is_refused_unless_a_stream_is_asked_for(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(ModelFileError, match="model file /dev/zero is a character device, not a regular file"):
        check_readable_file(ZERO, "model file", ModelFileError)
    with pytest.raises(UserError, match=f"corpus {fifo} is a FIFO, not a regular file"):
        check_readable_file(fifo, "corpus")
    check_readable_file(ZERO, "input file", regular=False)
    check_readable_file(fifo, "input file", regular=False)
    with pytest.raises(UserError, match="is a directory"):
        check_readable_file(tmp_path, "input file", regular=False)


@needs_dev_zero
@pytest.mark.parametrize("command", [["info", str(ZERO)], ["parse", "-m", str(ZERO)]])
def test_a_model_file_that_is_a_device_is_refused_in_one_line(runner, command):
    # /dev/zero was read as a model: gigabytes in seconds
    result = runner.invoke(app, command, input="the cat\n")
    assert result.exit_code == 2 and "model file /dev/zero is a character device" in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_bounded_lines_refuse_a_line_over_the_limit_before_reading_the_rest():
    stream = io.BytesIO(b"12345\n123456\n" + b"x" * 1000)
    lines = bounded_lines(stream, "f.txt", limit=6)
    assert next(lines) == b"12345\n" and next(lines) == b"123456\n"
    with pytest.raises(LineTooLong, match="f.txt line 3 is longer than 6 bytes"):
        next(lines)
    assert stream.tell() == 6 + 7 + 7  # the line's first limit + 1 bytes, no more
    assert list(bounded_lines(io.BytesIO(b"abc"), "f", limit=3)) == [b"abc"]


def test_read_bounded_refuses_a_file_over_its_limit(tmp_path):
    path = tmp_path / "big.trees"
    path.write_bytes(b"x" * 11)
    assert read_bounded(path, "gold file", GoldFormatError, 11) == b"x" * 11
    with pytest.raises(GoldFormatError, match="gold file .*big.trees is larger than 10 bytes"):
        read_bounded(path, "gold file", GoldFormatError, 10)
