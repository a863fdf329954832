"""Probe (pcfg.md, "The teachers' votes cut at the marks of the training line"): `onlstm train ARGS…` with each
voter's tree of a training or validation sentence cut at the punctuation marks its line had (as `parse` cuts a tree:
text.marks.piece_levels, trees.punctuation_first) before the votes are counted. The sentences are read as the
recipe reads them, without the marks, so the student never sees a mark: it learns where the pieces split from the
words alone. Nothing in onlstm_cli is changed; the patch lives in this process only. It ran against the code
before the change it led to (commit 654daf1, votes_of's cut_at_marks), which cuts the votes itself: run it from a
checkout of 34502b9.

    CUT=1 python docs/experiments/scripts/cut_votes_probe.py train CORPUS --valid VALID --teacher … -o OUT

CUT=0 leaves the votes as they are (the probe's other arm). Either way the student trains as the recipe's does,
until its time budget (runner.span_parser_training), not until --epochs or its patience.
"""
import os
import sys
from dataclasses import replace

from onlstm_cli.text import corpus as corpus_module
from onlstm_cli.text.marks import levels_among, piece_levels
from onlstm_cli.text.tokenizers import is_punctuation
from onlstm_cli.trees import build_tree, punctuation_first, tree_spans
from onlstm_cli.training.student import votes as votes_module

READ: list = []  # votes_of reads the training text, then the validation text: each one's piece levels, in order


def read_with_levels(path, loaded, reverse=False):
    """read_as_trained, and each sentence's piece levels among its kept tokens, remembered by the lengths."""
    pretokenized, keep_punct = corpus_module.trained_reading(loaded)
    sentences = corpus_module.read_as_trained(path, loaded, reverse)
    levels = []
    for tokens in corpus_module.iter_sentences(path, loaded.tokenizer, pretokenized, keep_punct=True):
        kept = [k for k, t in enumerate(tokens) if keep_punct or not is_punctuation(t)]
        if kept:
            levels.append(levels_among(piece_levels(tokens), kept))
    assert [len(x) for x in levels] == [len(s) for s in sentences], "the marks' reading differs from the text's"
    return sentences, levels


def patched_read(path, loaded, reverse=False):
    sentences, levels = read_with_levels(path, loaded, reverse)
    READ.append(levels)
    return sentences


def heights_of(spans: set, n: int) -> list[float]:
    """Split heights of the binary tree with these spans (and the root): a boundary's height is the length of the
    smallest span that holds it inside."""
    heights = [0.0] * n
    for i, j in sorted(spans | {(0, n)}, key=lambda s: s[1] - s[0], reverse=True):
        for k in range(i + 1, j):
            heights[k] = float(j - i)
    return heights


def cut(spans: set, levels: list[int]) -> set:
    if not any(levels):
        return spans
    n = len(levels)
    return tree_spans(build_tree(punctuation_first(heights_of(spans, n), levels), list(range(n)), "symmetric"))


original_vote = votes_module.vote


def patched_vote(trees, lengths, *args, **kwargs):
    """votes_of counts the training votes first, then the validation votes, over the sentences it read that are
    short enough (a prefix of them where the clock stopped the teachers): each is the next of its text's sentences
    of its length, since those it skipped are longer than any it kept."""
    read = READ[CALLS.count]
    CALLS.count += 1
    levels, at = [], 0
    for n in lengths:
        while len(read[at]) != n:
            at += 1
        levels.append(read[at])
        at += 1
    trees = [[cut(spans, lv) for spans, lv in zip(voter, levels)] for voter in trees]
    return original_vote(trees, lengths, *args, **kwargs)


class CALLS:
    count = 0


if os.environ.get("CUT", "1") == "1":
    votes_module.read_as_trained = patched_read
    votes_module.vote = patched_vote


def until_budget(train_function):
    from onlstm_cli.training.recipe.runner import UNTIL_BUDGET

    def run(*args, train=None, **kwargs):
        return train_function(*args, train=replace(train, epochs=UNTIL_BUDGET, patience=UNTIL_BUDGET), **kwargs)
    return run

if __name__ == "__main__":
    from onlstm_cli.training.student import train as student_train
    student_train.self_train = until_budget(student_train.self_train)
    from onlstm_cli.cli.commands import app
    app(sys.argv[1:])
