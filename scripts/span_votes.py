"""Dev-tree F1 of the consensus of several models' trees, with no span parser in between.

    python scripts/span_votes.py --gold ../shared/data/ptb-dev/ptb-dev.trees models/en-ptb.onlstm runs/en-s2.onlstm runs/en-s3.onlstm

Each model parses the gold sentences as the self-training teachers do (self_training.teacher_spans); each span
scores the share of the trees that have it, less a half, and CKY picks the tree with the largest sum (a span
in most trees counts for it, one in few against it). This is what a span parser trained on the same votes
would give if it learnt them perfectly on these very sentences: the row to compare self-training with.

`--layers 2,3` makes each layer of each model a voter of its own (`train --teacher-layers`); `--right-branching W`
adds the right-branching voter, and `--right-branching auto --text VALID` weighs it as `train` does, from each
model's trees of the validation text by its parse layer (the first of `--layers` where that lacks it;
self_training.auto_weight).
"""
import argparse
import sys

from onlstm_cli.text.treebanks import read_gold
from onlstm_cli.evaluation.metrics import evaluate
from onlstm_cli.modelfile import load_model
from onlstm_cli.induction.teachers import layer_trees, weighing_layer
from onlstm_cli.training.student.votes import auto_weight, consensus_heights, vote
from onlstm_cli.text.corpus import read_corpus
from onlstm_cli.trees import build_tree


def voters(teachers: list, sentences: list[list[str]], layers: tuple[int, ...] | None, model_tokens: bool) -> list:
    """One list of trees a voter: each model's `layers`, or its parse layer."""
    return [trees for t in teachers
            for trees in layer_trees(t, sentences, layers or (t.parse_layer,), model_tokens=model_tokens)]


def consensus_trees(models: list, gold, layers: tuple[int, ...] | None = None, right_branching: str = "0",
                    text: str | None = None) -> tuple[list, float]:
    """The consensus trees of the gold sentences, and the right-branching voter's weight they were voted with."""
    teachers = [load_model(path) for path in models]
    if right_branching == "auto":
        if text is None:
            sys.exit("--right-branching auto needs --text: the validation text its weight is read from")
        valid = read_corpus(text, teachers[0].tokenizer)
        weighing = [layer_trees(t, valid, (weighing_layer(t, layers or (t.parse_layer,)),))[0] for t in teachers]
        weight = auto_weight(weighing, [len(s) for s in valid]).weight
    else:
        weight = float(right_branching)
    words = [[teachers[0].tokenizer.normalize(w) for w in s.words] for s in gold]
    lengths = [len(s.words) for s in gold]
    votes = vote(voters(teachers, words, layers, False), lengths, weight)  # treebank words, not the tokenizer's cut
    heights = consensus_heights(votes, lengths)
    return [build_tree(height, sentence.words, "symmetric") for height, sentence in zip(heights, gold)], weight


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="+")
    ap.add_argument("--gold", required=True)
    ap.add_argument("--layers", help="comma-separated 1-based layers, each a voter (default: each model's parse layer)")
    ap.add_argument("--right-branching", default="0", help="the right-branching voter's weight, or auto")
    ap.add_argument("--text", help="validation text for --right-branching auto")
    args = ap.parse_args()
    gold = read_gold(args.gold)
    layers = tuple(int(k) for k in args.layers.split(",")) if args.layers else None
    trees, weight = consensus_trees(args.models, gold, layers, args.right_branching, args.text)
    scores = evaluate(gold, trees)
    print(f"right-branching voter weight {weight:.2f}")
    print(f"consensus of {len(args.models)} models: sentence F1 {scores['sentence_f1']:.2f}, corpus F1 "
          f"{scores['corpus_f1']:.2f}, F1 ≤10 {scores['sentence_f1_len_le_10']:.2f}")


if __name__ == "__main__":
    main()
