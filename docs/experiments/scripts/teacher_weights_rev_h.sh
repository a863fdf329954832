#!/usr/bin/env bash
# small-corpora.md, "teachers weighted by their agreement on the stand-in": stage 2 on runs/rev-H/main's six teachers,
# equal weights and agreement weights side by side (one thread each, the student command, 15 minutes), then scored.
. /work/main/.venv/bin/activate; cd /work/main
R=runs/rev-H/main; O=runs/rev-H/tw; G=runs/rev-E/ptb-dev-mirrored.trees
mkdir -p $O
python -c "from pathlib import Path; from onlstm_cli.training.recipe.files import held_out_split
held_out_split(Path('runs/rev-H/c.txt'), Path('$R/R.onlstm'))"
arm() { docs/experiments/scripts/stage2_arm.sh $R $R R.pcfg-seed $O/$1.onlstm --teacher-weights $1; }  # WEIGHTS
arm equal & arm agreement & wait
docs/experiments/scripts/eval_files.sh $G $O/equal.onlstm $O/agreement.onlstm > $O/eval.txt 2>&1
echo ALLDONE >> $O/eval.txt
