"""Average the weights of several model files of one run (e.g. its last epochs) into one model file.

    python scripts/average_checkpoints.py runs/snap/en-s2-e1{4,5,6,7,8}.0.onlstm \
        --valid ../shared/data/ptb-lm/ptb.valid.txt --out runs/en-s2-avg.onlstm

The average of the iterates is what NT-ASGD ships (the paper's optimiser averages every step's weights
once validation stalls); averaging the weights at the ends of the last epochs is the same idea applied
after the run, at no cost to parsing. The result's validation perplexity is measured on --valid, read as
the run's validation text was, and stored in the file, so that the shipping rule (lowest validation
perplexity, scripts/by_valid_ppl.py) can compare it with the run's own best checkpoint. No gold tree is read.
"""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from onlstm_cli.modelfile import atomic_save, load_model, model_archive  # noqa: E402
from onlstm_cli.lm.perplexity import text_perplexity  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="+", help="model files of one run, same sizes and vocabulary")
    ap.add_argument("--valid", required=True, help="the run's validation text")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    loaded = [load_model(path) for path in args.models]
    last = max(loaded, key=lambda m: m.meta.get("epochs") or 0)
    for m in loaded:
        if m.config != last.config or m.vocab.itos != last.vocab.itos or m.tokenizer != last.tokenizer:
            raise SystemExit(f"{m.path}: not the same sizes, vocabulary and tokenizer as {last.path}")
    states = [m.model.state_dict() for m in loaded]
    average = {name: (torch.stack([s[name].float() for s in states]).mean(0) if tensor.is_floating_point()
                      else tensor) for name, tensor in states[0].items()}
    last.model.load_state_dict(average)
    ppl = text_perplexity(last, args.valid)
    meta = dict(last.meta, valid_ppl=ppl,
                averaged_from=[{"path": m.path, "epochs": m.meta.get("epochs"), "valid_ppl": m.meta.get("valid_ppl")}
                               for m in loaded])
    atomic_save(model_archive(last.model, last.vocab, last.tokenizer, last.lang, last.parse_layer, meta,
                              split=last.split), args.out)
    theirs = ", ".join(f"{m.meta.get('valid_ppl'):.2f}" for m in loaded)
    print(f"{args.out}: the average of {len(loaded)} models, valid ppl {ppl:.2f} (theirs: {theirs})")


if __name__ == "__main__":
    main()
