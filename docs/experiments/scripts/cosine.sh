#!/usr/bin/env bash
# small-corpora.md's rule (e): --lr-schedule cosine, two runs at a time, one thread each, then their dev F1
set -u
cd /work/main && . .venv/bin/activate
run() { # LANG SEED
  onlstm train runs/vocab/$1.train.txt --valid runs/vocab/$1.valid.txt --seed $2 --threads 1 --time-budget 15m \
    --lr-schedule cosine -o runs/lr/$1-cosine-s$2.onlstm > runs/lr/$1-cosine-s$2.log 2>&1
}
run tr 1111 & run tr 1112 & wait
run tr 1113 & run pt 1111 & wait
S=docs/experiments/scripts
$S/eval_files.sh ../shared/data/ud-tr-imst/tr_imst-ud-dev.conllu runs/lr/tr-cosine-s111{1,2,3}.onlstm > runs/lr/cosine.tr.eval 2>&1 &
$S/eval_files.sh ../shared/data/ud-pt-bosque/pt_bosque-ud-dev.conllu runs/lr/pt-cosine-s1111.onlstm > runs/lr/cosine.pt.eval 2>&1 &
wait
echo ALLDONE > runs/lr/cosine.done
