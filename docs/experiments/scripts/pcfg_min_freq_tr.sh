#!/usr/bin/env bash
# pcfg.md, "A small text's PCFG and its words seen once": the ten-minute Turkish recipe's PCFG seed 1111 again (as
# pcfg_focused_arm.sh trains it) with --min-freq 1 (as the recipe trains it) and --min-freq 2 (the words seen once
# read as <unk>), side by side; then both on the dev trees
cd /work/main
arm() { # MIN_FREQ
  docs/experiments/scripts/pcfg_focused_arm.sh runs/lg-T 1111 runs/pcfg-vocab/tr-minfreq$1.onlstm \
    ../shared/data/ud-tr-imst/tr_imst-ud-dev.conllu --min-freq $1
}
arm 1 & arm 2 & wait
echo ALLDONE >> runs/pcfg-vocab/eval.txt
