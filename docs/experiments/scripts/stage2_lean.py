"""The recipe's stage 2 alone, rerun from recorded teachers of any family (each ON-LSTM with two layers' votes, as the
recipe gives them): the span parser on their votes until the budget is spent (as the recipe trains it), then the
student check, which ships the consensus parser where the student is the worse; `auto` reads the direction as
--lean-from says (small-corpora.md's rule "auto reads the direction from word order alone"; pcfg.md's "A PCFG's lean
as written").
usage: stage2_lean.py LEAN_FROM BUDGET_S OUT TRAIN VALID MODEL_FILE..."""
import sys
from pathlib import Path

import torch
from onlstm_cli.config import SelfTrainConfig
from onlstm_cli.induction.teachers import as_teacher
from onlstm_cli.modelfile import load_model
from onlstm_cli.training.recipe.runner import UNTIL_BUDGET
from onlstm_cli.training.student.check import check_student
from onlstm_cli.training.student.train import self_train

lean_from, budget, out, train, valid, *files = sys.argv[1:]
torch.set_num_threads(1)
teachers = [as_teacher(load_model(f), (), 1) for f in files]
cfg = SelfTrainConfig(epochs=UNTIL_BUDGET, patience=UNTIL_BUDGET, right_branching="auto", extra_layers=1,
                      lean_from=lean_from)
result = self_train(train, out, teachers, valid, train=cfg, budget=float(budget))
check = check_student(Path(out), files, result.votes, print)
print("student check:", check.text() if check else None, flush=True)
