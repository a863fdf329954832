"""Dev-tree F1 of trained models alone and combined: the levers of the model cards, in one table.

    python scripts/levers.py --gold ../shared/data/ptb-dev/ptb-dev.trees runs/en.onlstm runs/en-r.onlstm ...
        [--layers 2 3] [--splits paper symmetric] [--combine mean zscore rank] [--weights 0.5] [--json out.json]

Each model file (a single model, left-to-right or trained with --reverse) is run once over the gold
sentences, every layer at once; then every layer and split rule is scored for each model alone, and for
every ensemble of two or more of the models (all of them and, with --subsets, every subset) under each
combination rule (see onlstm_cli.induction.distances.sentence_distances); --weights W also scores each ensemble
with its last model weighted W against 1 for the others (e.g. a weaker right-to-left model). Figures: sentence F1 (the papers' figure),
corpus F1 and sentence F1 on sentences of at most 10 words, in percent. These choices may use dev trees;
the model cards say which were made on them. With several models, a last table gives the mean, standard
deviation and range over the models alone (seeds of one recipe: what a retrain gives).
"""
import argparse
import itertools
import json
import statistics
import sys
from pathlib import Path

from onlstm_cli.text.treebanks import read_gold
from onlstm_cli.evaluation.metrics import evaluate
from onlstm_cli.modelfile import load_model
from onlstm_cli.induction.distances import combine_distances, sentence_distances
from onlstm_cli.trees import build_tree

def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="+")
    ap.add_argument("--gold", required=True)
    ap.add_argument("--layers", type=int, nargs="*", help="default: every layer")
    ap.add_argument("--splits", nargs="*", default=["paper", "symmetric"])
    ap.add_argument("--combine", nargs="*", default=["mean", "zscore", "rank"])
    ap.add_argument("--weights", type=float, nargs="*", default=[], help="weights of the last model to try")
    ap.add_argument("--subsets", action="store_true", help="score every subset of two or more models, not only all")
    ap.add_argument("--json", help="also write the rows here")
    args = ap.parse_args()

    gold = read_gold(args.gold)
    distances = {}  # model → per sentence → per layer → per word
    for path in args.models:
        loaded = load_model(path)
        loaded.members = []
        words = [[loaded.tokenizer.normalize(w) for w in s.words] for s in gold]
        distances[path] = sentence_distances(loaded, words, all_layers=True)
        n_layers = loaded.config.n_layers
        direction = "right-to-left" if loaded.config.reverse else "left-to-right"
        print(f"{path}: {direction}, valid ppl {loaded.meta.get('valid_ppl')}, epochs {loaded.meta.get('epochs')}",
              file=sys.stderr)
    layers = args.layers or list(range(1, n_layers + 1))

    groups = [(path,) for path in args.models]
    if len(args.models) > 1:
        sizes = range(2, len(args.models) + 1) if args.subsets else [len(args.models)]
        groups += [g for k in sizes for g in itertools.combinations(args.models, k)]
    rows = []
    for group in groups:
        last_weights = [1.0] if len(group) == 1 else [1.0, *args.weights]
        for combine, last in itertools.product(["-"] if len(group) == 1 else args.combine, last_weights):
            weights = [1.0] * (len(group) - 1) + [last]
            for layer in layers:
                combined = [combine_distances([distances[m][i][layer - 1] for m in group],
                                              combine if len(group) > 1 else "mean", weights)
                            for i in range(len(gold))]
                for split in args.splits:
                    trees = [build_tree(d, s.words, split) for d, s in zip(combined, gold)]
                    scores = evaluate(gold, trees)
                    rows.append({"models": [Path(m).name for m in group], "combine": combine, "weights": weights,
                                 "layer": layer, "split": split, "sentence_f1": scores["sentence_f1"],
                                 "corpus_f1": scores["corpus_f1"], "f1_le_10": scores["sentence_f1_len_le_10"]})
    print("| models | combine | weights | layer | split | sentence F1 | corpus F1 | F1 ≤10 |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        weights = "-" if len(r["weights"]) == 1 else ":".join(f"{w:g}" for w in r["weights"])
        print(f"| {' + '.join(r['models'])} | {r['combine']} | {weights} | {r['layer']} | {r['split']} "
              f"| {r['sentence_f1']:.2f} | {r['corpus_f1']:.2f} | {r['f1_le_10']:.2f} |")
    if len(args.models) > 1:
        print_spread(rows, len(args.models))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1), encoding="utf-8")


def print_spread(rows: list[dict], n_models: int) -> None:
    """Mean, sample standard deviation and range over the models alone (e.g. seeds of one recipe): what a
    reader can expect from a retrain."""
    print(f"\n| over the {n_models} models alone | layer | split | sentence F1 | F1 ≤10 |")
    print("|---|---|---|---|---|")
    alone = [r for r in rows if len(r["models"]) == 1]
    for layer, split in dict.fromkeys((r["layer"], r["split"]) for r in alone):
        cells = []
        for key in ("sentence_f1", "f1_le_10"):
            values = [r[key] for r in alone if (r["layer"], r["split"]) == (layer, split)]
            cells.append(f"{statistics.mean(values):.2f} ± {statistics.stdev(values):.2f} "
                         f"({min(values):.2f}–{max(values):.2f})")
        print(f"| mean ± sd (range) | {layer} | {split} | {cells[0]} | {cells[1]} |")


if __name__ == "__main__":
    main()
