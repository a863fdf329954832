"""When NT-ASGD's trigger would have fired in runs trained with plain SGD, from their validation history.

    python scripts/nt_asgd_trigger.py runs/en-s2.onlstm models/en-ptb.onlstm [--nonmono 5]

(A model file holds the validations up to its own, the best one; later epochs of its run are in the log.)

`onlstm train --optimizer ntasgd` runs plain SGD until validation perplexity is worse than the best of all
epochs but the last `nonmono` (AWD-LSTM's rule), then averages the weights. Until then its run is an SGD
run, so an SGD run's history says whether, and after which epoch, averaging would have begun.
"""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from onlstm_cli.modelfile import load_model, validation_history  # noqa: E402
from onlstm_cli.training.train import should_average  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="+", help="model files or checkpoints of SGD runs")
    ap.add_argument("--nonmono", type=int, default=5)
    args = ap.parse_args()
    for path in args.models:
        history = validation_history(load_model(path).meta)
        fired = next((h["epoch"] for k, h in enumerate(history)
                      if should_average(history[:k], h["valid_ppl"], args.nonmono)), None)
        last = history[-1] if history else {"epoch": 0, "valid_ppl": None}
        print(f"{path}: {len(history)} validations up to epoch {last['epoch']} (valid ppl {last['valid_ppl']}): "
              + (f"averaging would have begun after epoch {fired}" if fired is not None else "the trigger never fires"))


if __name__ == "__main__":
    main()
