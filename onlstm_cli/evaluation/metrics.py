"""Unlabeled bracketing F1 as in the ON-LSTM / PRPN evaluation code, and summary reports."""

from __future__ import annotations

from statistics import mean
from typing import Iterable, Sequence

from onlstm_cli.text.gold import GoldSentence
from onlstm_cli.trees import Tree, tree_leaves, tree_spans

Span = tuple[int, int]

# Labels reported by label recall, as in the ON-LSTM / PRPN papers.
RECALL_LABELS = ("NP", "VP", "PP", "ADJP", "SBAR")
LENGTH_BUCKETS = ((1, 10), (11, 20), (21, 30), (31, 40), (41, None))
# The report's baseline rows (trees.BASELINES name → label), and the two that punctuation marks cut first (label →
# the slope of the distances whose symmetric split gives the baseline: rising is left-branching).
BASELINE_ROWS = (("right", "right-branching"), ("left", "left-branching"), ("balanced", "balanced"),
                 ("random", "random"))
CUT_BASELINE_ROWS = (("right-branching, cut at punctuation", -1.0), ("left-branching, cut at punctuation", 1.0))
BASELINE_LABELS = tuple(label for _, label in BASELINE_ROWS) + tuple(label for label, _ in CUT_BASELINE_ROWS)


def _f1(overlap: int, n_pred: int, n_gold: int) -> float:
    """The paper's F1 with its epsilons and its rule for sentences without gold spans."""
    precision = overlap / (n_pred + 1e-8)
    recall = overlap / (n_gold + 1e-8)
    if n_gold == 0:
        recall = 1.0
        if n_pred == 0:
            precision = 1.0
    return 2 * precision * recall / (precision + recall + 1e-8)


def sentence_f1(pred_spans: set[Span], gold_spans: set[Span]) -> float:
    """F1 in [0, 1] of one sentence's predicted spans against the gold spans."""
    return _f1(len(pred_spans & gold_spans), len(pred_spans), len(gold_spans))


def pairwise_agreement(trees: list[list[set[Span]]]) -> dict[tuple[int, int], float]:
    """For every pair (a, b) of models, both ways round, from each model's spans of the same sentences: the
    mean over sentences of the symmetric sentence F1 (the mean of either way), in [0, 1]. No gold is read."""
    pair = {}
    for a in range(len(trees)):
        for b in range(a + 1, len(trees)):
            both = [(sentence_f1(x, y) + sentence_f1(y, x)) / 2 for x, y in zip(trees[a], trees[b])]
            pair[a, b] = pair[b, a] = sum(both) / max(len(both), 1)
    return pair


def right_branching_spans(n: int) -> set:
    return {(start, n) for start in range(1, n - 1)}  # every suffix of two words or more, the whole aside


def left_branching_spans(n: int) -> set:
    return {(0, end) for end in range(2, n)}  # every prefix of two words or more, the whole aside


def branching_agreements(trees: list[set], lengths: list[int]) -> tuple[float, float]:
    """One voter's trees' mean agreement (symmetric sentence F1, in [0, 1]) with right-branching trees of the same
    sentences, and with left-branching ones."""
    right = [right_branching_spans(n) for n in lengths]
    left = [left_branching_spans(n) for n in lengths]
    return pairwise_agreement([trees, right])[0, 1], pairwise_agreement([trees, left])[0, 1]


def nearest_branching(trees: list[set], lengths: list[int]) -> tuple[str, float]:
    """("right" or "left", %): the branching tree the trees agree with most (branching_agreements), and how much."""
    right, left = branching_agreements(trees, lengths)
    return ("right", 100 * right) if right >= left else ("left", 100 * left)


def mutual_agreement(trees: list[list[set[Span]]]) -> list[float]:
    """Each model's mean pairwise_agreement with the others: a seed well below the others is an odd run
    (docs/experiments/english.md)."""
    pair = pairwise_agreement(trees)
    return [sum(pair[a, b] for b in range(len(trees)) if b != a) / max(len(trees) - 1, 1)
            for a in range(len(trees))]


def corpus_f1(pairs: Iterable[tuple[set[Span], set[Span]]]) -> float:
    """Micro F1 in [0, 1] over (pred_spans, gold_spans) pairs: counts summed, then F1."""
    overlap = n_pred = n_gold = 0
    for pred_spans, gold_spans in pairs:
        overlap += len(pred_spans & gold_spans)
        n_pred += len(pred_spans)
        n_gold += len(gold_spans)
    return _f1(overlap, n_pred, n_gold)


def _binary_span_count(n_words: int) -> int:
    # A binary tree over n words has n - 1 internal nodes; minus the root: n - 2.
    return max(n_words - 2, 0)


def best_binary_f1(gold_spans: set[Span], n_words: int) -> float:
    """Best sentence F1 any binary tree can reach: all gold spans found, the rest wasted.

    The gold tree is only n-ary, so precision is |gold| / (n - 2).
    """
    return _f1(len(gold_spans), _binary_span_count(n_words), len(gold_spans))


def _percent(value: float) -> float:
    return round(100 * value, 2)


def _bucket_name(low: int, high: int | None) -> str:
    return f"{low}+" if high is None else f"{low}-{high}"


def evaluate(gold: Sequence[GoldSentence], trees: Sequence[Tree]) -> dict:
    """Scores of trees against gold, as a JSON-serialisable dict; F1 values in percent.

    sentence_f1 is the mean per-sentence F1 (the figure the papers report), corpus_f1 the
    micro F1 over all spans.
    """
    if len(gold) != len(trees):
        raise ValueError(f"{len(trees)} trees for {len(gold)} gold sentences")
    pred_spans: list[set[Span]] = []
    for sentence, tree in zip(gold, trees):
        n_leaves = len(tree_leaves(tree))
        if n_leaves != len(sentence.words):
            raise ValueError(f"{sentence.source}: the tree has {n_leaves} words, "
                             f"the gold sentence {len(sentence.words)}")
        pred_spans.append(tree_spans(tree))
    scores = [sentence_f1(pred, sentence.spans) for pred, sentence in zip(pred_spans, gold)]
    lengths = [len(sentence.words) for sentence in gold]

    def mean_percent(values: list[float]) -> float:
        return _percent(mean(values)) if values else 0.0

    by_length = {}
    for low, high in LENGTH_BUCKETS:
        in_bucket = [score for score, n in zip(scores, lengths)
                     if n >= low and (high is None or n <= high)]
        if in_bucket:
            by_length[_bucket_name(low, high)] = {
                "sentences": len(in_bucket), "sentence_f1": mean_percent(in_bucket)}

    label_recall = {}
    for label in RECALL_LABELS:
        found = total = 0
        for pred, sentence in zip(pred_spans, gold):
            for span, span_labels in sentence.labels.items():
                if label in span_labels:
                    total += 1
                    found += span in pred
        if total:
            label_recall[label] = {"recall": _percent(found / total), "found": found,
                                   "gold": total}

    short = [score for score, n in zip(scores, lengths) if n <= 10]
    total_gold = sum(len(sentence.spans) for sentence in gold)
    return {
        "sentences": len(gold),
        "sentence_f1": mean_percent(scores),
        "corpus_f1": _percent(corpus_f1(
            (pred, sentence.spans) for pred, sentence in zip(pred_spans, gold))),
        "sentence_f1_len_le_10": mean_percent(short),
        "sentences_len_le_10": len(short),
        "f1_by_length": by_length,
        "label_recall": label_recall,
        "upper_bound": {
            "sentence_f1": mean_percent(
                [best_binary_f1(sentence.spans, n) for sentence, n in zip(gold, lengths)]),
            "corpus_f1": _percent(_f1(total_gold, sum(map(_binary_span_count, lengths)),
                                      total_gold)),
        },
    }


def below_baseline(systems: dict) -> dict | None:
    """Where the first of a report's systems (the model's default parser, or the trees of --pred) has a lower
    sentence F1 than the best of the trivial baselines among them (BASELINE_LABELS): that system, the
    baseline and both figures; None where it is not below any (or no baseline was scored)."""
    name, first = next(iter(systems.items()))
    baselines = [(label, row["sentence_f1"]) for label, row in systems.items() if label in BASELINE_LABELS]
    if not baselines:
        return None
    best, figure = max(baselines, key=lambda item: item[1])  # a tie: the row printed first
    if first["sentence_f1"] >= figure:
        return None
    return {"system": name, "sentence_f1": first["sentence_f1"], "baseline": best, "baseline_sentence_f1": figure}
