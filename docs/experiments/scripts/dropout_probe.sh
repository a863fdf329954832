#!/usr/bin/env bash
# small-corpora.md, "Dropouts sized for PTB, halved on small corpora": every dropout halved, 15 minutes, one thread
# each, against the constant-rate runs of the same seeds and splits above
set -u
. "$(dirname "$0")/pt_split_runs.sh"   # the Portuguese and Turkish splits, and the working directory /work/main
halved() { # LANG SEED
  onlstm train runs/vocab/$1.train.txt --valid runs/vocab/$1.valid.txt --seed $2 --threads 1 --time-budget 15m \
    --dropout 0.225 --dropout-h 0.15 --dropout-i 0.25 --dropout-e 0.05 --weight-drop 0.225 \
    -o runs/lr/$1-halfdrop-s$2.onlstm > runs/lr/$1-halfdrop-s$2.log 2>&1
}
halved pt 1114 & halved pt 1115 & wait
halved tr 1114 & halved tr 1115 & wait
docs/experiments/scripts/eval_files.sh ../shared/data/ud-pt-bosque/pt_bosque-ud-dev.conllu runs/lr/pt-halfdrop-s111[45].onlstm > runs/lr/halfdrop.eval 2>&1
docs/experiments/scripts/eval_files.sh ../shared/data/ud-tr-imst/tr_imst-ud-dev.conllu runs/lr/tr-halfdrop-s111[45].onlstm >> runs/lr/halfdrop.eval 2>&1
python docs/experiments/scripts/curve.py runs/lr/pt-halfdrop-*.log runs/lr/tr-halfdrop-*.log > runs/lr/halfdrop.curve
echo ALLDONE > runs/lr/halfdrop.done
