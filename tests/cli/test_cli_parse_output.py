"""`onlstm parse --output FILE`, a closed stdin, and the unreadable-text warning on stderr (issue 24)."""
from __future__ import annotations

import os
import subprocess
import sys

from onlstm_cli.cli.commands import app

from test_cli import REPO, assert_user_error, run

LINES = "The cat sat on the mat.\nA dog saw a bird.\n"


def test_output_writes_what_stdout_would_get(runner, model, tmp_path):
    on_stdout = run(runner, ["parse", "-m", model, "-f", "bracket"], input=LINES)
    out = tmp_path / "trees.txt"
    result = run(runner, ["parse", "-m", model, "--output", out], input=LINES)  # bracket: the default for a file
    assert (result.exit_code, result.stdout) == (0, "")
    assert out.read_text(encoding="utf-8") == on_stdout.stdout and len(on_stdout.stdout.splitlines()) == 2
    assert [p.name for p in tmp_path.iterdir()] == ["trees.txt"]  # no temporary file left beside it
    run(runner, ["parse", "-m", model, "-o", out, "-f", "json"], input="The cat sat.\n")
    assert out.read_text(encoding="utf-8").startswith("{")  # replaced whole


def test_output_refuses_a_symbolic_link_and_leaves_its_target(runner, model, tmp_path):
    target = tmp_path / "precious.txt"
    target.write_text("keep me\n")
    link = tmp_path / "trees.txt"
    link.symlink_to(target)
    assert_user_error(run(runner, ["parse", "-m", model, "--output", link], input=LINES), "symbolic link")
    assert target.read_text() == "keep me\n" and link.is_symlink()


def test_a_failed_parse_leaves_the_old_output(runner, model, tmp_path):
    out = tmp_path / "trees.txt"
    out.write_text("old\n")
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"The cat sat.\n\xff\xfe not UTF-8\n")
    message = assert_user_error(run(runner, ["parse", "-m", model, "--output", out, bad]), "not valid UTF-8")
    assert message.endswith(f"line 2 is not valid UTF-8; nothing written to {out} (--output is written whole only "
                            "when every line is answered)")
    assert out.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.txt", "trees.txt"]


def test_output_with_out_dir_is_refused(runner, model, tmp_path):
    assert_user_error(run(runner, ["parse", "-m", model, "-f", "svg", "--out-dir", tmp_path, "-o", tmp_path / "x"],
                          input=LINES), "--out-dir")


def onlstm(command: str, **options):
    """`command` in bash, with `onlstm` the module run by this Python."""
    env = dict(os.environ, PYTHONIOENCODING="utf-8")
    script = f'onlstm() {{ "{sys.executable}" -m onlstm_cli "$@"; }}; {command}'
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, cwd=REPO, env=env, timeout=300,
                          **options)


def test_a_closed_stdin_is_a_one_line_error(model):
    closed = onlstm(f"onlstm parse -m '{model}' <&-")
    assert closed.returncode != 0
    assert closed.stderr.strip().splitlines() == [
        "error: no input: stdin is closed; pipe sentences into 'onlstm parse' or give file names"]
    empty = onlstm(f"onlstm parse -m '{model}'", stdin=subprocess.DEVNULL)  # open, but nothing in it
    assert (empty.returncode, empty.stdout, empty.stderr) == (0, "", "")


def test_a_closed_stdout_needs_output(model, tmp_path):
    closed = onlstm(f"echo 'The cat sat.' | onlstm parse -m '{model}' >&-")
    assert closed.returncode != 0 and "stdout is closed" in closed.stderr and "Traceback" not in closed.stderr
    written = onlstm(f"echo 'The cat sat.' | onlstm parse -m '{model}' -o '{tmp_path / 'trees.txt'}' >&-")
    assert written.returncode == 0, written.stderr
    assert (tmp_path / "trees.txt").read_text().startswith("(S ")


def test_text_the_model_cannot_read_gets_one_warning_line(runner):
    result = run(runner, ["parse", "-m", "en"], input="爱真的需要勇气\n我们都爱和平\nYes.\n")
    assert result.exit_code == 0
    assert len(result.stdout.splitlines()) == 3  # still answered, line for line
    warnings = result.stderr.strip().splitlines()
    assert len(warnings) == 1 and warnings[0].startswith("warning: the text is in CJK script but model en-ptb")
    fitting = run(runner, ["parse", "-m", "en"], input="The cat sat on the mat.\n")
    assert fitting.stderr == ""


def test_parse_imports_nltk_only_for_nltk_output(model):
    """`onlstm parse` runs LineParser, which needs no nltk (part of every start-up otherwise); only
    `-f nltk` prints with it. -X importtime lists every module a process imports."""
    for fmt, wants_nltk in (("bracket", False), ("tree", False), ("nltk", True)):
        result = onlstm(f"echo 'The cat sat.' | PYTHONPROFILEIMPORTTIME=1 onlstm parse -m '{model}' -f {fmt}")
        assert result.returncode == 0 and "cat" in result.stdout, result.stderr[-500:]
        imported = {line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines() if "import time:" in line}
        assert "onlstm_cli.induction.line_parser" in imported
        assert ("nltk" in imported) is wants_nltk, fmt
