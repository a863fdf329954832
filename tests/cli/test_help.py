"""The --help pages at 80 columns: readable help beside the options, no line past the terminal's width."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from onlstm_cli.induction.models import BUNDLED_MODELS


def help_at(columns: int, *command: str) -> str:
    """The help as a terminal COLUMNS wide shows it (in a process of its own: typer's CliRunner fixes the
    width at 80 whatever COLUMNS says)."""
    env = {**os.environ, "COLUMNS": str(columns)}
    result = subprocess.run([sys.executable, "-m", "onlstm_cli", *command, "--help"], env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout


def options_section(text: str) -> list[str]:
    lines = text.splitlines()
    start = lines.index("Options:") + 1
    return [line for line in lines[start:] if line.strip()]


@pytest.mark.parametrize("command", [("train",), ("parse",), ("evaluate",), ()])
def test_help_at_80_columns_leaves_the_help_text_at_least_40_columns(command):
    text = help_at(80, *command)
    assert max(len(line) for line in text.splitlines()) <= 80
    rows = options_section(text)
    # where each option's help begins: the indentation of its continuation lines (the first column holds
    # the option names, two spaces in); a long option's help starts on the line below it
    help_columns = {len(line) - len(line.lstrip()) for line in rows if not line.lstrip().startswith("-")}
    assert help_columns and max(help_columns) <= 80 - 40, help_columns
    long_names = [line for line in rows if line.startswith("  -") and len(line.split("  ")[1]) > 30]
    assert all(line.strip() == line.split("  ")[1].strip() for line in long_names)  # alone on their line


def test_help_text_is_whole_words_wrapped_not_cut():
    text = help_at(80, "parse")
    words = " ".join(text.split())
    assert "Show each word's distance." in words
    assert "With --format svg: write line-000001.svg … into this folder instead of stdout." in words


@pytest.mark.parametrize("command", ["parse", "evaluate"])
def test_model_help_lists_every_bundled_model(command):
    text = " ".join(re.sub(r"-\n\s+", "-", help_at(80, command)).split())  # (click may wrap after a hyphen)
    names = ", ".join(BUNDLED_MODELS)
    assert "zh-st" in names and f"a bundled model ({names})" in text
    assert "BUNDLED_MODELS" not in text


def test_narrow_and_wide_terminals_keep_lines_within_their_width():
    for columns in (60, 200):
        width = max(len(line) for line in help_at(columns, "train").splitlines())
        assert width <= min(columns, 80)  # (click's layout is at most 80 wide)
    assert re.search(r"^  -o, --out <path>\s+\S", help_at(80, "train"), re.MULTILINE)  # a short name: help beside it
