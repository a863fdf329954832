"""pcfg.md, "One vote a model": the recipe's stage 2 again over the six teachers of runs/fam-tr-focus, each model voting
once (its parse layer; a PCFG its MBR trees), not an ON-LSTM twice (its parse layer and the one above), with the
recipe's own split of the corpus, its span parser options and its 15 minutes on one thread.

    python docs/experiments/scripts/vote_per_model.py   # then eval_files.sh on runs/fam-tr-vote/st.onlstm
"""
from pathlib import Path

import torch

from onlstm_cli.config import SelfTrainConfig
from onlstm_cli.modelfile import load_model
from onlstm_cli.training.recipe.files import held_out_split
from onlstm_cli.training.student.train import self_train

torch.set_num_threads(1)
here, out = Path("runs/fam-tr-focus"), Path("runs/fam-tr-vote/st.onlstm")
train, valid = held_out_split(Path("../shared/data/ud-tr-imst/tr_imst-ud-train.txt"), out)
teachers = [load_model(here / f"tr.{family}-seed{seed}.onlstm") for family in ("lm", "pcfg") for seed in (1111, 1112, 1113)]
config = SelfTrainConfig(epochs=10 ** 9, patience=10 ** 9, right_branching="auto", extra_layers=0).check()
result = self_train(train, out, teachers, valid, None, config, 15 * 60.0)
print("done", result.epochs_done, result.best_valid_loss)
