#!/usr/bin/env bash
# One focused PCFG as a ten-minute recipe trains it (pcfg.md's probes on a small text's PCFG): seed S, focused on the
# run's three ON-LSTMs (layers 2 and 3, `auto` as the recipe reads it), 3.8 minutes (or $BUDGET), one thread, with OPTIONS…;
# then its row on the dev trees, appended to OUT_DIR/eval.txt.
# usage: pcfg_focused_arm.sh RUNS_DIR SEED OUT_FILE GOLD [OPTIONS…]   (RUNS_DIR: a recipe's --keep-intermediate folder)
. /work/main/.venv/bin/activate; cd /work/main
T=$1; S=$2; OUT=$3; G=$4; shift 4
P=$(basename "$(ls $T/*.lm-seed1111.onlstm)" .lm-seed1111.onlstm)
mkdir -p "$(dirname $OUT)"
onlstm train $T/$P.recipe-train.txt --valid $T/$P.recipe-valid.txt --family pcfg --seed $S --threads 1 \
  --teacher $T/$P.lm-seed1111.onlstm --teacher $T/$P.lm-seed1112.onlstm --teacher $T/$P.lm-seed1113.onlstm \
  --teacher-layers 2,3 --right-branching auto --time-budget ${BUDGET:-3.8m} "$@" -o $OUT > ${OUT%.onlstm}.log 2>&1
docs/experiments/scripts/eval_files.sh $G $OUT >> "$(dirname $OUT)/eval.txt" 2>&1
