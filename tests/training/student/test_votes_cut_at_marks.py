"""The teachers' trees cut at the marks of the training line before the votes are counted (votes_of's
cut_at_marks), as `parse` cuts the student's trees; the student's file is written with it where its host cuts."""
from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from onlstm_cli.config import SelfTrainConfig
from onlstm_cli.text.corpus import read_as_trained, read_as_trained_with_pieces
from onlstm_cli.span.model import tree_heights
from onlstm_cli.text.marks import piece_levels
from onlstm_cli.trees import build_tree, punctuation_first, spans_cut_at_marks, tree_spans
from onlstm_cli.training.student.votes import votes_of
from training.student.test_collapsed_teachers import teachers


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1), st.sampled_from([0, 0, 0, 1, 2])), min_size=1, max_size=14))
def test_a_tree_cut_at_marks_is_the_tree_parse_cuts_from_its_split_heights(words):
    """Cutting a tree's spans gives the tree `parse` builds from a tree parser's distances (its tree's split
    heights) lifted at the marks."""
    levels = [level for _, level in words]
    n = len(words)
    tree = build_tree([d for d, _ in words], list(range(n)), "symmetric")
    heights = tree_heights(tree) if n > 1 else [0]
    cut = tree_spans(build_tree(punctuation_first(heights, levels), list(range(n)), "symmetric"))
    assert spans_cut_at_marks(tree_spans(tree), levels) == cut


def test_the_pieces_of_a_text_read_without_its_marks(tiny_loaded, tmp_path):
    text = tmp_path / "t.txt"
    text.write_text("the cat , the dog sat .\n, ,\nthe (big) dog\n", encoding="utf-8")
    sentences, pieces = read_as_trained_with_pieces(text, tiny_loaded)
    assert sentences == read_as_trained(text, tiny_loaded) == [["the", "cat", "the", "dog", "sat"],
                                                                ["the", "big", "dog"]]
    assert pieces[0] == [0, 0, 1, 0, 0]  # cut before the word after the comma
    assert pieces[1][1] > 0 and pieces[1][2] > 0  # the bracket encloses "big", cut at both its ends
    assert piece_levels(["the", "cat"]) == [0, 0]


def test_the_votes_cut_at_the_marks_of_each_line_keep_no_span_across_a_mark(tiny_loaded, tmp_path):
    lines = [" ".join(random.Random(k).sample(["the", "cat", "dog", "sat", "on", "mat", "a"], 6)) for k in range(40)]
    train, valid = tmp_path / "train.txt", tmp_path / "valid.txt"
    train.write_text("".join(f"{line[:11]} , {line[11:]}\n" for line in lines), encoding="utf-8")
    valid.write_text("".join(f"{line[:11]} , {line[11:]}\n" for line in lines[:10]), encoding="utf-8")
    voters = teachers(tiny_loaded, "random", "right")
    config = SelfTrainConfig(right_branching=0.0, max_branching_agreement=100.0)
    uncut = votes_of(voters, train, valid, config, lambda line: None, host=tiny_loaded)
    cut = votes_of(voters, train, valid, config, lambda line: None, host=tiny_loaded, cut_at_marks=True)
    _, pieces = read_as_trained_with_pieces(train, tiny_loaded)
    crossing = 0
    for spans, before, levels in zip(cut.spans, uncut.spans, pieces):
        comma = levels.index(1)  # the word after the comma starts a piece
        assert all(not (i < comma < j) or (i, j) == (0, len(levels)) for i, j in spans)
        crossing += any(i < comma < j for i, j in before)
    assert crossing > 0  # the uncut votes had spans across it
    assert cut.valid_pieces and not uncut.valid_pieces and cut.valid_parse_trees == uncut.valid_parse_trees


def test_a_student_whose_host_cuts_at_marks_learns_votes_cut_at_them(tiny_loaded, tiny_model_path, tiny_corpus,
                                                                    tmp_path):
    """self_train cuts the votes where its host file cuts its trees at marks (every file `train` writes now)."""
    from onlstm_cli.config import SpanParserConfig
    from onlstm_cli.modelfile import load_model
    from onlstm_cli.training.student.train import self_train
    host = load_model(tiny_model_path)
    assert host.cuts_at_marks()
    result = self_train(tiny_corpus["train"], tmp_path / "s.onlstm", host, tiny_corpus["valid"],
                        SpanParserConfig(vocab_size=len(host.vocab), emb_size=8, hidden_size=8, mlp_size=8),
                        SelfTrainConfig(epochs=1), log=lambda line: None)
    _, pieces = read_as_trained_with_pieces(tiny_corpus["valid"], host)
    assert result.votes.valid_pieces == pieces and any(any(levels) for levels in pieces)
