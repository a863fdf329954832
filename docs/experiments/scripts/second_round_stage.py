"""pcfg.md, "A second round as the recipe's last stage": on the files a one-hour recipe wrote (RECIPE_DIR, --out's
stem STEM), a span parser trained as the stage would train it: on the votes of the recipe's student (its span
parser's trees) and of its PCFGs that vote, epochs until MINUTES are spent, patience 2, `auto`; written to
RECIPE_DIR/STEM.r2.onlstm. Where the recipe removed its split (no --keep-intermediate), it is made again by the
recipe's own held_out_split from CORPUS.

    python docs/experiments/scripts/second_round_stage.py RECIPE_DIR STEM MINUTES [CORPUS]"""
import json
import sys
from pathlib import Path

from onlstm_cli.config import SelfTrainConfig
from onlstm_cli.modelfile import load_model
from onlstm_cli.training.recipe.files import held_out_split, split_paths
from onlstm_cli.training.recipe.runner import UNTIL_BUDGET
from onlstm_cli.training.student.train import self_train

folder, stem, minutes = Path(sys.argv[1]), sys.argv[2], float(sys.argv[3])
out = folder / f"{stem}.onlstm"
split = split_paths(out)
if not split["train"].exists():
    held_out_split(Path(sys.argv[4]), out)
record = json.loads(Path(f"{out}.recipe.json").read_text())
pcfgs = [t["path"] for t in record["teachers"] if t.get("family") == "pcfg" and t.get("votes", True)]
print(f"teachers: {out.name} and {', '.join(pcfgs)}; budget {minutes} min", flush=True)
teachers = [load_model(out)] + [load_model(folder / path) for path in pcfgs]
train = SelfTrainConfig(epochs=UNTIL_BUDGET, patience=2, right_branching="auto", span_parser_teachers=True).check()
self_train(str(split["train"]), str(folder / f"{stem}.r2.onlstm"), teachers, str(split["valid"]), train=train,
           budget=minutes * 60, log=lambda line: print(line, flush=True))
