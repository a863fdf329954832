#!/usr/bin/env bash
# pcfg.md, "A small text's PCFG at a quarter of the learning rate": the ten-minute Turkish recipe's PCFG seed 1111 again
# at --lr LR, then on the dev trees.  usage: pcfg_lr_tr.sh LR
cd /work/main
docs/experiments/scripts/pcfg_focused_arm.sh runs/lg-T 1111 runs/pcfg-lr/tr-lr$1.onlstm \
  ../shared/data/ud-tr-imst/tr_imst-ud-dev.conllu --lr $1
