"""The recipe's stage 2 alone, rerun from recorded language models and one PCFG file more as a teacher: the span
parser on their votes until the budget is spent, then the student check (stage2_lean.py with a PCFG beside).
usage: stage2_focus.py LEAN_FROM BUDGET_S OUT TRAIN VALID PCFG_FILE LM_FILE..."""
import sys
from pathlib import Path

import torch
from onlstm_cli.config import SelfTrainConfig
from onlstm_cli.induction.teachers import OnlstmTeacher, PcfgTeacher
from onlstm_cli.modelfile import load_model
from onlstm_cli.training.recipe.runner import UNTIL_BUDGET
from onlstm_cli.training.student.check import check_student
from onlstm_cli.training.student.train import self_train

lean_from, budget, out, train, valid, pcfg, *files = sys.argv[1:]
torch.set_num_threads(1)
teachers = [OnlstmTeacher(load_model(f), (), 1) for f in files] + [PcfgTeacher(load_model(pcfg))]
cfg = SelfTrainConfig(epochs=UNTIL_BUDGET, patience=UNTIL_BUDGET, right_branching="auto", extra_layers=1,
                      lean_from=lean_from)
result = self_train(train, out, teachers, valid, train=cfg, budget=float(budget))
check = check_student(Path(out), None, result.votes, print)  # a PCFG and language models make no one ensemble
print("student check:", check.text() if check else None, flush=True)
