"""The recipe on a terminal (a pseudo-terminal): its live rows of the language models, and every log line, stage 2's
to the last, on the screen, none glued to a row or erased by its redraw."""
from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios

import pytest

from conftest import read_terminal, write_corpus
from test_recipe import TINY

BAR = "━"  # the live rows' bar (rich's)


def screen(raw: str) -> list[str]:
    """What a terminal shows after `raw`, its scrollback included: a line redrawn after a carriage return or
    erased shows its last text, lines moved back over (cursor up) are written over; colours are dropped."""
    lines, row, col = [""], 0, 0
    for token in re.findall(r"\x1b\[[0-9;?]*[A-Za-z]|\r|\n|[^\x1b\r\n]+", raw):
        if token == "\r":
            col = 0
        elif token == "\n":
            row, col = row + 1, 0
            lines += [""] * (row + 1 - len(lines))
        elif token.endswith("A"):  # cursor up
            row = max(0, row - int(token[2:-1] or 1))
        elif token.endswith("K"):  # erase in line: 2 the whole line, else from the cursor on
            lines[row] = "" if token[2:-1] == "2" else lines[row][:col]
        elif not token.startswith("\x1b"):
            line = lines[row].ljust(col)
            lines[row] = line[:col] + token + line[col + len(token):]
            col += len(token)
    return lines


def stderr_on_terminal(args: list[str], timeout_s: float = 300) -> tuple[int, str]:
    """Runs `args` with stderr a pseudo-terminal (wide, so that no line wraps) and returns its exit code and what
    the terminal received."""
    reader, writer = pty.openpty()
    fcntl.ioctl(writer, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 1000, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "TTY_INTERACTIVE", "COLUMNS", "LINES")}
    env["TERM"] = "xterm-256color"  # a terminal the display redraws on (rich draws no live rows on a dumb one)
    with subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=writer,
                          env=env) as process:
        os.close(writer)
        shown = read_terminal(reader, process, timeout_s)
        code = process.wait(timeout_s)
    os.close(reader)
    return code, shown.decode("utf-8", "replace")


@pytest.mark.parametrize("side_by_side", ["1", "2"])  # one after another in the recipe's process; two rounds
def test_the_recipe_on_a_terminal_shows_every_line_and_no_finished_row(tmp_path, side_by_side):
    corpus = write_corpus(tmp_path / "corpus.txt", 24, seed=5)  # its own validation text: the student trains on 24
    valid = write_corpus(tmp_path / "valid.txt", 4, seed=6)
    args = ["train", str(corpus), "--valid", str(valid), "-o", str(tmp_path / "t.onlstm"), "--seeds", "3",
            "--side-by-side", side_by_side, "--epochs", "1", "--families", "onlstm", *TINY]
    code, raw = stderr_on_terminal([sys.executable, "-m", "onlstm_cli", *args])
    shown = screen(raw)
    text = "\n".join(shown)
    assert code == 0, text[-2000:]
    assert BAR in raw  # it drew its live rows
    bars = [line for line in shown if BAR in line]
    assert len(bars) <= 2, "\n".join(bars)  # the rows of the finished models are gone, none printed again
    for seed in (1111, 1112, 1113):
        assert f"recipe: language model {seed - 1110} of 3 (seed {seed}) done" in text
    stage_2 = [k for k, line in enumerate(shown) if line.startswith("recipe: stage 2 of 2, the span parser")]
    assert len(stage_2) == 1
    assert not any(BAR in line for line in shown[stage_2[0]:])  # no language model's row, frozen, once they are done
    assert "epoch 1: validation loss" in text
    assert "recipe: the span parser agrees" in text  # stage 2's check, its last lines
    assert shown[-2].startswith("done: ") and shown[-1] == ""


def test_a_side_by_side_jobs_stderr_goes_to_its_row_of_the_live_display():
    """What a job's process writes to stderr itself (a warning) is not written to the terminal past the display's
    rows, where the next redraw would erase it: each line goes to the recipe's process, a message on its row."""
    import queue
    from onlstm_cli.training.recipe.side_by_side import _MessageStream, _QueueReporter
    results = queue.Queue()
    stream = _MessageStream(_QueueReporter(2, results))
    print("a warning", file=stream)
    stream.write("a line without its end")
    assert results.qsize() == 1
    stream.flush()
    assert [results.get_nowait() for _ in range(2)] == [("event", 2, "message", ("a warning",)),
                                                         ("event", 2, "message", ("a line without its end",))]
