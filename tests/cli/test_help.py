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
    """The rows of every section of options: "Options", or train's panels (Recipe, Run …), each a heading of its
    own after the arguments."""
    lines = text.splitlines()
    start = next(k for k, line in enumerate(lines) if line.endswith(":") and line[0] != " " and line != "Arguments:")
    return [line for line in lines[start:] if line.strip() and line[0] == " "]


def sections(text: str) -> dict[str, list[str]]:
    """A help page's sections, heading (without its colon) → its lines, in the page's order."""
    found: dict[str, list[str]] = {}
    for line in text.splitlines():
        if line.endswith(":") and line[:1] not in (" ", ""):
            found[line[:-1]] = current = []
        elif found and line.strip():
            current.append(line)
    return found


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


def test_train_help_starts_with_the_recipe_and_groups_every_option_in_a_panel():
    """issue 53: a new user reads what train makes (the recipe first), then the options a panel a mode."""
    from onlstm_cli.cli.train import TRAIN_PANELS, TrainOptions
    text = help_at(80, "train")
    summary = " ".join(text.split("Arguments:")[0].split())
    assert summary.index("--seeds K") < summary.index("--family") < summary.index("--teacher FILE")
    for fragment in ("parser from plain text", "span parser", "neural PCFG", "a student"):
        assert fragment in summary, fragment
    found = sections(text)
    titles = [title for title in found if title != "Arguments"]
    assert titles[0] == "Recipe (--seeds K)" and titles[-1] == "Options"
    assert titles[:-1] == list(TRAIN_PANELS)
    assert found["Recipe (--seeds K)"][0].lstrip().startswith("--seeds ")
    assert [line.split()[0] for line in found["Options"] if line.startswith("  -")] == ["--help"]  # no option left out
    assert any(line.startswith("  --time-budget <duration> ") for line in found["Run (every mode)"])
    # every option of the command is in one panel, and only once
    panelled = [name for names in TRAIN_PANELS.values() for name in names]
    assert sorted(panelled) == sorted(f for f in TrainOptions.__dataclass_fields__ if f != "corpus")


def test_a_help_panel_naming_an_option_the_command_lacks_is_an_error():
    from onlstm_cli.cli.options import command_of
    from onlstm_cli.cli.train import TrainOptions
    with pytest.raises(TypeError, match="no_such_option"):
        command_of(TrainOptions, {"Run": ("out", "no_such_option")})


def test_train_help_says_what_lang_auto_takes_as_corpus_language_does(tmp_path):
    """--lang auto: Cyrillic text is und-Cyrl (not en, as the help once said), Chinese zh, Latin en."""
    from onlstm_cli.text.languages import corpus_language
    text = " ".join(re.sub(r"-\n\s+", "-", help_at(80, "train")).split())
    assert "zh if the text has CJK characters, else en" not in text
    for line, lang in (("Мама мыла раму .", "und-Cyrl"), ("我 喜欢 猫 。", "zh"), ("The cat sat .", "en")):
        corpus = tmp_path / f"{lang}.txt"
        corpus.write_text(f"{line}\n" * 3, encoding="utf-8")
        assert corpus_language(corpus)[0] == lang
    assert "und-Cyrl for Cyrillic" in text and "zh for CJK ideographs, en for Latin" in text
