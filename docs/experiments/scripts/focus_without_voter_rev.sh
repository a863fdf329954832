#!/usr/bin/env bash
# small-corpora.md, "English read backwards": the recipe's PCFG seeds 1111 and 1112 again, focused on its three
# ON-LSTMs as the recipe read them, with the branching voter's tree left out of the focus, side by side; scored
. /work/main/.venv/bin/activate; cd /work/main
R=runs/rev-E; O=runs/rev-E/nv
arm() { # SEED
  python docs/experiments/scripts/focus_without_voter.py train $R/R.recipe-train.txt --valid $R/R.recipe-valid.txt \
    --family pcfg --seed $1 --threads 1 --teacher $R/R.lm-seed1111.onlstm --teacher $R/R.lm-seed1112.onlstm \
    --teacher $R/R.lm-seed1113.onlstm --teacher-layers 2,3 --right-branching auto --time-budget 3.8m \
    -o $O/pcfg-s$1.onlstm > $O/pcfg-s$1.log 2>&1
}
arm 1111 & arm 1112 & wait
docs/experiments/scripts/eval_files.sh $R/ptb-dev-mirrored.trees $O/pcfg-s111{1,2}.onlstm > $O/eval.txt 2>&1
echo ALLDONE >> $O/eval.txt
