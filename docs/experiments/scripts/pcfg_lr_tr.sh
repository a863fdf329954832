#!/usr/bin/env bash
# pcfg.md, "A small text's PCFG at a quarter of the learning rate": the ten-minute Turkish recipe's PCFG seed 1111 again
# (focused on its three ON-LSTMs, layers 2 and 3, `auto` as the recipe reads it, its 3.8 minutes, one thread) at
# --lr LR, then on the dev trees.  usage: pcfg_lr_tr.sh LR
. /work/main/.venv/bin/activate; cd /work/main
T=runs/lg-T; O=runs/pcfg-lr; mkdir -p $O
onlstm train $T/T.recipe-train.txt --valid $T/T.recipe-valid.txt --family pcfg --seed 1111 --threads 1 \
  --teacher $T/T.lm-seed1111.onlstm --teacher $T/T.lm-seed1112.onlstm --teacher $T/T.lm-seed1113.onlstm \
  --teacher-layers 2,3 --right-branching auto --lr $1 --time-budget 3.8m -o $O/tr-lr$1.onlstm > $O/tr-lr$1.log 2>&1
docs/experiments/scripts/eval_files.sh ../shared/data/ud-tr-imst/tr_imst-ud-dev.conllu $O/tr-lr$1.onlstm >> $O/eval.txt 2>&1
