"""Copy a trained model into models/ as float16, optionally with another parse layer.

    python scripts/ship_model.py runs/en.onlstm models/en-ptb.onlstm [--parse-layer 3] [--split symmetric]

The parse layer and split rule may be chosen on development trees; the card says so.
"""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from onlstm_cli.modelfile import load_model, save_model  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("source")
ap.add_argument("target")
ap.add_argument("--parse-layer", type=int)
ap.add_argument("--split", choices=["paper", "symmetric"], help="the model's default split rule")
ap.add_argument("--note", help="added to the model's metadata as 'parse_layer_choice'")
args = ap.parse_args()
m = load_model(args.source)
layer = args.parse_layer or m.parse_layer
meta = dict(m.meta)
if args.note:
    meta["parse_layer_choice"] = args.note
save_model(args.target, m.model, m.vocab, m.tokenizer, m.lang, layer, meta, split=args.split or m.split)
print(f"{args.target}: {Path(args.target).stat().st_size / 1e6:.1f} MB, parse layer {layer}, split {args.split or m.split}")
