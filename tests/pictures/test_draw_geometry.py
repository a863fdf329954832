"""The drawn trees as geometry: no two edges of a picture cross (issue 24), read back from the SVG's
`edges` elements as a browser would draw them (tests/svg_geometry.py).

Random trees (binary and n-ary, any word widths), sentences parsed with the bundled models, and, where the
shared data is beside the checkout, the first 200 lines of the PTB validation text.
"""
from __future__ import annotations

import random
import xml.etree.ElementTree as ET
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from onlstm_cli.pictures.draw import sentence_svg
from onlstm_cli.pictures.report_page import tree_from_spans
from onlstm_cli.trees import build_tree, left_branching, right_branching, tree_spans
from svg_geometry import SVG, crossings, edge_segments, path_segments, segments_cross, svg_crossings

REPO = Path(__file__).resolve().parents[2]
PTB_VALID = REPO.parent / "shared" / "data" / "ptb-lm" / "ptb.valid.txt"

F = Fraction


def seg(x1, y1, x2, y2):
    return ((F(x1), F(y1)), (F(x2), F(y2)))


# --- the checker itself ---------------------------------------------------------------------------

def test_the_checker_finds_crossings_and_lets_shared_endpoints_be():
    assert segments_cross(seg(0, 0, 10, 10), seg(0, 10, 10, 0))          # an X
    assert not segments_cross(seg(0, 0, 10, 10), seg(10, 10, 20, 0))     # a shared endpoint (a node)
    assert not segments_cross(seg(0, 0, 10, 10), seg(0, 0, -10, 10))     # a parent's two edges
    assert segments_cross(seg(0, 0, 10, 0), seg(5, 0, 5, 10))            # a T: one ends on the other
    assert segments_cross(seg(0, 0, 10, 0), seg(0, 0, 20, 0))            # drawn over each other
    assert not segments_cross(seg(0, 0, 10, 0), seg(0, 1, 10, 1))        # parallel
    assert not segments_cross(seg(0, 0, 10, 10), seg(20, 20, 30, 0))     # apart, though their lines meet


def test_the_checker_reads_paths_and_lines():
    assert path_segments("M0 0L10 10V20M5 0L5 3H8") == [seg(0, 0, 10, 10), seg(10, 10, 10, 20),
                                                        seg(5, 0, 5, 3), seg(5, 3, 8, 3)]
    svg = ('<svg xmlns="http://www.w3.org/2000/svg"><path class="guides" d="M0 0L9 9"/>'
           '<g class="edges"><line x1="0" y1="10" x2="10" y2="0"/></g>'
           '<path class="edges" d="M0 0L10 10"/></svg>')
    assert len(edge_segments(svg)) == 2  # guides are not edges
    assert len(svg_crossings(svg)) == 1


def test_the_old_layout_would_fail():
    """Before issue 24 every word hung from its parent by one long diagonal to the word row: the root's
    edge to a final "." ran through the right subtree. The checker sees that picture as crossing."""
    # [[a, [b, c]], "."]: the root at (50, 0), its edge to "." down at the word row (y 40), and the
    # subtree [b, c] at its height (y 10), above that edge, with its words below it
    old = ('<svg xmlns="http://www.w3.org/2000/svg"><path class="edges" d="M50 0L100 40M50 0L30 20'
           'M30 20L0 40M30 20L70 10M70 10L60 40M70 10L90 40"/></svg>')
    assert len(svg_crossings(old)) == 3


# --- pictures -------------------------------------------------------------------------------------

def assert_planar(tokens, tree, distances=None, split_numbers=True):
    svg = sentence_svg(tokens, tree, distances, split_numbers=split_numbers)
    segments = edge_segments(svg)
    found = crossings(segments)
    assert not found, f"{len(found)} crossing edges, e.g. {found[0]}"
    return svg, segments


def random_tree(rng: random.Random, words: list[str], max_children: int):
    """A random tree over the words: each node splits its span into 2..max_children parts."""
    if len(words) == 1:
        return words[0]
    parts = rng.randint(2, min(max_children, len(words)))
    cuts = sorted(rng.sample(range(1, len(words)), parts - 1))
    bounds = [0, *cuts, len(words)]
    return [random_tree(rng, words[a:b], max_children) for a, b in zip(bounds, bounds[1:])]


WORD = st.text(alphabet=st.sampled_from("ab.天安门,WMi'"), min_size=1, max_size=12)


@settings(max_examples=150, deadline=None)
@given(st.lists(WORD, min_size=1, max_size=40), st.integers(0, 2**32 - 1), st.integers(2, 4))
def test_random_trees_never_cross(words, seed, max_children):
    tree = random_tree(random.Random(seed), words, max_children)
    distances = [random.Random(seed + k).random() for k in range(len(words))]
    svg, segments = assert_planar(words, tree, distances if max_children == 2 else None)
    # every word is reached: one drawn line ends over each word's column
    root = ET.fromstring(svg)
    word_x = {F(e.get("x")) for e in root.iter(SVG + "text") if e.get("class") == "word"}
    lowest = max(max(a[1], b[1]) for a, b in segments) if segments else None
    ends = {p[0] for s in segments for p in s if p[1] == lowest}
    assert len(words) == 1 or word_x <= ends


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0, 10, allow_nan=False), min_size=2, max_size=60), st.sampled_from(["paper", "symmetric"]))
def test_trees_built_from_distances_never_cross(distances, split):
    words = [f"w{k}" for k in range(len(distances))]
    assert_planar(words, build_tree(distances, words, split), distances)


@pytest.mark.parametrize("shape", [right_branching, left_branching])
def test_long_chains_never_cross(shape):
    words = [f"word{k}" for k in range(120)]
    assert_planar(words, shape(words), [1.0] * len(words))


def test_gold_trees_from_spans_never_cross():
    rng = random.Random(3)
    for _ in range(50):
        words = [f"w{k}" for k in range(rng.randint(2, 30))]
        spans = {tuple(sorted(rng.sample(range(len(words) + 1), 2))) for _ in range(rng.randint(0, 12))}
        tree = tree_from_spans(words, spans)
        assert tree_spans(tree) <= {s for s in spans if s[1] - s[0] >= 2}
        assert_planar(words, tree, None, split_numbers=False)


# --- parsed with the bundled models ---------------------------------------------------------------

SENTENCES = {
    "en": ["The cat sat on the mat .",
           "The company said it expects sales to rise sharply next year .",
           "But the stock market , which had fallen for three days , recovered on Friday after the report .",
           "Mr. Smith , 61 years old , will join the board as a nonexecutive director Nov. 29 .",
           "He said that the plan , if approved by shareholders , would be completed by the end of the year ."],
    "zh": ["我 真的 很 喜欢 北京 天安门 广场 的 风景 。",
           "中国 经济 今年 继续 保持 稳定 增长 ， 出口 比 去年 增加 了 百分之十 。"],
}


@pytest.fixture(scope="module")
def bundled():
    from onlstm_cli.api import Parser
    return {lang: Parser.load(lang, pretokenized=True) for lang in SENTENCES}


def test_parsed_sentences_never_cross(bundled):
    for lang, lines in SENTENCES.items():
        for parsed in bundled[lang].parse_lines(lines):
            assert_planar(parsed.tokens, parsed.tree, parsed.distances)


@pytest.mark.skipif(not PTB_VALID.is_file(), reason=f"no shared data at {PTB_VALID}")
def test_no_crossings_in_the_first_200_lines_of_ptb_valid(bundled):
    """Issue 24 counted 95 of these 200 sentences with crossing edges."""
    lines = PTB_VALID.read_text(encoding="utf-8").splitlines()[:200]
    parsed = [p for p in bundled["en"].parse_lines(lines) if p.tree is not None]
    assert len(parsed) == 200
    crossing = sum(1 for p in parsed if svg_crossings(sentence_svg(p.tokens, p.tree, p.distances)))
    assert crossing == 0, f"{crossing} of 200 sentences have crossing edges"
