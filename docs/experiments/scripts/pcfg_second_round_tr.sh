#!/usr/bin/env bash
# pcfg.md, "PCFGs focused on the PCFGs": on the ten-minute Turkish recipe (runs/lg-T), two PCFGs (seeds 2111, 2112)
# focused on the votes of all six of its teachers (three ON-LSTMs, layers 2 and 3, and three focused PCFGs), as
# the recipe trains its PCFGs (pcfg_focused_arm.sh), side by side; then they and the recipe's own PCFGs on the dev trees
cd /work/main
T=runs/lg-T; O=runs/pcfg-round2; G=../shared/data/ud-tr-imst/tr_imst-ud-dev.conllu
arm() { # SEED
  docs/experiments/scripts/pcfg_focused_arm.sh $T $1 $O/tr-s$1.onlstm $G \
    --teacher $T/T.pcfg-seed1111.onlstm --teacher $T/T.pcfg-seed1112.onlstm --teacher $T/T.pcfg-seed1113.onlstm
}
arm 2111 & arm 2112 & wait
docs/experiments/scripts/eval_files.sh $G $T/T.pcfg-seed111{2,3}.onlstm >> $O/eval.txt 2>&1
echo ALLDONE >> $O/eval.txt
