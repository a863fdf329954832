from pathlib import Path

import pytest

from onlstm_cli.text.treebanks import read_gold
from onlstm_cli.evaluation.metrics import (
    best_binary_f1,
    corpus_f1,
    evaluate,
    sentence_f1,
)
from onlstm_cli.trees import baseline_trees, tree_spans

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SHARED = Path(__file__).resolve().parents[3] / "shared/data"
PTB_DEV = SHARED / "ptb-dev/ptb-dev.trees"
UD_ZH_DEV = SHARED / "ud-zh-gsdsimp/zh_gsdsimp-ud-dev.conllu"

# "The cat sat on the mat": NP(0,2) VP(2,6) PP(3,6) NP(4,6)
CAT_GOLD = {(0, 2), (2, 6), (3, 6), (4, 6)}
RIGHT_6 = {(1, 6), (2, 6), (3, 6), (4, 6)}
LEFT_6 = {(0, 2), (0, 3), (0, 4), (0, 5)}
BALANCED_6 = {(0, 3), (0, 2), (3, 6), (3, 5)}


def test_sentence_f1_by_hand():
    assert sentence_f1(RIGHT_6, CAT_GOLD) == pytest.approx(0.75)
    assert sentence_f1(LEFT_6, CAT_GOLD) == pytest.approx(0.25)
    assert sentence_f1(BALANCED_6, CAT_GOLD) == pytest.approx(0.5)
    assert sentence_f1(set(), CAT_GOLD) == 0.0
    # no gold spans: recall counts as 1, precision as 1 only if nothing was predicted
    assert sentence_f1(set(), set()) == pytest.approx(1.0)
    assert sentence_f1({(0, 2)}, set()) == 0.0


def test_corpus_f1_sums_counts_first():
    # sentence 2 (5 words): gold (1,5) (2,4); right-branching (1,5) (2,5) (3,5)
    pairs = [(RIGHT_6, CAT_GOLD), ({(1, 5), (2, 5), (3, 5)}, {(1, 5), (2, 4)})]
    assert sentence_f1(*pairs[1]) == pytest.approx(0.4)
    # overlap 4, predicted 7, gold 6: P = 4/7, R = 2/3
    assert corpus_f1(pairs) == pytest.approx(16 / 26)


def test_best_binary_f1():
    assert best_binary_f1(CAT_GOLD, 6) == pytest.approx(1.0)
    assert best_binary_f1({(1, 5), (2, 4)}, 5) == pytest.approx(0.8)  # P 2/3, R 1
    assert best_binary_f1(set(), 2) == pytest.approx(1.0)
    assert best_binary_f1(set(), 1) == pytest.approx(1.0)
    assert best_binary_f1(set(), 3) == 0.0  # flat gold: any binary tree has a wrong span


def test_evaluate_on_hand_made_gold():
    gold = read_gold(FIXTURES / "gold_small.trees")[:2]
    trees = baselines(gold, "right")
    assert [tree_spans(t) for t in trees] == [RIGHT_6, {(1, 5), (2, 5), (3, 5)}]
    report = evaluate(gold, trees)
    assert report["sentences"] == 2
    assert report["sentence_f1"] == 57.5  # mean of 75 and 40
    assert report["corpus_f1"] == 61.54
    assert report["sentence_f1_len_le_10"] == 57.5 and report["sentences_len_le_10"] == 2
    assert report["f1_by_length"] == {"1-10": {"sentences": 2, "sentence_f1": 57.5}}
    # NP (0,2) (4,6) (2,4): only (4,6) found; VP (2,6) (1,5) both; PP (3,6)
    assert report["label_recall"] == {
        "NP": {"recall": 33.33, "found": 1, "gold": 3},
        "VP": {"recall": 100.0, "found": 2, "gold": 2},
        "PP": {"recall": 100.0, "found": 1, "gold": 1},
    }
    # best trees: F1 1 and 0.8; all 6 gold spans out of 4 + 3 binary spans
    assert report["upper_bound"] == {"sentence_f1": 90.0, "corpus_f1": 92.31}


def test_evaluate_rejects_mismatched_trees():
    gold = read_gold(FIXTURES / "gold_small.trees")
    with pytest.raises(ValueError, match="2 trees for 3 gold sentences"):
        evaluate(gold, baselines(gold, "right")[:2])
    with pytest.raises(ValueError, match="gold_small.trees:1: the tree has 2 words"):
        evaluate(gold, [["a", "b"]] + baselines(gold, "right")[1:])


def baselines(gold, name):
    return baseline_trees([sentence.words for sentence in gold], name)


@pytest.mark.skipif(not PTB_DEV.exists(), reason="shared PTB dev trees not present")
def test_pinned_baselines_on_ptb_dev():
    gold = read_gold(PTB_DEV)
    assert len(gold) == 1921
    figures = {name: evaluate(gold, baselines(gold, name))["sentence_f1"]
               for name in ("right", "left", "balanced")}
    assert figures == {"right": 39.94, "left": 8.66, "balanced": 21.34}


@pytest.mark.skipif(not UD_ZH_DEV.exists(), reason="shared UD Chinese dev file not present")
def test_balanced_baseline_on_ud_chinese_dev():
    gold = read_gold(UD_ZH_DEV)
    assert len(gold) == 500
    assert evaluate(gold, baselines(gold, "balanced"))["sentence_f1"] == 17.05


def test_mutual_agreement_is_each_models_mean_symmetric_f1_with_the_others():
    from onlstm_cli.evaluation.metrics import mutual_agreement, pairwise_agreement, sentence_f1
    a, b, c = {(0, 2), (0, 3)}, {(0, 2), (1, 3)}, {(1, 3), (2, 4)}
    first, copy, odd = [a, b], [a, b], [b, c]
    pair = pairwise_agreement([first, copy, odd])
    assert pair[0, 1] == pair[1, 0] == pytest.approx(1.0)
    expected = ((sentence_f1(a, b) + sentence_f1(b, a)) / 2 + (sentence_f1(b, c) + sentence_f1(c, b)) / 2) / 2
    assert pair[0, 2] == pair[2, 0] == pytest.approx(expected)
    agreement = mutual_agreement([first, copy, odd])
    assert agreement[0] == agreement[1] == pytest.approx((1 + expected) / 2)
    assert agreement[2] == pytest.approx(expected) and agreement[2] < agreement[0]  # the odd one out shows
