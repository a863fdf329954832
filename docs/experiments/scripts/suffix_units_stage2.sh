#!/usr/bin/env bash
# pcfg.md, "Stage 2 with the ending PCFGs beside the recipe's teachers": arms A (the one-hour Turkish recipe's six
# teachers) and D (those and the three unfocused ending PCFGs), 24-minute students side by side, then the dev trees
. /work/main/.venv/bin/activate; cd /work/main
T=runs/tr1h-cut; U=runs/suffix-units; O=runs/sfx2; G=../shared/data/ud-tr-imst/tr_imst-ud-dev.conllu
mkdir -p $O
SIX="--teacher $T/tr.lm-seed1111.onlstm --teacher $T/tr.lm-seed1112.onlstm --teacher $T/tr.lm-seed1113.onlstm
  --teacher $T/tr.pcfg-seed1111.onlstm --teacher $T/tr.pcfg-seed1112.onlstm --teacher $T/tr.pcfg-seed1113.onlstm"
ENDINGS="--teacher $U/UU.onlstm --teacher $U/UU-1112.onlstm --teacher $U/UU-1113.onlstm"
arm() { # NAME TEACHERS…
  local name=$1; shift
  python docs/experiments/scripts/suffix_units_stage2.py train $T/tr.recipe-train.txt --valid $T/tr.recipe-valid.txt \
    "$@" --teacher-layers 2,3 --right-branching auto --time-budget 24m --threads 1 -o $O/$name.onlstm > $O/$name.log 2>&1
}
arm A $SIX & arm D $SIX $ENDINGS & wait
bash docs/experiments/scripts/eval_files.sh $G $O/A.onlstm $O/D.onlstm > $O/eval.txt 2>&1
echo ALLDONE >> $O/eval.txt
