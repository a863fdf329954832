"""Copy a trained model into models/ as float16, optionally with another parse layer or as an ensemble.

    python scripts/ship_model.py runs/en.onlstm models/en-ptb.onlstm [--parse-layer 3] [--split symmetric] \
        [--member runs/en-s2.onlstm ...] [--combine zscore] [--weights 1 0.5]

--member adds further models of the same shape (other seeds, or right-to-left models trained with
--reverse); parsing then combines all models' distances per word, by --combine (mean, zscore or rank;
see onlstm_cli.induction.parser.sentence_distances), as an average weighted by --weights (one per model, the
first included; equal by default).
The parse layer, split rule and ensembling may be chosen on development trees; the card says so.
"""
import argparse
from pathlib import Path

from onlstm_cli.modelfile import atomic_save, load_model, model_archive, with_members

ap = argparse.ArgumentParser()
ap.add_argument("source")
ap.add_argument("target")
ap.add_argument("--parse-layer", type=int)
ap.add_argument("--split", choices=["paper", "symmetric"], help="the model's default split rule")
ap.add_argument("--member", action="append", default=[], help="another trained model to ensemble with")
ap.add_argument("--combine", choices=["mean", "zscore", "rank"], default="mean",
                help="how an ensemble's distances are combined")
ap.add_argument("--weights", type=float, nargs="+", help="one weight per model, the source first")
ap.add_argument("--note", help="added to the model's metadata as 'parse_layer_choice'")
args = ap.parse_args()


def archive_of(path: str, layer: int | None = None) -> dict:
    m = load_model(path)
    meta = dict(m.meta)
    if args.note and layer is not None:
        meta["parse_layer_choice"] = args.note
    return model_archive(m.model, m.vocab, m.tokenizer, m.lang, layer or m.parse_layer, meta,
                         split=args.split or m.split)


first = load_model(args.source)
layer = args.parse_layer or first.parse_layer
archive = archive_of(args.source, layer)
if args.member:
    archive = with_members(archive, [archive_of(path) for path in args.member], args.combine, args.weights)
atomic_save(archive, args.target)
check = load_model(args.target)  # the shipped file must load, members included
print(f"{args.target}: {Path(args.target).stat().st_size / 1e6:.1f} MB, parse layer {layer}, "
      f"split {check.split}, {1 + len(check.members)} model(s)"
      + (f" combined by {check.combine}" if check.members else "")
      + (f", weights {check.weights}" if check.weights else ""))
