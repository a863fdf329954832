"""The output writers' table (name → writer): `--format` offers what it holds, and each writer answers input
line N with output line N (byte for byte what `onlstm parse` printed before the table: tests/cli)."""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import pytest

from conftest import REPO
from onlstm_cli.induction.distances import ParsedSentence
from onlstm_cli.writers import WRITERS, Output, formats_help

BATCHES = [[ParsedSentence(["the", "cat"], ["the", "cat"], [0.5, 1.0]), ParsedSentence([], None, [])],
           [ParsedSentence(["a", "b", "c"], None, [], error="too long: not parsed"),
            ParsedSentence(["dogs"], "dogs", [None])]]


def test_the_format_option_offers_the_tables_formats_in_its_order():
    from onlstm_cli.cli.parse import OutputFormat
    assert [f.value for f in OutputFormat] == list(WRITERS) == ["bracket", "json", "nltk", "tree", "svg", "html"]
    help_text = subprocess.run([sys.executable, "-m", "onlstm_cli", "parse", "--help"], capture_output=True, text=True,
                               timeout=60, cwd=REPO, env=dict(os.environ, COLUMNS="200")).stdout
    assert f"<{'|'.join(WRITERS)}>" in help_text
    assert formats_help().startswith("bracket, json, nltk (ASCII drawing), tree (rich), svg (a picture")
    assert formats_help().endswith(" or html (one page for all lines)")


@pytest.mark.parametrize("name", ["bracket", "json", "nltk", "tree"])
def test_a_sentence_writer_answers_each_line_and_counts_the_refused(name):
    out, said = io.StringIO(), []
    write, _ = WRITERS[name]
    assert write(iter(BATCHES), Output(out, None, said.append)) == 1
    assert said == ["error: input line 3: too long: not parsed"]
    text = out.getvalue()
    if name in ("bracket", "json"):  # one line a sentence: empty where there is no tree
        lines = text.split("\n")
        assert lines[1:3] == ["", ""] and len(lines) == 5 and lines[-1] == ""
        if name == "json":
            assert json.loads(lines[0])["words"] == ["the", "cat"] and json.loads(lines[3])["distances"] == [None]
        else:
            assert lines[0] == "(S (X the) (X cat))" and lines[3] == "(S (X dogs))"
    assert "cat" in text and "dogs" in text


def test_distances_go_beside_each_tree():
    out = io.StringIO()
    WRITERS["bracket"][0]([BATCHES[0]], Output(out, None, print, distances=True))
    assert out.getvalue() == "(S (X the) (X cat))\tthe:0.50 cat:1.00\n\n"


@pytest.mark.parametrize("name", ["svg", "html"])
def test_a_picture_writer_says_and_counts_the_refused_as_the_others_do(name):
    """A line not parsed (no model reads its script) was an "(empty line)" picture, with no message and exit 0."""
    out, said = io.StringIO(), []
    write, _ = WRITERS[name]
    assert write(iter(BATCHES), Output(out, None, said.append)) == 1
    assert said == ["error: input line 3: too long: not parsed"]
    if name == "html":  # the page says it too, where the line's picture would be
        assert 'id="line-3"><h2>line 3</h2><p class="note">not parsed: too long: not parsed</p>' in out.getvalue()
    else:  # one SVG a line: none for the line not parsed, as bracket writes an empty line
        assert out.getvalue().split("\n")[2] == "" and out.getvalue().count("<svg") == 2


BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"


@pytest.mark.parametrize("name", ["bracket", "json", "nltk", "tree"])
def test_bidirectional_controls_reach_no_text_format_raw(name):
    """Issue 50: U+202E in a word reordered the terminal's line (`info` already wrote it as an escape)."""
    words = [f"{c}w" for c in BIDI]
    tree = words[0]
    for word in words[1:]:
        tree = [tree, word]
    out = io.StringIO()
    WRITERS[name][0]([[ParsedSentence(words, tree, [1.0] * len(words))]], Output(out, None, print, distances=True))
    text = out.getvalue()
    assert not set(BIDI) & set(text) and "\\u202e" in text
    if name == "json":  # the same words, once parsed
        assert json.loads(text)["words"] == words
