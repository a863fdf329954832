#!/usr/bin/env bash
# small-corpora.md's rules (d) and (e): `lr_schedule.sh plateau` or `lr_schedule.sh cosine` trains with that
# --lr-schedule, two runs at a time, one thread each (Turkish seeds 1111-1113, Portuguese seed 1111), then their dev F1
set -u
SCHEDULE=$1
cd /work/main && . .venv/bin/activate
run() { # LANG SEED
  onlstm train runs/vocab/$1.train.txt --valid runs/vocab/$1.valid.txt --seed $2 --threads 1 --time-budget 15m \
    --lr-schedule $SCHEDULE -o runs/lr/$1-$SCHEDULE-s$2.onlstm > runs/lr/$1-$SCHEDULE-s$2.log 2>&1
}
run tr 1111 & run tr 1112 & wait
run tr 1113 & run pt 1111 & wait
S=docs/experiments/scripts
$S/eval_files.sh ../shared/data/ud-tr-imst/tr_imst-ud-dev.conllu runs/lr/tr-$SCHEDULE-s111{1,2,3}.onlstm > runs/lr/$SCHEDULE.tr.eval 2>&1 &
$S/eval_files.sh ../shared/data/ud-pt-bosque/pt_bosque-ud-dev.conllu runs/lr/pt-$SCHEDULE-s1111.onlstm > runs/lr/$SCHEDULE.pt.eval 2>&1 &
wait
echo ALLDONE > runs/lr/$SCHEDULE.done
