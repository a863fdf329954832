"""pcfg.md, "A second round on the one-hour Turkish recipe's files", run b: entry 146's student trained as the
recipe trains its span parser, until its 30 minutes are spent (epochs and patience UNTIL_BUDGET), which `train
--teacher` does not offer (it stops after --epochs, or 2 epochs without a better validation loss)."""
from onlstm_cli.config import SelfTrainConfig
from onlstm_cli.modelfile import load_model
from onlstm_cli.training.recipe.runner import UNTIL_BUDGET
from onlstm_cli.training.student.train import self_train

C = "runs/cf/C"
teachers = [load_model(f"{C}/tr.onlstm")] + [load_model(f"{C}/tr.pcfg-seed{s}.onlstm") for s in (1111, 1112, 1113)]
train = SelfTrainConfig(epochs=UNTIL_BUDGET, patience=UNTIL_BUDGET, right_branching="auto",
                        span_parser_teachers=True).check()
self_train(f"{C}/tr.recipe-train.txt", "runs/tr-r2/tr-r2b.onlstm", teachers, f"{C}/tr.recipe-valid.txt",
           train=train, budget=1800.0, log=print)
