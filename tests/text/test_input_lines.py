"""The lines `onlstm parse` reads (onlstm_cli/text/input_lines.py): bounded, whatever the input."""
from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import pytest

from onlstm_cli.cli.commands import app
from onlstm_cli.errors import InputError
from onlstm_cli.files import MAX_LINE_BYTES, LineTooLong
from onlstm_cli.text import input_lines
from onlstm_cli.text.input_lines import read_input_batches

ZERO = Path("/dev/zero")
needs_dev_zero = pytest.mark.skipif(not ZERO.exists(), reason="no /dev/zero")


@needs_dev_zero
def test_an_endless_file_is_refused_at_its_first_line_cap_not_read_into_memory():
    # /dev/zero has no line break: its first "line" was read until memory ran out
    with pytest.raises(LineTooLong, match=f"/dev/zero line 1 is longer than {MAX_LINE_BYTES:,} bytes"):
        next(read_input_batches([ZERO], block=8))


@needs_dev_zero
def test_an_endless_stdin_is_refused_at_its_first_line_cap(monkeypatch):
    with open(ZERO, "rb") as zero:  # a character device: read as a pipe is, what has come
        monkeypatch.setattr(sys, "stdin", type("Stdin", (), {"buffer": zero})())
        with pytest.raises(LineTooLong, match="stdin line 1 is longer"):
            next(read_input_batches([], block=8))


def test_the_lines_before_a_line_too_long_are_given_out_first(tmp_path):
    path = tmp_path / "long.txt"
    path.write_bytes(b"the cat\na dog\n" + b"x" * (MAX_LINE_BYTES + 1) + b"\nlast\n")
    batches = read_input_batches([path], block=8)
    assert next(batches) == ["the cat", "a dog"]
    with pytest.raises(LineTooLong, match="line 3 is longer"):
        next(batches)
    exactly = tmp_path / "exactly.txt"  # a line of MAX_LINE_BYTES bytes, newline apart, is a line
    exactly.write_bytes(b"x" * MAX_LINE_BYTES + b"\nok")
    assert [len(line) for batch in read_input_batches([exactly], block=8) for line in batch] == [MAX_LINE_BYTES, 2]


def test_a_pipe_refuses_a_line_too_long_as_it_comes_after_the_lines_before_it(monkeypatch):
    read_end, write_end = os.pipe()

    def write():  # more than the cap, and the pipe left open: the refusal cannot wait for the line's end
        os.write(write_end, b"one\ntwo\n")
        for _ in range(MAX_LINE_BYTES // (1 << 16) + 2):
            os.write(write_end, b"y" * (1 << 16))

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    with os.fdopen(read_end, "rb") as stream:
        monkeypatch.setattr(sys, "stdin", type("Stdin", (), {"buffer": stream})())
        batches = read_input_batches([], block=8)
        assert next(batches) == ["one", "two"]
        with pytest.raises(LineTooLong, match="stdin line 3 is longer"):
            next(batches)
    writer.join()
    os.close(write_end)


def test_a_batch_ends_at_its_share_of_text(tmp_path, monkeypatch):
    monkeypatch.setattr(input_lines, "BATCH_BYTES", 10)
    path = tmp_path / "lines.txt"
    path.write_bytes(b"aaaa\nbbbb\ncccc\ndd\n")
    assert list(read_input_batches([path], block=100)) == [["aaaa", "bbbb"], ["cccc", "dd"]]


def test_a_fifo_is_read_as_an_input_file(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_bytes(b"the cat\na dog\n"), daemon=True)
    writer.start()
    assert [line for batch in read_input_batches([fifo], block=8) for line in batch] == ["the cat", "a dog"]
    writer.join()


def test_invalid_utf8_still_comes_after_the_lines_before_it(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"ok\n\xff\n")
    batches = read_input_batches([path], block=8)
    assert next(batches) == ["ok"]
    with pytest.raises(InputError, match="line 2 is not valid UTF-8"):
        next(batches)


@needs_dev_zero
def test_parse_of_an_endless_file_is_one_line_and_an_error(runner, model):
    result = runner.invoke(app, ["parse", "--model", model, str(ZERO)])
    assert result.exit_code != 0 and "longer than" in result.output and "Traceback" not in result.output


def test_a_files_first_lines_come_in_a_short_list_and_the_lists_grow_to_the_block(tmp_path):
    """`parse big.txt | head -1` answers from the first short list, not after a whole block is parsed (issue
    53); the lists then double to the block, and every line is given once, in order."""
    from onlstm_cli.text.input_lines import FIRST_BLOCK
    path = tmp_path / "big.txt"
    path.write_text("".join(f"line {k}\n" for k in range(1000)), encoding="utf-8")
    batches = list(read_input_batches([path], block=128))
    assert [len(b) for b in batches][:5] == [FIRST_BLOCK, 2 * FIRST_BLOCK, 4 * FIRST_BLOCK, 128, 128]
    assert [line for batch in batches for line in batch] == [f"line {k}" for k in range(1000)]
