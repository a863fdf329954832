#!/usr/bin/env bash
# pcfg.md, "A small text's PCFG and its words seen once": the ten-minute Turkish recipe's PCFG seed 1111 again
# (focused on its three ON-LSTMs, layers 2 and 3, `auto` as the recipe reads it, its 3.8 minutes, one thread), with --min-freq 1 (as the recipe
# trains it) and --min-freq 2 (the words seen once read as <unk>), side by side; then both on the dev trees
. /work/main/.venv/bin/activate; cd /work/main
T=runs/lg-T; O=runs/pcfg-vocab
arm() { # MIN_FREQ
  onlstm train $T/T.recipe-train.txt --valid $T/T.recipe-valid.txt --family pcfg --seed 1111 --threads 1 \
    --teacher $T/T.lm-seed1111.onlstm --teacher $T/T.lm-seed1112.onlstm --teacher $T/T.lm-seed1113.onlstm \
    --teacher-layers 2,3 --right-branching auto --min-freq $1 --time-budget 3.8m -o $O/tr-minfreq$1.onlstm > $O/tr-minfreq$1.log 2>&1
}
arm 1 & arm 2 & wait
docs/experiments/scripts/eval_files.sh ../shared/data/ud-tr-imst/tr_imst-ud-dev.conllu $O/tr-minfreq{1,2}.onlstm > $O/eval.txt 2>&1
echo ALLDONE >> $O/eval.txt
