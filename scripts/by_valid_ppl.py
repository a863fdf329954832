"""The shipping rule's order: model files of one recipe, lowest validation perplexity first, one a line.

    python scripts/by_valid_ppl.py runs/en.onlstm runs/en-s2.onlstm runs/en-s3.onlstm [--show]

A single shipped model is the first; an ensemble of k takes the first k (models/README.md). No gold tree is
read: the order comes from the perplexity each file was saved with. --show adds the perplexity and epochs.
"""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from onlstm_cli.modelfile import load_model  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="+")
    ap.add_argument("--show", action="store_true", help="print the perplexity and epochs beside each path")
    args = ap.parse_args()
    runs = []
    for path in args.models:
        meta = load_model(path).meta
        if meta.get("valid_ppl") is None:
            raise SystemExit(f"{path} was saved without a validation perplexity (trained without --valid)")
        runs.append((meta["valid_ppl"], path, meta.get("epochs")))
    for ppl, path, epochs in sorted(runs):
        print(f"{path}\t{ppl:.2f}\t{epochs} epochs" if args.show else path)


if __name__ == "__main__":
    main()
