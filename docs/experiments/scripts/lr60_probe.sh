#!/usr/bin/env bash
# small-corpora.md, "A higher constant rate on small corpora": --lr 60 beside --lr 30, 15 minutes, one thread each
set -u
. "$(dirname "$0")/pt_split_runs.sh"   # the Portuguese and Turkish splits, and the working directory /work/main
rate() { # LANG LR SEED
  onlstm train runs/vocab/$1.train.txt --valid runs/vocab/$1.valid.txt --seed $3 --threads 1 --time-budget 15m \
    --lr $2 -o runs/lr/$1-lr$2-s$3.onlstm > runs/lr/$1-lr$2-s$3.log 2>&1
}
rate pt 60 1114 & rate pt 60 1115 & wait
rate tr 60 1114 & rate tr 30 1114 & wait
docs/experiments/scripts/eval_files.sh ../shared/data/ud-pt-bosque/pt_bosque-ud-dev.conllu runs/lr/pt-lr60-s111[45].onlstm > runs/lr/lr60.eval 2>&1
docs/experiments/scripts/eval_files.sh ../shared/data/ud-tr-imst/tr_imst-ud-dev.conllu runs/lr/tr-lr{60,30}-s1114.onlstm >> runs/lr/lr60.eval 2>&1
python docs/experiments/scripts/curve.py runs/lr/pt-lr60-*.log runs/lr/tr-lr*-s1114.log > runs/lr/lr60.curve
echo ALLDONE > runs/lr/lr60.done
