"""Syntactic distances -> unlabeled binary trees, baseline trees, and constituent spans.

A tree is a nested list of str: a leaf is the word itself, an internal node is a list of
children (two for the trees built here; trees read from other parsers may be n-ary).
A one-word sentence's tree is the bare string. This is exactly the JSON form, e.g.
``["爱", ["真的", ["需要", "勇气"]]]``.

Everything walks trees with explicit stacks: a right-branching tree over 2,000 words is
2,000 levels deep, far past Python's recursion limit.
"""

from __future__ import annotations

import random
from typing import Callable, Sequence, TypeVar, Union

Tree = Union[str, list]  # list elements are Trees; mypy cannot spell the recursion nicely
T = TypeVar("T")

SPLIT_RULES = ("paper", "symmetric")
# "boundaries": a constituent starts at an opening bracket or quote and right after any other punctuation mark,
# and a pair of them encloses one (text.marks.piece_levels), split before any other word;
# "ignore": the paper's protocol, the model's distances alone.
PUNCTUATION_RULES = ("boundaries", "ignore")
# What `evaluate` also scores: "remove", the literature's protocol as issue 52 words it, the gold words alone parsed
# as `parse --pretokenized` parses them (no mark, a multiword token as its words), where "ignore" feeds the model
# the tokens as the text shows them, marks it knows included, and drops the marks from its tree.
SCORING_PUNCTUATION = (*PUNCTUATION_RULES, "remove")

# The most words a sentence may have to be parsed (parse answers a longer line with a message; evaluate refuses
# a longer gold sentence): a line of millions of words is no sentence, but a file without newlines.
MAX_SENTENCE_WORDS = 100_000

# A split chooser gets a word range [start, end) with end - start >= 2 and returns the
# first word of the right part, start < m < end.
SplitChooser = Callable[[int, int], int]


def _first_max_tree(values: Sequence[float]) -> tuple[int, list[int], list[int]]:
    """The Cartesian tree of `values`: each range's root is its largest value, the first one on ties (what
    numpy.argmax picks). Returns (root, left child, right child), -1 for none. One pass with a stack, so a
    sentence's tree takes time linear in its length, where searching each range for its largest value took
    time quadratic in it for distances that rise or fall along the sentence."""
    left, right = [-1] * len(values), [-1] * len(values)
    stack: list[int] = []
    for i, value in enumerate(values):
        last = -1
        while stack and values[stack[-1]] < value:  # strictly: an equal value before it stays above it
            last = stack.pop()
        left[i] = last
        if stack:
            right[stack[-1]] = i
        stack.append(i)
    return (stack[0] if stack else -1), left, right


def _parents_first(root: int, left: list[int], right: list[int]) -> list[int]:
    """The nodes of a binary tree, each before its children."""
    order, stack = [], [root]
    while stack:
        node = stack.pop()
        order.append(node)
        stack.extend(child for child in (left[node], right[node]) if child >= 0)
    return order


def _paper_tree(distances: Sequence[float], words: Sequence[str]) -> Tree:
    """The paper's top-down split, from the Cartesian tree of the distances: the node of a range whose first
    largest distance is at k is [x_<k, [x_k, x_>k]], empty parts dropped."""
    root, left, right = _first_max_tree(distances)
    built: list = [None] * len(words)
    for k in reversed(_parents_first(root, left, right)):  # children before parents
        node = words[k] if right[k] < 0 else [words[k], built[right[k]]]
        built[k] = node if left[k] < 0 else [built[left[k]], node]
    return built[root]


def _symmetric_tree(distances: Sequence[float], words: Sequence[str]) -> Tree:
    """The symmetric top-down split, from the Cartesian tree of the boundaries distances[1:]: the range whose
    first largest boundary is before word k splits into [x_<k] and [x_≥k]."""
    if len(words) == 1:
        return words[0]
    root, left, right = _first_max_tree(distances[1:])  # boundary j is before word j + 1
    built: list = [None] * (len(words) - 1)
    for j in reversed(_parents_first(root, left, right)):
        built[j] = [words[j] if left[j] < 0 else built[left[j]], words[j + 1] if right[j] < 0 else built[right[j]]]
    return built[root]


def _build_top_down(words: Sequence[str], choose_split: SplitChooser) -> Tree:
    """Split [0, n) recursively with choose_split, using an explicit stack."""
    n = len(words)
    if n == 0:
        raise ValueError("cannot build a tree over zero words")
    # Each frame is (start, end, slot): the finished subtree for [start, end) is written into
    # slot = (parent list, index). The root goes into a one-element holder.
    holder: list = [None]
    stack: list[tuple[int, int, list, int]] = [(0, n, holder, 0)]
    while stack:
        start, end, parent, index = stack.pop()
        if end - start == 1:
            parent[index] = words[start]
            continue
        middle = choose_split(start, end)
        if not start < middle < end:
            raise AssertionError(f"split {middle} outside ({start}, {end})")
        node: list = [None, None]
        parent[index] = node
        stack.append((middle, end, node, 1))
        stack.append((start, middle, node, 0))
    return holder[0]


def build_tree(distances: Sequence[float], words: Sequence[str], split: str = "paper") -> Tree:
    """Binary tree from per-word syntactic distances, splitting top-down at the largest one.

    split="paper" is the ON-LSTM / PRPN rule: with k the word of largest distance (first on
    ties), the node is [x_<k, [x_k, x_>k]] (empty parts dropped). It is right-biased and cannot
    produce every binary tree (Dyer et al. 2019).

    split="symmetric" reads distances[k] as the boundary *before* word k (which is what the
    ON-LSTM master forget gate measures) and splits a range [s, e) into [x_s..x_k-1, x_k..x_e-1]
    at the largest boundary strictly inside the range, k in s+1..e-1. So distances[0] is
    never used and every binary tree is reachable. (Taking the argmax over the whole range
    instead, with [x_k, x_>k] when k == s, gives exactly the paper's trees, so that would not
    be a different rule.)
    """
    if len(distances) != len(words):
        raise ValueError(f"{len(distances)} distances for {len(words)} words; need one per word")
    if len(words) == 0:
        raise ValueError("cannot build a tree over zero words")
    if split not in SPLIT_RULES:
        raise ValueError(f"unknown split rule {split!r}; choose from {', '.join(SPLIT_RULES)}")
    # (built bottom-up from the distances' Cartesian tree: the same trees as the top-down split, in linear time)
    return _paper_tree(distances, words) if split == "paper" else _symmetric_tree(distances, words)


def punctuation_first(distances: Sequence[float], levels: Sequence[int]) -> list[float]:
    """The distances with each word where a piece starts (text.marks.piece_levels: right after a punctuation
    mark, or at one that opens) raised above every other word's, by its level, in their own order within a
    level: the top-down split cuts at the marks first, pairs of marks before what they enclose, then inside
    the pieces by the model's distances."""
    if not any(levels):
        return list(distances)
    lift = max(distances) - min(distances) + 1.0
    return [d + lift * level for d, level in zip(distances, levels)]


def spans_cut_at_marks(spans: set[tuple[int, int]], levels: Sequence[int]) -> set[tuple[int, int]]:
    """The spans (tree_spans) of a binary tree over len(levels) words, as the tree is when cut at punctuation marks
    first (punctuation_first with `levels`, text.marks.piece_levels): the pieces split off first, and inside each
    the tree's own spans. As `parse` cuts a tree parser's tree, from its split heights (span/model.split_heights;
    a language model's own distances may join the pieces of one level in another order): a span's split is where
    its left child ends, the next shorter span of its start or its first word."""
    n = len(levels)
    if n < 3 or not any(levels):
        return set(spans)
    ends_by_start: dict[int, list[int]] = {}
    for i, j in spans | {(0, n)}:
        ends_by_start.setdefault(i, []).append(j)
    heights = [0.0] * n
    for i, ends in ends_by_start.items():
        ends.sort(reverse=True)
        for at, j in enumerate(ends):
            heights[ends[at + 1] if at + 1 < len(ends) else i + 1] = float(j - i)
    return tree_spans(build_tree(punctuation_first(heights, levels), list(range(n)), "symmetric"))


# --- baselines -------------------------------------------------------------------------------

def right_branching(words: Sequence[str]) -> Tree:
    """[w0, [w1, [w2, ...]]]"""
    return _build_top_down(words, lambda start, end: start + 1)


def left_branching(words: Sequence[str]) -> Tree:
    """[[[w0, w1], w2], ...]"""
    return _build_top_down(words, lambda start, end: end - 1)


def balanced(words: Sequence[str]) -> Tree:
    """Split every range in the middle; with an odd length the left part gets the extra word.

    The rounding matters for the published baseline: left-heavy gives the 21.34 sentence-F1
    on ptb-dev that the ON-LSTM/PRPN protocol reports, right-heavy would give 24.39.
    """
    return _build_top_down(words, lambda start, end: start + (end - start + 1) // 2)


def random_tree(words: Sequence[str], rng: random.Random) -> Tree:
    """Top-down, each split point drawn uniformly among the gaps of the range."""
    return _build_top_down(words, lambda start, end: rng.randint(start + 1, end - 1))


BASELINES: dict[str, Callable[[Sequence[str], random.Random], Tree]] = {
    "right": lambda words, rng: right_branching(words),
    "left": lambda words, rng: left_branching(words),
    "balanced": lambda words, rng: balanced(words),
    "random": random_tree,
}


def baseline_trees(sentences: Sequence[Sequence[str]], name: str, seed: int = 0) -> list[Tree]:
    """One baseline tree per sentence; "random" draws from a single Random(seed) in order."""
    if name not in BASELINES:
        raise ValueError(f"unknown baseline {name!r}; choose from {', '.join(BASELINES)}")
    make = BASELINES[name]
    rng = random.Random(seed)
    return [make(words, rng) for words in sentences]


# --- walking trees -----------------------------------------------------------------------------

def fold_tree(tree: Tree, on_leaf: Callable[[str], T], on_node: Callable[[list[T]], T]) -> T:
    """Bottom-up fold: on_leaf for each word, on_node with the folded children of each node.

    Children are visited left to right, so on_leaf sees the words in sentence order.
    Works for any list subclass too (nltk.Tree); anything that is not a list is a leaf.
    """
    results: list[T] = []
    stack: list[tuple[Tree, bool]] = [(tree, False)]
    while stack:
        node, children_done = stack.pop()
        if not isinstance(node, list):
            results.append(on_leaf(node))
        elif children_done:
            first = len(results) - len(node)
            children = results[first:]
            del results[first:]
            results.append(on_node(children))
        else:
            stack.append((node, True))
            stack.extend((child, False) for child in reversed(node))
    return results[0]


def tree_leaves(tree: Tree) -> list[str]:
    """The words of a tree, left to right."""
    leaves: list[str] = []
    stack: list[Tree] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            leaves.append(node)
        else:
            stack.extend(reversed(node))
    return leaves


def tree_spans(tree: Tree) -> set[tuple[int, int]]:
    """(start, end) word spans, end exclusive, of every constituent of >= 2 words but the root.

    Same set as get_brackets() of the ON-LSTM / PRPN evaluation code, for binary and n-ary
    trees alike.
    """
    spans: set[tuple[int, int]] = set()
    position = 0

    def on_leaf(word: str) -> tuple[int, int]:
        nonlocal position
        position += 1
        return (position - 1, position)

    def on_node(children: list[tuple[int, int]]) -> tuple[int, int]:
        for start, end in children:
            if end - start >= 2:
                spans.add((start, end))
        if not children:
            return (position, position)
        return (children[0][0], children[-1][1])

    fold_tree(tree, on_leaf, on_node)
    return spans
