#!/usr/bin/env bash
# Stage 2 as a one-hour recipe runs it, through the student command: the span parser on the votes of a run's three
# language models (layers 2 and 3) and three PCFGs, `auto`'s branching voter, 15 minutes (or $BUDGET), one thread,
# with OPTIONS…, on the recipe's split of the run's text (RUNS_DIR/R.recipe-{train,valid}.txt, held_out_split's).
# usage: stage2_arm.sh RUNS_DIR PCFG_DIR PCFG_PREFIX OUT [OPTIONS…]   (PCFGs: PCFG_DIR/PCFG_PREFIX{1111,1112,1113}.onlstm)
. /work/main/.venv/bin/activate; cd /work/main
R=$1; P=$2/$3; OUT=$4; shift 4
onlstm train $R/R.recipe-train.txt --valid $R/R.recipe-valid.txt --teacher $R/R.lm-seed1111.onlstm \
  --teacher $R/R.lm-seed1112.onlstm --teacher $R/R.lm-seed1113.onlstm --teacher ${P}1111.onlstm \
  --teacher ${P}1112.onlstm --teacher ${P}1113.onlstm --teacher-layers 2,3 --right-branching auto \
  --time-budget ${BUDGET:-15m} --threads 1 "$@" -o $OUT > ${OUT%.onlstm}.log 2>&1
