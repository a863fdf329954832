"""Reading a corpus (onlstm_cli/text/corpus.py, languages.detect_lang): a regular file, a bounded line at a time."""
from __future__ import annotations

from pathlib import Path

import pytest

from onlstm_cli.cli.commands import app
from onlstm_cli.errors import TrainingError
from onlstm_cli.files import MAX_LINE_BYTES, LineTooLong
from onlstm_cli.text.corpus import iter_sentences
from onlstm_cli.text.languages import detect_lang
from onlstm_cli.text.tokenizers import Tokenizer

ZERO = Path("/dev/zero")
needs_dev_zero = pytest.mark.skipif(not ZERO.exists(), reason="no /dev/zero")


@needs_dev_zero
def test_a_device_is_no_corpus_and_is_said_to_be_one():
    # it was "corpus not found" for a path that exists
    with pytest.raises(TrainingError, match="corpus /dev/zero is a character device, not a regular file"):
        next(iter_sentences(ZERO, Tokenizer()))


def test_a_line_too_long_is_refused_as_it_is_read(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_bytes(b"the cat sat\n" + b"a " * MAX_LINE_BYTES + b"\n")
    sentences = iter_sentences(path, Tokenizer())
    assert next(sentences) == ["the", "cat", "sat"]
    with pytest.raises(LineTooLong, match="corpus.txt line 2 is longer than"):
        next(sentences)
    with pytest.raises(LineTooLong, match="line 2 is longer than"):
        detect_lang(path)


@needs_dev_zero
@pytest.mark.parametrize("command", [["train", str(ZERO)], ["evaluate", "--text", str(ZERO)]])
def test_train_and_evaluate_say_what_a_device_is(runner, model, tmp_path, command):
    gold = tmp_path / "gold.trees"
    gold.write_text("(S (NN the) (NN cat))\n", encoding="utf-8")
    extra = ["-o", str(tmp_path / "out.onlstm")] if command[0] == "train" else ["--gold", str(gold), "-m", model]
    result = runner.invoke(app, [*command, *extra])
    assert result.exit_code == 2, result.output
    assert "/dev/zero is a character device" in result.output and "not found" not in result.output
