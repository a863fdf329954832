"""How much the trees of several seeds agree, on plain text: a gold-free way to tell an odd seed.

    python scripts/seed_agreement.py runs/en-s1111.onlstm runs/en-s2.onlstm runs/en-s3.onlstm \
        --text ../shared/data/ptb-lm/ptb.valid.txt [--lines 2000]

Each model parses the first --lines lines of --text (lines of at least 3 tokens) with its own layer and split
rule; the table gives, for every pair, the mean sentence F1 of one's trees against the other's (symmetric),
and for each model its mean agreement with the others. No gold tree is read. models/README.md has what it
told about the bundled models' seeds (an odd English seed, yes; the best seed in both languages, no).
"""
import argparse
import itertools
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from onlstm_cli.evaluation.metrics import mutual_agreement, pairwise_agreement  # noqa: E402
from onlstm_cli.induction.parser import ModelCache, parse_lines  # noqa: E402
from onlstm_cli.induction.trees import tree_spans  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="+")
    ap.add_argument("--text", required=True, help="plain text, one sentence a line (e.g. the validation text)")
    ap.add_argument("--lines", type=int, default=2000)
    ap.add_argument("--pretokenized", action="store_true", help="split lines on spaces only")
    args = ap.parse_args()
    if len(args.models) < 2:
        raise SystemExit("give two models or more")
    lines = [line for line in Path(args.text).read_text(encoding="utf-8").splitlines()
             if len(line.split()) >= 3][:args.lines]
    cache = ModelCache()
    spans = {path: [tree_spans(p.tree) if p.tree is not None else set()
                    for p in parse_lines(lines, model=path, cache=cache, pretokenized=args.pretokenized)]
             for path in args.models}
    trees = [spans[path] for path in args.models]
    pair, mean = pairwise_agreement(trees), mutual_agreement(trees)
    print(f"| model | model | agreement (mean sentence F1, {len(lines)} lines) |\n|---|---|---|")
    for a, b in itertools.combinations(range(len(args.models)), 2):
        print(f"| {args.models[a]} | {args.models[b]} | {100 * pair[a, b]:.2f} |")
    print("\n| model | mean agreement with the others |\n|---|---|")
    for path, value in zip(args.models, mean):
        print(f"| {path} | {100 * value:.2f} |")


if __name__ == "__main__":
    main()
