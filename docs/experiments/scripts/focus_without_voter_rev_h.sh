#!/usr/bin/env bash
# small-corpora.md, "at an hour, parse-focusing without the branching voter's tree": on runs/rev-H/ltr's kept language
# models and the recipe's split, arm N (three PCFGs focused without the voter's tree, 7.5 min each, then stage 2 on the
# six teachers) beside arm B (stage 2 on the recipe's own six teachers); one thread a job, two jobs at a time; scored.
. /work/main/.venv/bin/activate; cd /work/main
R=runs/rev-H/ltr; O=runs/rev-H/nv; G=runs/rev-E/ptb-dev-mirrored.trees
mkdir -p $O
python -c "from pathlib import Path; from onlstm_cli.training.recipe.files import held_out_split
held_out_split(Path('runs/rev-H/c.txt'), Path('$R/R.onlstm'))"
LMS="--teacher $R/R.lm-seed1111.onlstm --teacher $R/R.lm-seed1112.onlstm --teacher $R/R.lm-seed1113.onlstm"
pcfg() { # SEED
  python docs/experiments/scripts/focus_without_voter.py train $R/R.recipe-train.txt --valid $R/R.recipe-valid.txt \
    --family pcfg --seed $1 --threads 1 $LMS --teacher-layers 2,3 --right-branching auto --time-budget 7.5m \
    -o $O/pcfg-s$1.onlstm > $O/pcfg-s$1.log 2>&1
}
pcfg 1111 & pcfg 1112 & wait
pcfg 1113 & P=$!; docs/experiments/scripts/stage2_arm.sh $R $R R.pcfg-seed $O/B.onlstm & wait $P
docs/experiments/scripts/stage2_arm.sh $R $O pcfg-s $O/N.onlstm & wait
docs/experiments/scripts/eval_files.sh $G $O/B.onlstm $O/N.onlstm $O/pcfg-s111{1,2,3}.onlstm > $O/eval.txt 2>&1
echo ALLDONE >> $O/eval.txt
