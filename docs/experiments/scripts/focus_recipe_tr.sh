#!/usr/bin/env bash
# pcfg.md, "A recipe round of focused PCFGs": the Turkish arm with both families, the PCFGs focused (the default),
# then its dev F1 and its teachers', both protocols
set -u
cd /work/main && . .venv/bin/activate
D=runs/fam-tr-focus
onlstm train ../shared/data/ud-tr-imst/tr_imst-ud-train.txt --seeds 3 --time-budget 1h --threads 1 \
    --families onlstm,pcfg -o $D/tr.onlstm > $D/train.log 2>&1
docs/experiments/scripts/eval_files.sh ../shared/data/ud-tr-imst/tr_imst-ud-dev.conllu $D/tr.onlstm $D/tr.*seed*.onlstm \
    > $D/eval.txt 2>&1
echo ALLDONE > $D/done
