"""`onlstm parse` as a Unix filter: it answers a pipe line by line, takes empty input, stops quietly when its
reader goes away, keeps control characters out of its output; and the help and messages a CLI user sees."""
from __future__ import annotations

import json
import os
import pty
import queue
import select
import subprocess
import sys
import threading

import nltk
import pytest

from conftest import FIXTURES, REPO, write_corpus
from onlstm_cli.cli.commands import app
from onlstm_cli.console import SIGPIPE_EXIT
from onlstm_cli.text.formats import from_bracket
from onlstm_cli.trees import tree_leaves

ENV = dict(os.environ, PYTHONIOENCODING="utf-8", OMP_NUM_THREADS="1")
GOLD = FIXTURES / "cli_gold.trees"
PRED = FIXTURES / "cli_pred.trees"


def onlstm(*args, **popen):
    return subprocess.Popen([sys.executable, "-m", "onlstm_cli", *map(str, args)], cwd=REPO, env=ENV, **popen)


def assert_one_error_line(result, *fragments):
    assert result.exit_code != 0, result.output
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), result.stderr
    assert "Traceback" not in result.output
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


# --- streaming ------------------------------------------------------------------------------------------

class LineReader:
    """Lines of a pipe, read by a thread, so that a test can wait for one with a timeout."""

    def __init__(self, stream):
        self.lines: queue.Queue = queue.Queue()

        def pump():
            for line in iter(stream.readline, b""):
                self.lines.put(line.decode("utf-8"))
            self.lines.put(None)

        threading.Thread(target=pump, daemon=True).start()

    def next(self, timeout: float = 60) -> str | None:
        return self.lines.get(timeout=timeout)

    def rest(self, timeout: float = 60) -> list[str]:
        lines = []
        while (line := self.next(timeout)) is not None:
            lines.append(line)
        return lines


def words_of(fmt: str, line: str) -> list[str]:
    if fmt == "bracket":
        return nltk.Tree.fromstring(line).leaves()
    if fmt == "json":
        return json.loads(line)["words"]
    import xml.etree.ElementTree as ET
    return [e.text for e in ET.fromstring(line).iter("{http://www.w3.org/2000/svg}text")
            if "word" in (e.get("class") or "")]


@pytest.mark.parametrize("fmt", ["bracket", "json", "svg"])
def test_parse_answers_each_line_of_a_pipe_before_the_next_comes(model, fmt):
    """(echo the cat sat; sleep …; echo a dog ran) | onlstm parse: line 1's tree comes while stdin is open."""
    proc = onlstm("parse", "--model", model, "--format", fmt, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                  stderr=subprocess.PIPE)
    try:
        out = LineReader(proc.stdout)
        proc.stdin.write(b"the cat sat\n")
        proc.stdin.flush()
        try:
            first = out.next(timeout=120)
        except queue.Empty:
            pytest.fail("no output for the first line while stdin stays open: the output is not streamed")
        assert first is not None, proc.stderr.read().decode()
        assert proc.poll() is None  # still waiting for more input
        assert words_of(fmt, first) == ["the", "cat", "sat"]
        proc.stdin.write(b"\na dog ran\n")
        proc.stdin.close()
        rest = out.rest()
        assert proc.wait(timeout=60) == 0
        assert proc.stderr.read() == b""
        assert rest[0] == "\n"  # the empty line's empty answer
        assert words_of(fmt, rest[1]) == ["a", "dog", "ran"] and len(rest) == 2
    finally:
        proc.kill()
        proc.wait()


def test_parse_batches_of_a_file_keep_every_line_in_order(runner, model, tmp_path):
    path = write_corpus(tmp_path / "many.txt", 50)
    lines = path.read_text(encoding="utf-8").splitlines()
    result = runner.invoke(app, ["parse", "--model", model, "--format", "json", str(path), str(path)])
    assert result.exit_code == 0, result.output
    out = result.stdout.splitlines()
    assert len(out) == 2 * len(lines)
    assert [json.loads(o)["words"] for o in out[:3]] == [line.split() for line in lines[:3]]


def test_read_input_batches_gives_what_a_pipe_has_ready(tmp_path):
    """A pipe's batch ends where the input stalls; complete lines only; a last line without newline."""
    from onlstm_cli.text.input_lines import read_input_batches
    read_end, write_end = os.pipe()
    stdin = sys.stdin
    try:
        sys.stdin = os.fdopen(read_end, "r", encoding="utf-8")
        batches = read_input_batches([], block=3)
        os.write(write_end, "\ufeffone\r\ntwo\nthr".encode())
        assert next(batches) == ["one", "two"]  # "thr" is not complete yet
        os.write(write_end, b"ee\nfour\nfive\nsix\nseven")
        os.close(write_end)
        assert list(batches) == [["three", "four", "five"], ["six", "seven"]]
    finally:
        sys.stdin.close()
        sys.stdin = stdin


@pytest.mark.parametrize("jobs", ["1", "2"])
@pytest.mark.parametrize("good", [5000, 4096], ids=["inside a block", "first of a block"])
def test_every_line_before_bad_utf8_is_answered_first(model, tmp_path, jobs, good):
    """A line that is not UTF-8 ends the parse with one line, after the answers to every line before it,
    whether it comes inside a block of lines or first in one, with one process or with workers."""
    path = tmp_path / "lines.txt"
    path.write_bytes(b"the cat sat\n" * good + b"\xff\xfe not UTF-8\n" + b"a dog ran\n" * 3)
    proc = onlstm("parse", "--model", model, "-j", jobs, stdin=open(path, "rb"), stdout=subprocess.PIPE,
                  stderr=subprocess.PIPE)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode != 0
    assert err.decode().splitlines() == [f"error: stdin line {good + 1} is not valid UTF-8"]
    answers = out.decode().splitlines()
    assert len(answers) == good and all(a.startswith("(S") and "cat" in a for a in answers)


# --- empty input ------------------------------------------------------------------------------------------

def test_parse_empty_input_prints_nothing(runner, model):
    result = runner.invoke(app, ["parse", "--model", model], input="")
    assert result.exit_code == 0, result.output
    assert result.stdout == "" and result.stderr == ""


@pytest.mark.parametrize("stdin", ["devnull", "empty pipe"])
def test_parse_empty_stdin_is_fine_for_a_filter(model, stdin):
    """onlstm parse < /dev/null, true | onlstm parse: nothing printed, exit code 0."""
    if stdin == "devnull":
        proc = onlstm("parse", "--model", model, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                      stderr=subprocess.PIPE)
        out, err = proc.communicate(timeout=120)
    else:
        proc = onlstm("parse", "--model", model, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                      stderr=subprocess.PIPE)
        out, err = proc.communicate(b"", timeout=120)
    assert (proc.returncode, out, err) == (0, b"", b"")


def test_parse_from_a_terminal_without_input_is_still_an_error(model):
    main, terminal = pty.openpty()
    try:
        proc = onlstm("parse", "--model", model, stdin=terminal, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out, err = proc.communicate(timeout=120)
    finally:
        os.close(main)
        os.close(terminal)
    lines = err.decode().strip().splitlines()
    assert proc.returncode != 0 and out == b""
    assert len(lines) == 1 and lines[0].startswith("error: no input"), err


# --- a reader that goes away ----------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["bracket", "json", "nltk", "tree", "svg", "html"])
def test_parse_into_a_closed_pipe_stops_quietly(model, tmp_path, fmt):
    """onlstm parse big.txt | head -1: no message, the exit code of a filter killed by SIGPIPE."""
    path = write_corpus(tmp_path / "big.txt", 2000)
    proc = onlstm("parse", "--model", model, "--format", fmt, path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert select.select([proc.stdout], [], [], 240)[0], "no output"
        assert os.read(proc.stdout.fileno(), 100)  # the start of the first answer, then the reader goes away
        proc.stdout.close()
        assert proc.wait(timeout=240) == SIGPIPE_EXIT
        assert proc.stderr.read() == b""
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("options", [["--json"], []], ids=["json", "table"])
def test_evaluate_into_a_closed_pipe_stops_quietly(options):
    proc = onlstm("evaluate", "--gold", GOLD, "--pred", PRED, *options, stdout=subprocess.PIPE,
                  stderr=subprocess.PIPE)
    proc.stdout.close()  # gone before the report is written
    assert proc.wait(timeout=240) == SIGPIPE_EXIT
    assert proc.stderr.read() == b""


# --- control characters -----------------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["bracket", "json"])
def test_control_characters_never_reach_the_output(runner, model, fmt):
    result = runner.invoke(app, ["parse", "--model", model, "--format", fmt],
                           input="the\x00cat sat\x07 on\x7fthe mat\x1b\x9b\n")
    assert result.exit_code == 0, result.output
    assert not any(ord(c) < 32 and c != "\n" or 0x7f <= ord(c) <= 0x9f for c in result.stdout), repr(result.stdout)
    line = result.stdout.strip()
    words = nltk.Tree.fromstring(line).leaves() if fmt == "bracket" else json.loads(line)["words"]
    assert words == ["the", "cat", "sat", "on", "the", "mat"]  # a control character separates tokens


CONTROL_ONLY = ["\x00\x00\x00", "\t\x1b\x7f", "\x85"]  # lines of nothing else


@pytest.mark.parametrize("options", [["-f", "bracket"], ["-f", "json"], ["-f", "nltk"], ["-f", "tree"],
                                     ["--pretokenized"], ["-d"]])
def test_a_line_of_control_characters_gets_an_empty_line(runner, model, options):
    text = "".join(f"the cat sat\n{line}\n" for line in CONTROL_ONLY) + "a dog ran\n"
    result = runner.invoke(app, ["parse", "--model", model, *options], input=text)
    assert result.exit_code == 0 and result.stderr == "", result.output
    if options[-1] in ("nltk", "tree"):  # drawings of several lines each: every tree is drawn
        assert result.stdout.count("sat") == 3 and "ran" in result.stdout
        return
    answers = result.stdout.split("\n")
    assert len(answers) == 8 and answers[1:7:2] == ["", "", ""] and answers[-1] == ""  # line N answers line N
    assert all("sat" in a for a in answers[0:6:2]) and "ran" in answers[6]


def test_a_line_of_control_characters_among_thousands_with_workers(model, tmp_path):
    """Every line is answered, in blocks read by worker processes too, and into --output."""
    lines = ["the cat sat"] * 5000 + ["\x00\x00\x00"] + ["a dog ran"] * 10
    path = tmp_path / "lines.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "trees.txt"
    proc = onlstm("parse", "--model", model, "-j", "2", "-o", out, path, stdout=subprocess.PIPE,
                  stderr=subprocess.PIPE)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0 and err == b"", err
    answers = out.read_text(encoding="utf-8").split("\n")
    assert len(answers) == len(lines) + 1 and answers[5000] == "" and answers[-1] == ""
    assert all(a.startswith("(S") for a in answers[:5000] + answers[5001:-1])


# --- deep trees -------------------------------------------------------------------------------------------

def test_a_tree_too_deep_to_draw_with_nltk_gets_advice_a_cli_user_can_follow(runner, model, monkeypatch):
    """A long sentence parsed into a chain (here: forced) is too deep for nltk's recursive drawing."""
    from onlstm_cli.induction import distances as parser_module
    from onlstm_cli.trees import right_branching
    monkeypatch.setattr(parser_module, "build_tree", lambda distances, words, split="paper": right_branching(words))
    line = " ".join(["the cat sat on the mat"] * 300) + "\n"
    result = runner.invoke(app, ["parse", "--model", model, "--format", "nltk"], input=line)
    message = assert_one_error_line(result, "input line 1", "1799 levels deep", "--format bracket, json, svg or html")
    assert "MAX_TREE_DEPTH" not in message and "internal error" not in message
    bracket = runner.invoke(app, ["parse", "--model", model, "--format", "bracket"], input=line)
    assert bracket.exit_code == 0  # the format the advice names shows the same tree
    assert len(tree_leaves(from_bracket(bracket.stdout))) == 1800


def test_evaluate_gold_too_deep_names_file_and_line_without_nltk_advice(runner, tmp_path):
    gold = tmp_path / "deep.trees"
    gold.write_text("(S (NN a) (NN b))\n" + "(S " * 1000 + "(NN a) (NN b)" + ")" * 1000 + "\n", encoding="utf-8")
    result = runner.invoke(app, ["evaluate", "--gold", str(gold), "--pred", str(PRED)])
    message = assert_one_error_line(result, "deep.trees:2", "1001 brackets deep")
    assert "MAX_TREE_DEPTH" not in message and "nltk" not in message


# --- CoNLL-U gold -----------------------------------------------------------------------------------------

def conllu_row(i: int, word: str, head: int) -> str:
    return f"{i}\t{word}\t{word}\tNOUN\t_\t_\t{head}\t{'root' if head == 0 else 'dep'}\t_\t_\n"


def test_evaluate_conllu_with_two_roots_is_one_error_line(runner, tmp_path):
    gold = tmp_path / "two-roots.conllu"
    gold.write_text(conllu_row(1, "a", 0) + conllu_row(2, "b", 1) + "\n"
                    + conllu_row(1, "c", 2) + conllu_row(2, "d", 0) + conllu_row(3, "e", 0), encoding="utf-8")
    result = runner.invoke(app, ["evaluate", "--gold", str(gold), "--pred", str(PRED)])
    assert_one_error_line(result, "two-roots.conllu:6", "sentence 2", "more than one root", "tokens 2 and 3")


def test_evaluate_conllu_token_that_heads_itself(runner, tmp_path):
    gold = tmp_path / "self.conllu"
    gold.write_text(conllu_row(1, "a", 0) + conllu_row(2, "b", 2), encoding="utf-8")
    result = runner.invoke(app, ["evaluate", "--gold", str(gold), "--pred", str(PRED)])
    assert_one_error_line(result, "self.conllu:2", "token 2 is its own head")


def test_evaluate_conllu_multiword_range_beyond_the_words_is_one_error_line(runner, tmp_path):
    gold = tmp_path / "range.conllu"
    gold.write_text("1-3\tab\t_\t_\t_\t_\t_\t_\t_\t_\n" + conllu_row(1, "a", 0) + conllu_row(2, "b", 1),
                    encoding="utf-8")
    result = runner.invoke(app, ["evaluate", "--gold", str(gold), "--pred", str(PRED)])
    assert_one_error_line(result, "range.conllu:1", "multiword token '1-3' goes beyond the sentence's 2 words")


# --- help ---------------------------------------------------------------------------------------------------

def help_text(runner, *args) -> str:
    result = runner.invoke(app, [*args, "--help"], prog_name="onlstm", env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("command, usage", [
    ((), "Usage: onlstm [OPTIONS] COMMAND [ARGS]..."),
    (("train",), "Usage: onlstm train [OPTIONS] CORPUS"),
    (("parse",), "Usage: onlstm parse [OPTIONS] [FILES]..."),
    (("evaluate",), "Usage: onlstm evaluate [OPTIONS]"),
])
def test_help_shows_no_metavar_for_flags_and_arguments_in_capitals(runner, command, usage):
    text = help_text(runner, *command)
    assert usage in text
    assert "<bool>" not in text and "{" not in text and "list[" not in text
    flag_rows = [line for line in text.splitlines() if "--help" in line or "--pretokenized" in line
                 or "--distances" in line or "--keep-punct" in line or "--reverse" in line]
    assert flag_rows and not any("<" in row for row in flag_rows), flag_rows
    if command == ("train",):
        assert "--batch-size" in text and "<int>" in text  # options with a value keep their placeholder
        assert "CORPUS" in text.split("Arguments")[1].splitlines()[1]


def test_parse_help_says_how_to_get_a_picture(runner):
    text = " ".join(help_text(runner, "parse").split())
    for fragment in ("--format svg", "--out-dir DIR", "--format html", "onlstm evaluate --html"):
        assert fragment in text, fragment
    assert "Control characters" in text
