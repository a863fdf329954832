"""Dev-tree F1 of the consensus of several models' trees, with no span parser in between.

    python scripts/span_votes.py --gold ../shared/data/ptb-dev/ptb-dev.trees models/en-ptb.onlstm runs/en-s2.onlstm runs/en-s3.onlstm

Each model parses the gold sentences as the self-training teachers do (self_training.teacher_spans); each span
scores the share of the trees that have it, less a half, and CKY picks the tree with the largest sum (a span
in most trees counts for it, one in few against it). This is what a span parser trained on the same votes
would give if it learnt them perfectly on these very sentences: the row to compare self-training with.
"""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from onlstm_cli.text.formats import read_gold  # noqa: E402
from onlstm_cli.evaluation.metrics import evaluate  # noqa: E402
from onlstm_cli.modelfile import load_model  # noqa: E402
from onlstm_cli.induction.self_training import consensus_heights, teacher_spans  # noqa: E402
from onlstm_cli.induction.trees import build_tree  # noqa: E402


def consensus_trees(models: list, gold) -> list:
    teachers = [load_model(path) for path in models]
    words = [[teachers[0].tokenizer.normalize(w) for w in s.words] for s in gold]
    votes = teacher_spans(teachers, words, model_tokens=False)  # treebank words, not the tokenizer's cut
    heights = consensus_heights(votes, [len(s.words) for s in gold])
    return [build_tree(height, sentence.words, "symmetric") for height, sentence in zip(heights, gold)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="+")
    ap.add_argument("--gold", required=True)
    args = ap.parse_args()
    gold = read_gold(args.gold)
    scores = evaluate(gold, consensus_trees(args.models, gold))
    print(f"consensus of {len(args.models)} models: sentence F1 {scores['sentence_f1']:.2f}, corpus F1 "
          f"{scores['corpus_f1']:.2f}, F1 ≤10 {scores['sentence_f1_len_le_10']:.2f}")


if __name__ == "__main__":
    main()
