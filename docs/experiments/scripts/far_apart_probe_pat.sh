#!/usr/bin/env bash
# pcfg.md, "Teachers far from the others, on the other one-hour Turkish teachers": 24-minute students on
# runs/pat-tr1h's six teachers, side by side on one thread each as agreement_filter_probe.sh trains them, with the
# branch's code: PX, --min-relative-agreement 0.75 (the option as built); P, 0 (every teacher votes)
. /work/main/.venv/bin/activate; cd /work/main
T=runs/pat-tr1h; O=runs/apart-pat; G=../shared/data/ud-tr-imst/tr_imst-ud-dev.conllu
mkdir -p $O
ALL=""; for t in lm-seed1111 lm-seed1112 lm-seed1113 pcfg-seed1111 pcfg-seed1112 pcfg-seed1113; do
  ALL="$ALL --teacher $T/tr.$t.onlstm"; done
arm() { # NAME SHARE
  PYTHONPATH=${BRANCH:-/work/wt-apart} python docs/experiments/scripts/student_until_budget.py train \
    $T/tr.recipe-train.txt --valid $T/tr.recipe-valid.txt $ALL --teacher-layers 2,3 --right-branching auto \
    --min-relative-agreement $2 --time-budget 24m --threads 1 -o $O/$1.onlstm > $O/$1.log 2>&1
}
arm PX 0.75 & arm P 0 & wait
PYTHONPATH=${BRANCH:-/work/wt-apart} bash docs/experiments/scripts/eval_files.sh $G $O/PX.onlstm $O/P.onlstm \
  > $O/eval.txt 2>&1
echo ALLDONE >> $O/eval.txt
