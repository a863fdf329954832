"""`onlstm train ARGS…` with the branching voter left out of the votes' spans, so that parse-focusing's allowed
spans are the teachers' trees' alone (`auto` still reads the direction and the split, and says so); for
`--family pcfg --teacher …` runs (small-corpora.md, "English read backwards").
usage: focus_without_voter.py TRAIN_ARGS…"""
import sys

import onlstm_cli.training.student.votes as votes
from onlstm_cli.cli.commands import app  # registers the commands

as_built = votes.vote
votes.vote = lambda trees, lengths, right_branching=0.0, left_branching=0.0, weights=None: as_built(
    trees, lengths, 0.0, 0.0, weights)
app(sys.argv[1:])
