"""`from onlstm_cli import Parser`: the Python API, its NLTK shape, and that it gives the CLI's trees."""
from __future__ import annotations

import nltk
import pytest
from nltk.parse.api import ParserI

from onlstm_cli import Parser
from onlstm_cli.formats import to_bracket
from onlstm_cli.parser import parse_lines

LINES = ["The cat sat on the mat.", "A dog saw a bird near the house.", "", "Hello , world !"]


def test_parse_gives_the_tree_parse_lines_gives_as_an_nltk_tree(tiny_model_path):
    parser = Parser.load(tiny_model_path)
    expected = parse_lines(LINES, model=str(tiny_model_path))
    for line, want in zip(LINES, expected):
        tree = parser.parse(line)
        assert isinstance(tree, nltk.Tree)
        if want.tree is None:
            assert tree == nltk.Tree("S", [])
            continue
        assert tree.leaves() == want.tokens
        # the same tree `onlstm parse -f bracket` prints
        assert nltk.Tree.fromstring(to_bracket(want.tree)) == tree


def test_parse_sents_streams_in_order_in_batches(tiny_model_path):
    parser = Parser(tiny_model_path, batch_size=2)
    consumed = []

    def lines():
        for line in LINES * 3:
            consumed.append(line)
            yield line

    trees = parser.parse_sents(lines())
    first = next(trees)
    assert first.leaves() == ["The", "cat", "sat", "on", "the", "mat", "."]
    assert len(consumed) < len(LINES) * 3  # it did not read everything before the first tree
    rest = list(trees)
    assert [t.leaves() for t in [first, *rest]] == [parser.parse(line).leaves() for line in LINES * 3]


def test_tokens_are_kept_as_given_and_distances_come_per_token(tiny_model_path):
    parser = Parser(tiny_model_path)
    tokens = ["the", "cat", "sat", "on", "the", "mat"]
    tree = parser.parse(tokens)
    assert tree.leaves() == tokens
    distances = parser.distances(tokens)
    assert len(distances) == len(tokens) and all(isinstance(d, float) for d in distances)
    assert parser.distances("the cat , sat")[2] is None  # punctuation the model has no word for
    with pytest.raises(ValueError, match="pretokenized"):
        list(parser.parse_sents([tokens]))
    assert [t.leaves() for t in Parser(tiny_model_path, pretokenized=True).parse_sents([tokens])] == [tokens]


def test_it_works_where_nltk_expects_a_parser(tiny_model_path):
    parser = Parser(tiny_model_path)
    assert isinstance(parser, ParserI)
    assert parser.parse_one("The cat sat.") == parser.parse("The cat sat.")
    assert parser.parse_all("The cat sat.") == [parser.parse("The cat sat.")]


def test_a_bad_model_fails_at_load_with_one_line(tmp_path):
    from onlstm_cli.errors import OnlstmError
    with pytest.raises(OnlstmError) as error:
        Parser.load(tmp_path / "missing.onlstm")
    assert "\n" not in str(error.value)
    with pytest.raises(ValueError):
        Parser(batch_size=0)


def test_parse_batches_answers_each_batch_before_reading_the_next(tiny_model_path):
    """What `onlstm parse` runs: a batch (what stdin had ready) is parsed and answered as one list."""
    parser = Parser(tiny_model_path)
    batches = [["The cat sat on the mat.", ""], ["Hello , world !"]]
    consumed = []

    def source():
        for batch in batches:
            consumed.append(batch)
            yield batch

    answers = parser.parse_batches(source())
    first = next(answers)
    assert consumed == batches[:1]  # the second batch was not waited for
    assert [p.tokens for p in first] == [["The", "cat", "sat", "on", "the", "mat", "."], []]
    assert [[p.tokens for p in batch] for batch in answers] == [[["Hello", ",", "world", "!"]]]
    assert [p.tokens for p in parser.parse_lines(line for batch in batches for line in batch)] == \
        [p.tokens for batch in parser.parse_batches(batches) for p in batch]
