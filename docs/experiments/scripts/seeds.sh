#!/usr/bin/env bash
# the pairs of docs/experiments/small-corpora.md's rule "(b) over more seeds", two at a time
set -u
cd /work/main && . .venv/bin/activate
run() { # LANG ARM SEED
  local opt=""; [ "$2" = avg100 ] && opt="--average-steps 100"
  onlstm train runs/vocab/$1.train.txt --valid runs/vocab/$1.valid.txt --seed $3 --threads 1 --time-budget 15m $opt \
    -o runs/lr/$1-$2-s$3.onlstm > runs/lr/$1-$2-s$3.log 2>&1
}
for pair in "tr 1112" "tr 1113" "pt 1112"; do
  set -- $pair
  run $1 base $2 & run $1 avg100 $2 & wait
done
echo ALLDONE > runs/lr/seeds.done
