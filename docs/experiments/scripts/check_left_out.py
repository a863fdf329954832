"""pcfg.md entry 171: the recipe's student check as it is (each teacher's own trees and the student's against the
consensus of the votes, which hold that teacher's own trees too) beside a left-out one (each teacher and the
student against the consensus of the *other* teachers' own trees, one vote each), on a finished run's files.

    python docs/experiments/scripts/check_left_out.py STUDENT VALID TEACHER...

Prints, per teacher, the student's and the teacher's agreement (sentence F1 on the validation text, %) in both
ways. No gold tree is read; the gold side is eval_files.sh's."""
import sys
from pathlib import Path

from onlstm_cli.config import SelfTrainConfig
from onlstm_cli.induction.teachers import model_trees
from onlstm_cli.modelfile import load_model
from onlstm_cli.training.recipe.voters import validation_votes
from onlstm_cli.training.student.check import agreement
from onlstm_cli.training.student.votes import consensus_targets, vote

student, valid = Path(sys.argv[1]), sys.argv[2]
teachers = [load_model(p) for p in sys.argv[3:]]
votes = validation_votes(student, teachers, valid, SelfTrainConfig(span_parser_teachers=True))
keep = [k for k, words in enumerate(votes.valid_sentences) if len(words) >= 3]
sentences = [votes.valid_sentences[k] for k in keep]
lengths = [len(words) for words in sentences]
consensus = [set(s) for s in consensus_targets([votes.valid_spans[k] for k in keep], lengths)]
own = [votes.as_voted([trees[k] for k in keep], keep) for trees in votes.valid_parse_trees]
mine = votes.as_voted(model_trees(load_model(student), sentences, span_parsers=True), keep)
print(f"{len(sentences)} validation sentences of 3 words or more; {len(own)} voting teachers")
print("teacher | as the check is: teacher, student | left out: teacher, student (the others' consensus)")
for k, name in enumerate(votes.teacher_names):
    others = [own[j] for j in range(len(own)) if j != k]
    # each span's share of the others' votes, one each, as the recipe's votes are shares (consensus_heights)
    left_out = [set(s) for s in consensus_targets(vote(others, lengths), lengths)] if others else None
    row = [agreement(own[k], consensus), agreement(mine, consensus)]
    row += [agreement(own[k], left_out), agreement(mine, left_out)] if left_out else [float("nan")] * 2
    print(f"{Path(name).name} | {row[0]:.2f}, {row[1]:.2f} | {row[2]:.2f}, {row[3]:.2f}")
