"""How much the trees of several seeds agree, on plain text: a gold-free way to tell an odd seed.

    python scripts/seed_agreement.py runs/en-s1111.onlstm runs/en-s2.onlstm runs/en-s3.onlstm \
        --text ../shared/data/ptb-lm/ptb.valid.txt [--lines 2000] [--span-parsers]

Each model parses the first --lines sentences of --text (of at least 3 words) as a teacher of `train --teacher`
and `train --seeds` does (self_training.model_trees: the first model's tokenizer, punctuation left out, each
model's language model with its own layer and split rule; `--span-parsers`: a self-trained file's span
parser, as `--second-round` teaches). The tables give, for every pair, the mean sentence F1 of one's trees
against the other's (symmetric), each model's mean agreement with the others, and each one's agreement with
right- and left-branching trees of the same sentences, with the right-branching voter's weight that
`--right-branching auto` gives these models as teachers (one model: only that last table). No gold tree is
read. docs/experiments/english.md has what it told about the bundled models' seeds (an odd English seed, yes; the best
seed in both languages, no).
"""
import argparse
import itertools

from onlstm_cli.evaluation.metrics import mutual_agreement, pairwise_agreement
from onlstm_cli.induction.models import ModelCache, resolve_model
from onlstm_cli.induction.teachers import model_trees
from onlstm_cli.training.student.votes import auto_weight, left_branching_spans, right_branching_spans
from onlstm_cli.text.corpus import read_corpus


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="+")
    ap.add_argument("--text", required=True, help="plain text, one sentence a line (e.g. the validation text)")
    ap.add_argument("--lines", type=int, default=2000)
    ap.add_argument("--span-parsers", action="store_true",
                    help="self-trained files teach with their span parsers' trees (as --second-round)")
    args = ap.parse_args()
    cache = ModelCache("cpu")
    models = [cache.get(resolve_model(name)) for name in args.models]
    tokenizer = models[0].tokenizer
    if any(m.tokenizer.to_dict() != tokenizer.to_dict() for m in models):
        raise SystemExit("the models tokenize otherwise: they must read the same words to be compared")
    sentences = [s for s in read_corpus(args.text, tokenizer) if len(s) >= 3][:args.lines]
    lengths = [len(s) for s in sentences]
    trees = [model_trees(m, sentences, span_parsers=args.span_parsers) for m in models]
    if len(trees) > 1:
        pair, mean = pairwise_agreement(trees), mutual_agreement(trees)
        print(f"| model | model | agreement (mean sentence F1, {len(sentences)} sentences) |\n|---|---|---|")
        for a, b in itertools.combinations(range(len(args.models)), 2):
            print(f"| {args.models[a]} | {args.models[b]} | {100 * pair[a, b]:.2f} |")
        print("\n| model | mean agreement with the others |\n|---|---|")
        for path, value in zip(args.models, mean):
            print(f"| {path} | {100 * value:.2f} |")
        print()
    right = [right_branching_spans(n) for n in lengths]
    left = [left_branching_spans(n) for n in lengths]
    print(f"| model | agreement with right-branching trees | with left-branching trees ({len(sentences)} "
          "sentences) |\n|---|---|---|")
    for path, spans in zip(args.models, trees):
        print(f"| {path} | {100 * pairwise_agreement([spans, right])[0, 1]:.2f} | "
              f"{100 * pairwise_agreement([spans, left])[0, 1]:.2f} |")
    if len(trees) > 1:
        print(f"\nthe right-branching voter's weight with these models as teachers: {auto_weight(trees, lengths)}")


if __name__ == "__main__":
    main()
