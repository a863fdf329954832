"""pcfg.md, "Teachers weighted by their agreement above chance": a recipe's stage 2 again over the teachers its vote
kept (its record), with --teacher-weights as given, the recipe's split of the text, --right-branching auto, each
ON-LSTM with its parse layer and the one above, 8 epochs (patience 2), seed 1111, one thread.

    python docs/experiments/scripts/teacher_weights.py RECIPE_OUT CORPUS equal|agreement   # writes st-ARM.onlstm beside it

A fourth argument W (small-corpora.md, "Weak Portuguese teachers") sets --right-branching W instead of auto and
writes st-ARM-rbW.onlstm.
"""
import json
import sys
from pathlib import Path

import torch

from onlstm_cli.config import SelfTrainConfig
from onlstm_cli.induction.teachers import OnlstmTeacher, PcfgTeacher
from onlstm_cli.modelfile import load_model
from onlstm_cli.training.recipe.files import held_out_split, state_path
from onlstm_cli.training.student.train import self_train

recipe_out, corpus, arm = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
right_branching = sys.argv[4] if len(sys.argv) > 4 else "auto"
torch.set_num_threads(1)
out = recipe_out.with_name(f"st-{arm}.onlstm" if right_branching == "auto" else f"st-{arm}-rb{right_branching}.onlstm")
train, valid = held_out_split(corpus, out)
record = json.loads(state_path(recipe_out).read_text())
config = SelfTrainConfig(epochs=8, patience=2, right_branching=right_branching, extra_layers=1, seed=1111,
                         teacher_weights=arm).check()
voting = [t for t in record["teachers"] if t.get("votes")]
print("teachers:", [t["path"] for t in voting], flush=True)
teachers = [OnlstmTeacher(load_model(recipe_out.with_name(t["path"])), (), config.extra_layers)
            if t.get("family", "onlstm") == "onlstm" else PcfgTeacher(load_model(recipe_out.with_name(t["path"])))
            for t in voting]
result = self_train(train, out, teachers, valid, None, config, None, log=lambda line: print(line, flush=True))
print("done", result.epochs_done, result.best_valid_loss)
