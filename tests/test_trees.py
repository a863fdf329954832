import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from onlstm_cli.trees import (
    balanced,
    baseline_trees,
    build_tree,
    fold_tree,
    left_branching,
    random_tree,
    right_branching,
    tree_leaves,
    tree_spans,
)


def original_build_tree(depth, sen):
    """The ON-LSTM repository's build_tree, verbatim apart from numpy.argmax."""
    if len(depth) == 1:
        return sen[0]
    idx_max = max(range(len(depth)), key=lambda i: (depth[i], -i))
    parse_tree = []
    if len(sen[:idx_max]) > 0:
        parse_tree.append(original_build_tree(depth[:idx_max], sen[:idx_max]))
    tree1 = sen[idx_max]
    if len(sen[idx_max + 1:]) > 0:
        tree1 = [tree1, original_build_tree(depth[idx_max + 1:], sen[idx_max + 1:])]
    if parse_tree == []:
        parse_tree = tree1
    else:
        parse_tree.append(tree1)
    return parse_tree



def top_down_symmetric(distances, words):
    """The symmetric rule as its docstring says it: split [s, e) before the first largest boundary in s+1..e-1."""
    if len(words) == 1:
        return words[0]
    k = max(range(1, len(words)), key=lambda i: (distances[i], -i))
    return [top_down_symmetric(distances[:k], words[:k]), top_down_symmetric(distances[k:], words[k:])]

def is_binary(tree) -> bool:
    return fold_tree(tree, lambda word: True,
                     lambda children: len(children) == 2 and all(children))


WORDS = list("abcd")


def test_paper_rule_hand_examples():
    # argmax at the end: [x_<k, x_k]
    assert build_tree([1, 3, 2, 5], WORDS) == [["a", ["b", "c"]], "d"]
    # argmax inside: [x_<k, [x_k, x_>k]]
    assert build_tree([1, 5, 2, 3], WORDS) == ["a", ["b", ["c", "d"]]]
    # argmax first: [x_k, x_>k]
    assert build_tree([9, 1, 2, 3], WORDS) == ["a", [["b", "c"], "d"]]
    assert build_tree([7], ["w"]) == "w"
    assert build_tree([0, 1], ["w", "v"]) == ["w", "v"]


def test_paper_rule_takes_first_maximum_on_ties():
    assert build_tree([1, 3, 3, 0], WORDS) == ["a", ["b", ["c", "d"]]]
    assert build_tree([2, 2, 2, 2], WORDS) == ["a", ["b", ["c", "d"]]]


def test_symmetric_rule_hand_examples():
    # distances[k] is the boundary before word k: split [x_<k, x_>=k] at the largest one
    # inside the range; distances[0] is never used.
    assert build_tree([0, 5, 1, 2], WORDS, "symmetric") == ["a", [["b", "c"], "d"]]
    assert build_tree([9, 1, 5, 2], WORDS, "symmetric") == [["a", "b"], ["c", "d"]]
    assert build_tree([0, 1, 2, 3], WORDS, "symmetric") == [[["a", "b"], "c"], "d"]
    # ties: the first boundary wins
    assert build_tree([0, 2, 2, 2], WORDS, "symmetric") == ["a", ["b", ["c", "d"]]]


def test_symmetric_rule_reaches_a_tree_the_paper_rule_cannot():
    # The paper rule always puts x_k as left child of the right part, so [a, [[b, c], d]]
    # is out of its reach (Dyer et al. 2019); the same distances give another tree.
    assert build_tree([0, 5, 1, 2], WORDS, "paper") == ["a", ["b", ["c", "d"]]]


def test_build_tree_validates_input():
    with pytest.raises(ValueError, match="3 distances for 4 words"):
        build_tree([1, 2, 3], WORDS)
    with pytest.raises(ValueError, match="zero words"):
        build_tree([], [])
    with pytest.raises(ValueError, match="unknown split rule"):
        build_tree([1], ["a"], split="middle")


def test_build_tree_handles_2000_words_without_recursion():
    words = [f"w{i}" for i in range(2000)]
    for split in ("paper", "symmetric"):
        for distances in (list(range(2000)), list(range(2000, 0, -1)), [0.0] * 2000):
            tree = build_tree(distances, words, split)
            assert tree_leaves(tree) == words
            assert len(tree_spans(tree)) == 1998


distance_lists = st.lists(
    st.one_of(st.integers(0, 3), st.floats(-5, 5, allow_nan=False)), min_size=1, max_size=40)


@settings(max_examples=150, deadline=None)
@given(distances=distance_lists, split=st.sampled_from(["paper", "symmetric"]))
def test_build_tree_is_binary_over_the_input_words(distances, split):
    words = [f"w{i}" for i in range(len(distances))]
    tree = build_tree(distances, words, split)
    assert tree_leaves(tree) == words
    if len(words) == 1:
        assert tree == "w0"
    else:
        assert is_binary(tree)
        assert len(tree_spans(tree)) == len(words) - 2


@settings(max_examples=150, deadline=None)
@given(distances=distance_lists)
def test_paper_rule_matches_the_original_code(distances):
    words = [f"w{i}" for i in range(len(distances))]
    assert build_tree(distances, words, "paper") == original_build_tree(distances, words)



@settings(max_examples=150, deadline=None)
@given(distances=distance_lists)
def test_symmetric_rule_matches_the_top_down_split(distances):
    words = [f"w{i}" for i in range(len(distances))]
    assert build_tree(distances, words, "symmetric") == top_down_symmetric(distances, words)


@pytest.mark.parametrize("split", ["paper", "symmetric"])
def test_build_tree_is_linear_in_the_sentence(split):
    # distances that rise or fall along the sentence made the top-down search for each range's largest one
    # quadratic: 50,000 words took minutes that way
    n = 50_000
    words = [f"w{i}" for i in range(n)]
    for distances in (list(range(n)), list(range(n, 0, -1))):
        tree = build_tree(distances, words, split)
        assert tree_leaves(tree) == words

def test_baseline_shapes():
    assert right_branching(WORDS) == ["a", ["b", ["c", "d"]]]
    assert left_branching(WORDS) == [[["a", "b"], "c"], "d"]
    assert balanced(WORDS) == [["a", "b"], ["c", "d"]]
    # odd lengths: the left part gets the extra word
    assert balanced(list("abcde")) == [[["a", "b"], "c"], ["d", "e"]]
    assert balanced(list("abc")) == [["a", "b"], "c"]
    for make in (right_branching, left_branching, balanced):
        assert make(["w"]) == "w"


def test_random_tree_is_binary_and_seeded():
    words = [f"w{i}" for i in range(30)]
    tree = random_tree(words, random.Random(0))
    assert tree_leaves(tree) == words and is_binary(tree)
    assert tree == random_tree(words, random.Random(0))
    assert {str(random_tree(words, random.Random(seed))) for seed in range(5)} != {str(tree)}


def test_baseline_trees_by_name():
    sentences = [WORDS, ["x"]]
    assert baseline_trees(sentences, "right") == [right_branching(WORDS), "x"]
    assert baseline_trees(sentences, "random", seed=3) == baseline_trees(sentences, "random", 3)
    with pytest.raises(ValueError, match="unknown baseline"):
        baseline_trees(sentences, "upward")


def test_tree_spans_binary_and_nary():
    # spans of all constituents of >= 2 words except the whole sentence
    assert tree_spans(["a", ["b", ["c", "d"]]]) == {(1, 4), (2, 4)}
    assert tree_spans([["a", "b"], ["c", "d"]]) == {(0, 2), (2, 4)}
    assert tree_spans(["a", ["b", "c", "d"], "e"]) == {(1, 4)}
    assert tree_spans(["a", "b", "c"]) == set()
    assert tree_spans("a") == set()
    assert tree_leaves(["a", ["b", "c", "d"], "e"]) == list("abcde")


def test_punctuation_first_lifts_the_words_after_marks_above_all_others_keeping_their_order():
    from onlstm_cli.trees import punctuation_first
    lifted = punctuation_first([5.0, 1.0, 2.0, 9.0, 0.5], [False, True, False, False, True])
    assert sorted(range(5), key=lambda k: -lifted[k])[:2] == [1, 4]  # the two marked ones, above 9.0
    assert lifted[1] > lifted[4] and [lifted[k] for k in (0, 2, 3)] == [5.0, 2.0, 9.0]
    assert punctuation_first([3.0, 1.0], [False, False]) == [3.0, 1.0]
