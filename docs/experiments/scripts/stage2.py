"""The recipe's stage 2 on the Turkish two-family arm's six teachers, the span parser capped at 8 epochs as the
recorded arm's was, with --max-branching-agreement as given."""
import sys
import torch
from onlstm_cli.config import SelfTrainConfig
from onlstm_cli.modelfile import load_model
from onlstm_cli.induction.teachers import OnlstmTeacher, PcfgTeacher
from onlstm_cli.training.student.train import self_train

above, out = float(sys.argv[1]), sys.argv[2]
torch.set_num_threads(1)
teachers = ([OnlstmTeacher(load_model(f"runs/fam-tr-both/tr.lm-seed{s}.onlstm"), (), 1) for s in (1111, 1112, 1113)]
            + [PcfgTeacher(load_model(f"runs/fam-tr-both/tr.pcfg-seed{s}.onlstm")) for s in (1111, 1112, 1113)])
cfg = SelfTrainConfig(epochs=8, patience=2, right_branching="auto", extra_layers=1, max_branching_agreement=above)
result = self_train("runs/vocab/tr.train.txt", out, teachers, "runs/vocab/tr.valid.txt", train=cfg, budget=900.0)
print(result)
