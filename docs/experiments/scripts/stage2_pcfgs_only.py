"""pcfg.md, "Stage 2 on the focused PCFGs alone": a recipe arm's stage 2 again, only its three focused PCFGs voting
(each its MBR trees); its ON-LSTM of seed 1111 hosts the student (its vocabulary and word vectors) without voting.
The recipe's own split of the corpus, its span parser options, 15 minutes on one thread.

    python docs/experiments/scripts/stage2_pcfgs_only.py runs/fam-tr-focus tr ../shared/data/ud-tr-imst/tr_imst-ud-train.txt runs/pcfgs-only/tr.onlstm
"""
import sys
from pathlib import Path

import torch

from onlstm_cli.config import SelfTrainConfig
from onlstm_cli.modelfile import load_model
from onlstm_cli.training.recipe.files import held_out_split
from onlstm_cli.training.student.train import self_train

torch.set_num_threads(1)
arm, stem, corpus, out = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4])
out.parent.mkdir(parents=True, exist_ok=True)
train, valid = held_out_split(corpus, out)
teachers = [load_model(arm / f"{stem}.pcfg-seed{seed}.onlstm") for seed in (1111, 1112, 1113)]
host = load_model(arm / f"{stem}.lm-seed1111.onlstm")
config = SelfTrainConfig(epochs=10 ** 9, patience=10 ** 9, right_branching="auto").check()
result = self_train(train, out, teachers, valid, None, config, 15 * 60.0, host=host)
print("done", result.epochs_done, result.best_valid_loss)
