#!/usr/bin/env bash
# pcfg.md, "PCFGs focused on the PCFGs": on the ten-minute Turkish recipe (runs/lg-T), two PCFGs (seeds 2111, 2112)
# focused on the votes of all six of its teachers (three ON-LSTMs, layers 2 and 3, and three focused PCFGs), as
# the recipe trains its PCFGs (3.8 minutes, one thread, `auto`), side by side; then they and the recipe's own
# PCFGs on the dev trees
. /work/main/.venv/bin/activate; cd /work/main
T=runs/lg-T; O=runs/pcfg-round2; mkdir -p $O
arm() { # SEED
  onlstm train $T/T.recipe-train.txt --valid $T/T.recipe-valid.txt --family pcfg --seed $1 --threads 1 \
    --teacher $T/T.lm-seed1111.onlstm --teacher $T/T.lm-seed1112.onlstm --teacher $T/T.lm-seed1113.onlstm \
    --teacher $T/T.pcfg-seed1111.onlstm --teacher $T/T.pcfg-seed1112.onlstm --teacher $T/T.pcfg-seed1113.onlstm \
    --teacher-layers 2,3 --right-branching auto --time-budget 3.8m -o $O/tr-s$1.onlstm > $O/tr-s$1.log 2>&1
}
arm 2111 & arm 2112 & wait
docs/experiments/scripts/eval_files.sh ../shared/data/ud-tr-imst/tr_imst-ud-dev.conllu $O/tr-s211{1,2}.onlstm $T/T.pcfg-seed111{2,3}.onlstm > $O/eval.txt 2>&1
echo ALLDONE >> $O/eval.txt
