#!/usr/bin/env bash
# pcfg.md, "Twelve teachers again, on the other one-hour Turkish teachers": three more focused PCFGs (seeds
# 1114-1116) on runs/pat-tr1h's text and ON-LSTMs, then students A' (its six teachers) and G' (those, the three more
# and runs/suffix-units' three ending PCFGs) side by side as suffix_units_stage2.sh trains them, then the dev trees
. /work/main/.venv/bin/activate; cd /work/main
T=runs/pat-tr1h; U=runs/suffix-units; O=runs/sfx3; G=../shared/data/ud-tr-imst/tr_imst-ud-dev.conllu
mkdir -p $O
FOCUS="--teacher $T/tr.lm-seed1111.onlstm --teacher $T/tr.lm-seed1112.onlstm --teacher $T/tr.lm-seed1113.onlstm
  --teacher-layers 2,3 --right-branching auto"
pcfg() { # SEED
  onlstm train $T/tr.recipe-train.txt --valid $T/tr.recipe-valid.txt --family pcfg --seed $1 --threads 1 $FOCUS \
    --time-budget 8m -o $O/FW-$1.onlstm > $O/FW-$1.log 2>&1
}
pcfg 1114 & pcfg 1115 & wait
pcfg 1116
SIX="--teacher $T/tr.lm-seed1111.onlstm --teacher $T/tr.lm-seed1112.onlstm --teacher $T/tr.lm-seed1113.onlstm
  --teacher $T/tr.pcfg-seed1111.onlstm --teacher $T/tr.pcfg-seed1112.onlstm --teacher $T/tr.pcfg-seed1113.onlstm"
MORE="--teacher $O/FW-1114.onlstm --teacher $O/FW-1115.onlstm --teacher $O/FW-1116.onlstm"
ENDINGS="--teacher $U/UU.onlstm --teacher $U/UU-1112.onlstm --teacher $U/UU-1113.onlstm"
arm() { # NAME TEACHERS…
  local name=$1; shift
  python docs/experiments/scripts/suffix_units_stage2.py train $T/tr.recipe-train.txt --valid $T/tr.recipe-valid.txt \
    "$@" --teacher-layers 2,3 --right-branching auto --time-budget 24m --threads 1 -o $O/$name.onlstm > $O/$name.log 2>&1
}
arm A2 $SIX & arm G2 $SIX $MORE $ENDINGS & wait
bash docs/experiments/scripts/eval_files.sh $G $O/FW-1114.onlstm $O/FW-1115.onlstm $O/FW-1116.onlstm $O/A2.onlstm \
  $O/G2.onlstm > $O/eval.txt 2>&1
echo ALLDONE >> $O/eval.txt
