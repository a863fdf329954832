#!/usr/bin/env bash
# pcfg.md, "A small text's PCFG that reads a rare word by its ending": four PCFGs (seed 1111, one thread, until
# --patience or 8 minutes) on the one-hour Turkish recipe's text (runs/tr1h-cut), focused on its three ON-LSTMs or not,
# reading whole words (onlstm) or rare words by their ending (suffix_units_probe.py); then each on the dev trees.
. /work/main/.venv/bin/activate; cd /work/main
T=runs/tr1h-cut; O=runs/suffix-units; G=../shared/data/ud-tr-imst/tr_imst-ud-dev.conllu
mkdir -p $O
FOCUS="--teacher $T/tr.lm-seed1111.onlstm --teacher $T/tr.lm-seed1112.onlstm --teacher $T/tr.lm-seed1113.onlstm
  --teacher-layers 2,3 --right-branching auto"
arm() { # NAME FOCUSED(0/1) RUNNER…
  local name=$1 focused=$2; shift 2
  local focus=""; [ "$focused" = 1 ] && focus=$FOCUS
  "$@" train $T/tr.recipe-train.txt --valid $T/tr.recipe-valid.txt --family pcfg --seed 1111 --threads 1 \
    $focus --time-budget 8m -o $O/$name.onlstm > $O/$name.log 2>&1
}
probe="python docs/experiments/scripts/suffix_units_probe.py"
arm FW 1 onlstm & arm FU 1 $probe & wait
arm UW 0 onlstm & arm UU 0 $probe & wait
docs/experiments/scripts/eval_files.sh $G $O/FW.onlstm $O/UW.onlstm > $O/eval.txt 2>&1
ONLSTM="$probe" docs/experiments/scripts/eval_files.sh $G $O/FU.onlstm $O/UU.onlstm >> $O/eval.txt 2>&1  # read by their endings
echo ALLDONE >> $O/eval.txt
