"""small-corpora.md, "Rule: teachers too lexical to show a direction give no voter": for a recipe run with
--keep-intermediate, the guard's measure over the teachers its vote kept (its record), on the recipe's own split
of the text, and what word order reads with and without it; with an arm, the recipe's stage 2 again over those
teachers (equal weights, --right-branching auto, each ON-LSTM with its parse layer and the one above, 8 epochs,
patience 2, seed 1111, one thread), with the guard (`guard`) or without it (`auto`, as the recipe chose).

    python docs/experiments/scripts/lexical_guard.py RECIPE_OUT CORPUS [auto|guard]   # writes st-lg-ARM.onlstm
"""
import json
import math
import sys
from pathlib import Path

import torch

from onlstm_cli.config import SelfTrainConfig
from onlstm_cli.induction.teachers import OnlstmTeacher, PcfgTeacher, as_teacher
from onlstm_cli.modelfile import load_model
from onlstm_cli.text.corpus import read_as_trained
from onlstm_cli.training.recipe.files import held_out_split, state_path
from onlstm_cli.training.student import direction
from onlstm_cli.training.student.train import self_train

recipe_out, corpus = Path(sys.argv[1]), Path(sys.argv[2])
arm = sys.argv[3] if len(sys.argv) > 3 else None
torch.set_num_threads(1)
record = json.loads(state_path(recipe_out).read_text())
config = SelfTrainConfig(epochs=8, patience=2, right_branching="auto", extra_layers=1, seed=1111).check()
voting = [t for t in record["teachers"] if t.get("votes")]
print("teachers:", [t["path"] for t in voting], flush=True)
teachers = [OnlstmTeacher(load_model(recipe_out.with_name(t["path"])), (), config.extra_layers)
            if t.get("family", "onlstm") == "onlstm" else PcfgTeacher(load_model(recipe_out.with_name(t["path"])))
            for t in voting]
if arm is None:
    host = next(t.host for t in teachers if t.host is not None)
    train, valid = held_out_split(corpus, recipe_out)
    sentences = [s for s in read_as_trained(train, host) if len(s) <= config.max_len]
    valid_sentences = [s for s in read_as_trained(valid, host) if len(s) <= config.max_len]
    teachers = [as_teacher(t) for t in teachers]
    free = direction.direction_free_trees(teachers, valid_sentences)
    order = direction.word_order(teachers, free, valid_sentences, [len(s) for s in valid_sentences], sentences)
    print(f"{recipe_out}: {order}; without the guard: "
          f"{direction.WordOrder(order.written, order.shuffled).direction or 'no direction'}", flush=True)
    sys.exit(0)
if arm == "auto":
    direction.MAX_LEXICAL_AGREEMENT = math.inf  # as main was before the guard
out = recipe_out.with_name(f"st-lg-{arm}.onlstm")
train, valid = held_out_split(corpus, out)
result = self_train(train, out, teachers, valid, None, config, None, log=lambda line: print(line, flush=True))
print("done", result.epochs_done, result.best_valid_loss)
