#!/usr/bin/env bash
# pcfg.md, "A small text's PCFG that reads its words' character n-grams": the ten-minute Turkish recipe's PCFG seed S
# (default 1111) again (focused on its three ON-LSTMs, layers 2 and 3, `auto` as the recipe reads it, its 3.8
# minutes, one thread) with --units ngrams, on the probe's code (PYTHONPATH, default the branch's worktree), then on
# the dev trees.  usage: pcfg_ngrams_tr.sh [SEED] [RUNS_DIR] [GOLD]; the code: pcfg_ngrams.patch applied to a worktree of main
. /work/main/.venv/bin/activate; cd /work/main
export PYTHONPATH=${PYTHONPATH:-/work/wt-ng}
S=${1:-1111}; T=${2:-runs/lg-T}; G=${3:-../shared/data/ud-tr-imst/tr_imst-ud-dev.conllu}; O=runs/pcfg-ngrams; mkdir -p $O
P=$(basename $(ls $T/*.lm-seed1111.onlstm) .lm-seed1111.onlstm)
onlstm train $T/$P.recipe-train.txt --valid $T/$P.recipe-valid.txt --family pcfg --seed $S --threads 1 \
  --teacher $T/$P.lm-seed1111.onlstm --teacher $T/$P.lm-seed1112.onlstm --teacher $T/$P.lm-seed1113.onlstm \
  --teacher-layers 2,3 --right-branching auto --units ngrams --time-budget 3.8m -o $O/$P-s$S.onlstm > $O/$P-s$S.log 2>&1
docs/experiments/scripts/eval_files.sh $G $O/$P-s$S.onlstm >> $O/eval.txt 2>&1
