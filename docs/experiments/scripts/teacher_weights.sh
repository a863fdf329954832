#!/usr/bin/env bash
# pcfg.md, "Teachers weighted by their agreement above chance": a 15-minute recipe of both families on the Turkish
# train text and on the first 2,000 lines of the Portuguese one (one after the other, both cores each, the teachers
# kept), then each recipe's stage 2 again with equal and with agreement weights (teacher_weights.py), every file
# scored on its dev trees, both protocols
set -u  # a rerun skips the recipes whose files are there
cd /work/main && . .venv/bin/activate
mkdir -p runs/aw-tr runs/aw-pt
head -n 2000 ../shared/data/ud-pt-bosque/pt_bosque-ud-train.txt > runs/aw-pt/c.txt
[ -f runs/aw-tr/tr.onlstm ] || onlstm train ../shared/data/ud-tr-imst/tr_imst-ud-train.txt --seeds 3 --time-budget 15m --keep-intermediate \
    -o runs/aw-tr/tr.onlstm > runs/aw-tr/train.log 2>&1
[ -f runs/aw-pt/pt.onlstm ] || onlstm train runs/aw-pt/c.txt --seeds 3 --time-budget 15m --keep-intermediate \
    -o runs/aw-pt/pt.onlstm > runs/aw-pt/train.log 2>&1
for lang in tr pt; do
  corpus=../shared/data/ud-tr-imst/tr_imst-ud-train.txt; [ $lang = pt ] && corpus=runs/aw-pt/c.txt
  for arm in equal agreement; do
    python docs/experiments/scripts/teacher_weights.py runs/aw-$lang/$lang.onlstm $corpus $arm \
        > runs/aw-$lang/$arm.log 2>&1 &
  done
  wait
done
docs/experiments/scripts/eval_files.sh ../shared/data/ud-tr-imst/tr_imst-ud-dev.conllu runs/aw-tr/st-*.onlstm \
    runs/aw-tr/tr.onlstm runs/aw-tr/tr.*seed*.onlstm > runs/aw-tr/eval.txt 2>&1
docs/experiments/scripts/eval_files.sh ../shared/data/ud-pt-bosque/pt_bosque-ud-dev.conllu runs/aw-pt/st-*.onlstm \
    runs/aw-pt/pt.onlstm runs/aw-pt/pt.*seed*.onlstm > runs/aw-pt/eval.txt 2>&1
echo ALLDONE > runs/aw-pt/done
