#!/usr/bin/env bash
# stage 2 of the ten-minute Turkish recipe (runs/lg-T) again over its six teachers, the branching voter's direction
# read from the teachers' trees as written (--lean-from trees) or, as the recipe did, from word order
. /work/main/.venv/bin/activate; cd /work/main
T=runs/lg-T
arm() {
  python docs/experiments/scripts/stage2_lean.py $1 144 runs/lean-T/$1.onlstm $T/T.recipe-train.txt \
    $T/T.recipe-valid.txt $T/T.lm-seed111{1,2,3}.onlstm $T/T.pcfg-seed111{1,2,3}.onlstm > runs/lean-T/$1.log 2>&1
}
arm trees & arm word-order & wait
docs/experiments/scripts/eval_files.sh ../shared/data/ud-tr-imst/tr_imst-ud-dev.conllu runs/lean-T/{trees,word-order}.onlstm > runs/lean-T/eval.txt 2>&1
echo ALLDONE >> runs/lean-T/eval.txt
