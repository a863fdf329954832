"""pcfg.md, "A student never below the teacher the check ranks above it": the recipe's student check, run on a
student trained by `train --teacher … --second-round` outside a recipe (run E5), on a copy of it so that nothing
here moves. Usage: python check_student.py STUDENT VALID TEACHER..."""
import shutil
import sys
import tempfile
from pathlib import Path

from onlstm_cli.config import SelfTrainConfig
from onlstm_cli.modelfile import load_model
from onlstm_cli.training.recipe.voters import validation_votes
from onlstm_cli.training.student.check import check_student

student, valid, teachers = Path(sys.argv[1]), sys.argv[2], [load_model(p) for p in sys.argv[3:]]
with tempfile.TemporaryDirectory() as folder:
    copy = Path(folder) / student.name
    shutil.copy(student, copy)
    votes = validation_votes(copy, teachers, valid, SelfTrainConfig(span_parser_teachers=True))  # as a recipe's rerun
    check = check_student(copy, None, votes, print)
    print(check.text())
