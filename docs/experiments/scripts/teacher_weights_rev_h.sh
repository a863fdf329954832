#!/usr/bin/env bash
# small-corpora.md, "teachers weighted by their agreement on the stand-in": stage 2 on runs/rev-H/main's six teachers,
# equal weights and agreement weights side by side (one thread each, the student command, 15 minutes), then scored.
. /work/main/.venv/bin/activate; cd /work/main
R=runs/rev-H/main; O=runs/rev-H/tw; G=runs/rev-E/ptb-dev-mirrored.trees
mkdir -p $O
python -c "from pathlib import Path; from onlstm_cli.training.recipe.files import held_out_split
held_out_split(Path('runs/rev-H/c.txt'), Path('$R/R.onlstm'))"
arm() { # NAME WEIGHTS
  onlstm train $R/R.recipe-train.txt --valid $R/R.recipe-valid.txt --teacher $R/R.lm-seed1111.onlstm \
    --teacher $R/R.lm-seed1112.onlstm --teacher $R/R.lm-seed1113.onlstm --teacher $R/R.pcfg-seed1111.onlstm \
    --teacher $R/R.pcfg-seed1112.onlstm --teacher $R/R.pcfg-seed1113.onlstm --teacher-layers 2,3 \
    --right-branching auto --teacher-weights $2 --time-budget 15m --threads 1 -o $O/$1.onlstm > $O/$1.log 2>&1
}
arm equal equal & arm agreement agreement & wait
docs/experiments/scripts/eval_files.sh $G $O/equal.onlstm $O/agreement.onlstm > $O/eval.txt 2>&1
echo ALLDONE >> $O/eval.txt
