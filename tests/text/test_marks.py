"""Punctuation marks and where they cut a tree (onlstm_cli/text/marks.py)."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from onlstm_cli.text.marks import is_mark, levels_among, mark_pairs, piece_levels, piece_starts
from onlstm_cli.trees import build_tree, punctuation_first, tree_spans


def test_pieces_start_after_a_mark_or_at_one_that_opens_not_after_symbols():
    assert piece_starts(["Ali", ",", "eve", "gitti", "."]) == [False, False, True, False, False]
    assert piece_starts(["«", "Evet", "»", "dedi"]) == [False, False, False, True]
    assert piece_starts(["Ali", "«", "evet", "»", "dedi"]) == [False, True, False, False, True]
    assert piece_starts(["a", ",", "(", "«", "b", ")"]) == [False, False, True, False, False, False]
    assert piece_starts(["$", "5", "%", "x"]) == [False] * 4  # symbols are no boundary
    # quotation marks alternate within their family, whichever way a language writes them
    for quotes in ('""', "“”", "„“", "»«", "«»"):
        assert piece_starts(["a", quotes[0], "b", quotes[1], "c"]) == [False, True, False, False, True], quotes
    # single curly quotes by their shape, as ’ is the apostrophe too
    assert piece_starts(["a", "‘", "b", "’", "c", "dogs", "’", "d"]) == [False, True, False, False, True, False,
                                                                       False, True]


def test_marks_pair_with_the_first_closing_mark_of_their_kind_and_unmatched_ones_with_none():
    tokens = "Ali « bugün ( belki ) gelirim » dedi , ama “ gelmedi ” .".split()
    assert mark_pairs(tokens) == [(3, 5), (1, 7), (11, 13)]
    assert mark_pairs("a ( b » c ) d ‘ e ’ f".split()) == [(1, 5), (7, 9)]  # » opens a quote that never closes
    assert mark_pairs("a ) b ( c dogs ’ d".split()) == []  # a ) before any (, a ( never closed, an apostrophe


def test_a_quotation_or_parenthesis_is_cut_before_what_it_encloses():
    tokens = "Ali « bugün ( belki ) gelirim » dedi , ama “ gelmedi ” .".split()
    assert piece_levels(tokens) == [0, 3, 0, 2, 0, 0, 2, 0, 3, 0, 3, 3, 0, 0, 0]
    assert piece_levels("Ali , eve gitti .".split()) == [0, 0, 1, 0, 0]  # no pairs: one level


def test_a_quote_is_one_constituent_whatever_the_model_says_inside_it():
    tokens = "Ali « bugün , belki gelirim » dedi".split()
    words = [k for k, t in enumerate(tokens) if t not in "«,»"]  # the model reads the words alone
    distances = [0.0, 1.0, 9.0, 2.0, 3.0]  # the model would cut first inside the quote, before "belki"
    cut = punctuation_first(distances, levels_among(piece_levels(tokens), words))
    assert (1, 4) in tree_spans(build_tree(cut, [tokens[k] for k in words], "symmetric"))  # bugün belki gelirim


def test_a_cut_before_a_token_left_out_goes_to_the_next_one_kept():
    levels = [0, 2, 0, 1, 0, 0]
    assert levels_among(levels, [0, 2, 4, 5]) == [0, 2, 1, 0]
    assert levels_among(levels, list(range(6))) == levels


def naive_pairs_and_depths(tokens):
    """mark_pairs and the pairs around each cut as first written: a search of the open marks at each closing one,
    and each pair's tokens counted one by one (quadratic in the line)."""
    from onlstm_cli.text.marks import _mark_kind, may_pair, opening_marks
    opening, stack, pairs = opening_marks(tokens), [], []
    for k, token in enumerate(tokens):
        kind = _mark_kind(token, opening[k]) if may_pair(token) and is_mark(token) else None
        if kind is not None and opening[k]:
            stack.append((k, kind))
        elif kind is not None and any(open_kind == kind for _, open_kind in stack):
            while stack[-1][1] != kind:
                stack.pop()
            pairs.append((stack.pop()[0], k))
    depth = [0] * len(tokens)
    for opened, closed in pairs:
        for k in range(opened + 1, closed + 1):
            depth[k] += 1
    return pairs, depth


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(list('()[]“”"«»‘’,.ab')), max_size=30))
def test_pairs_and_levels_are_those_of_the_first_written_rule(tokens):
    pairs, depth = naive_pairs_and_depths(tokens)
    assert mark_pairs(tokens) == pairs
    starts, top = piece_starts(tokens), max(depth, default=0) + 1
    assert piece_levels(tokens) == [top - d if start else 0 for start, d in zip(starts, depth)]


def test_pairing_marks_is_linear_in_the_line():
    # a closing mark searched every open one, and each pair's tokens were counted one by one: either way
    # 20,000 of them took half a minute
    n = 20_000
    unclosed = ["a", *["("] * n, *["’"] * n, "b"]
    assert mark_pairs(unclosed) == [] and max(piece_levels(unclosed)) == 1
    nested = ["(", "a"] * n + [")"] * n
    assert len(mark_pairs(nested)) == n and max(piece_levels(nested)) == n
