"""Reading gold trees (onlstm_cli/text/treebanks.py, conllu.py): bounded, and linear in a sentence's length."""
from __future__ import annotations

from pathlib import Path

import pytest

from onlstm_cli.cli.commands import app
from onlstm_cli.errors import GoldFormatError
from onlstm_cli.text import conllu
from onlstm_cli.text.treebanks import read_gold, read_predicted

ZERO = Path("/dev/zero")
needs_dev_zero = pytest.mark.skipif(not ZERO.exists(), reason="no /dev/zero")


def conllu_row(token_id: int, head: int, upos: str = "NOUN") -> str:
    return f"{token_id}\tw{token_id}\tw{token_id}\t{upos}\t_\t_\t{head}\tdep\t_\t_\n"


@needs_dev_zero
def test_a_gold_or_predicted_file_that_never_ends_is_refused_in_one_line(tmp_path, runner, model):
    # /dev/zero was read whole: gigabytes, then "internal error (MemoryError)"
    with pytest.raises(GoldFormatError, match="gold file /dev/zero is a character device, not a regular file"):
        read_gold(ZERO)
    gold = tmp_path / "gold.trees"
    gold.write_text("(S (NN a) (NN b))\n", encoding="utf-8")
    with pytest.raises(GoldFormatError, match="predicted trees file /dev/zero is a character device"):
        read_predicted(ZERO, read_gold(gold))
    for option in ("--gold", "--pred"):
        args = ["--gold", str(ZERO)] if option == "--gold" else ["--gold", str(gold), "--pred", str(ZERO)]
        result = runner.invoke(app, ["evaluate", *args])
        assert result.exit_code == 2 and "character device" in result.output and "internal error" not in result.output


def test_a_deep_dependency_chain_is_read_in_linear_time(tmp_path):
    # each word was followed up to the root: a chain of 30,000 words took minutes
    n = 50_000
    path = tmp_path / "chain.conllu"
    path.write_text("".join(conllu_row(k, k - 1) for k in range(1, n + 1)) + "\n", encoding="utf-8")
    [sentence] = read_gold(path)
    assert len(sentence.words) == n and (n - 2, n) in sentence.spans and len(sentence.spans) == n - 2


def test_a_cycle_of_heads_is_still_refused_with_its_line(tmp_path):
    path = tmp_path / "cycle.conllu"
    path.write_text(conllu_row(1, 0) + conllu_row(2, 3) + conllu_row(3, 2, "PUNCT") + "\n", encoding="utf-8")
    with pytest.raises(GoldFormatError, match="cycle.conllu:2: head indices form a cycle"):
        read_gold(path)


def test_a_deep_bracketed_tree_is_read_in_time_linear_in_its_words(tmp_path):
    # each word's ancestors were listed by slicing its tree position: 450 levels over 20,000 words took minutes
    depth, n = 450, 20_000
    words = " ".join(f"(NN w{k})" for k in range(n))
    path = tmp_path / "deep.trees"
    path.write_text("(S " * depth + words + ")" * depth + "\n", encoding="utf-8")
    [sentence] = read_gold(path)
    assert len(sentence.words) == n and sentence.spans == set() and sentence.labels == {}
    path.write_text("(S (NP (DT the) (NN cat)) (VP (VBD sat) (-NONE- *T*) (, ,) (PP (IN on) (NN it))))\n",
                    encoding="utf-8")
    [sentence] = read_gold(path)
    assert sentence.all_words == ["the", "cat", "sat", ",", "on", "it"]
    assert sentence.spans == {(0, 2), (2, 5), (3, 5)} and sentence.labels[(2, 5)] == {"VP"}


@pytest.mark.parametrize("name, text", [
    ("long.trees", "(S (NN a) (NN b))\n(S (NN a) (NN b) (NN c) (NN d))\n"),
    ("long.conllu", conllu_row(1, 0) + conllu_row(2, 1) + "\n" + "".join(conllu_row(k, 1 if k > 1 else 0)
                                                                         for k in range(1, 5)) + "\n"),
])
def test_a_gold_sentence_longer_than_parse_parses_is_refused_in_one_line(tmp_path, monkeypatch, name, text):
    monkeypatch.setattr(conllu, "MAX_SENTENCE_WORDS", 3)
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(GoldFormatError, match=f"{name}:[234]: a sentence of 4 words, more than the 3 onlstm parses"):
        read_gold(path)
