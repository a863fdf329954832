#!/usr/bin/env bash
# pcfg.md, "Nine teachers or twelve": 24-minute students on runs/more-tr1h's teachers (the one-hour Turkish recipe
# with --more-pcfgs), side by side on one thread each, on the recipe's own split of the text (runs/tr1h-cut keeps
# it: the same corpus, split the same way): T, all twelve; N, the nine that read whole words (no ending PCFGs)
. /work/main/.venv/bin/activate; cd /work/main
T=runs/more-tr1h; S=runs/tr1h-cut; O=runs/nine; G=../shared/data/ud-tr-imst/tr_imst-ud-dev.conllu
mkdir -p $O
NINE=""; for f in lm-seed1111 lm-seed1112 lm-seed1113 pcfg-seed1111 pcfg-seed1112 pcfg-seed1113 pcfg-seed1114 \
  pcfg-seed1115 pcfg-seed1116; do NINE="$NINE --teacher $T/tr.$f.onlstm"; done
ENDINGS=""; for s in 1111 1112 1113; do ENDINGS="$ENDINGS --teacher $T/tr.pcfg-endings-seed$s.onlstm"; done
arm() { # NAME TEACHERS…
  local name=$1; shift
  python docs/experiments/scripts/student_until_budget.py train $S/tr.recipe-train.txt --valid $S/tr.recipe-valid.txt \
    "$@" --teacher-layers 2,3 --right-branching auto --time-budget 24m --threads 1 -o $O/$name.onlstm > $O/$name.log 2>&1
}
arm T $NINE $ENDINGS & arm N $NINE & wait
bash docs/experiments/scripts/eval_files.sh $G $O/T.onlstm $O/N.onlstm > $O/eval.txt 2>&1
echo ALLDONE >> $O/eval.txt
