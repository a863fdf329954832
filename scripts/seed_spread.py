"""Dev-tree F1 of model files as `onlstm parse` uses them by default, and the mean ± spread over them.

    python scripts/seed_spread.py --gold ../shared/data/ptb-dev/ptb-dev.trees runs/st/en-st-s1111.onlstm ...

Each file parses with its own defaults (a self-trained file: its span parser; otherwise its parse layer,
split rule and ensemble), exactly as `onlstm evaluate --gold G --model FILE` scores it. One row per file
(with its validation figure: perplexity, or a span parser's loss on its teacher's trees), then the mean,
standard deviation and range: what a retrain of one recipe gives.
"""
import argparse
import statistics
from pathlib import Path

from onlstm_cli.text.treebanks import read_gold
from onlstm_cli.evaluation.model_scores import score_model
from onlstm_cli.modelfile import load_model

FIGURES = (("sentence F1", "sentence_f1"), ("corpus F1", "corpus_f1"), ("F1 ≤10", "sentence_f1_len_le_10"))


def default_scores(path: str, gold) -> dict:
    _, systems, _ = score_model(gold, path)  # the first row is the file's default parser
    return next(iter(systems.values())) | {"validation": validation_figure(load_model(path))}


def validation_figure(loaded) -> str:
    if loaded.span_parser is not None:
        return f"loss {loaded.span_parser.meta.get('valid_loss')}"
    ppl = loaded.meta.get("valid_ppl")
    return "-" if ppl is None else f"ppl {ppl:.2f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="+")
    ap.add_argument("--gold", required=True)
    args = ap.parse_args()
    gold = read_gold(args.gold)
    rows = {path: default_scores(path, gold) for path in args.models}
    print("| model | validation | " + " | ".join(name for name, _ in FIGURES) + " |")
    print("|---|---|" + "---|" * len(FIGURES))
    for path, scores in rows.items():
        print(f"| {Path(path).name} | {scores['validation']} | "
              + " | ".join(f"{scores[key]:.2f}" for _, key in FIGURES) + " |")
    if len(rows) > 1:
        for name, key in FIGURES:
            values = [scores[key] for scores in rows.values()]
            print(f"{name}: mean {statistics.mean(values):.2f} ± {statistics.stdev(values):.2f} (sd), "
                  f"range {min(values):.2f}–{max(values):.2f} over {len(values)} models")


if __name__ == "__main__":
    main()
