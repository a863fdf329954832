#!/usr/bin/env bash
# pcfg.md, "A small text's PCFG that reads a rare word by its ending", the seeds check: arms UW and UU (unfocused;
# whole words / rare words by their ending) with seeds 1112 and 1113, as suffix_units_arms.sh trains them
. /work/main/.venv/bin/activate; cd /work/main
T=runs/tr1h-cut; O=runs/suffix-units; G=../shared/data/ud-tr-imst/tr_imst-ud-dev.conllu
probe="python docs/experiments/scripts/suffix_units_probe.py"
arm() { # NAME SEED RUNNER…
  local name=$1 seed=$2; shift 2
  "$@" train $T/tr.recipe-train.txt --valid $T/tr.recipe-valid.txt --family pcfg --seed $seed --threads 1 \
    --time-budget 8m -o $O/$name.onlstm > $O/$name.log 2>&1
}
arm UW-1112 1112 onlstm & arm UU-1112 1112 $probe & wait
arm UW-1113 1113 onlstm & arm UU-1113 1113 $probe & wait
docs/experiments/scripts/eval_files.sh $G $O/UW-1112.onlstm $O/UW-1113.onlstm >> $O/eval.txt 2>&1
ONLSTM="$probe" docs/experiments/scripts/eval_files.sh $G $O/UU-1112.onlstm $O/UU-1113.onlstm >> $O/eval.txt 2>&1  # read by their endings
echo SEEDSDONE >> $O/eval.txt
