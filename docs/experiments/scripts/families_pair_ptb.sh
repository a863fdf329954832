#!/usr/bin/env bash
# pcfg.md, "The PTB pair": the families-default rule's PTB half, both arms side by side on one thread each,
# then each arm's shipped file and its teachers scored on PTB dev, both protocols
set -u
cd /work/main && . .venv/bin/activate
TRAIN=../shared/data/ptb-lm/ptb.train.txt
GOLD=../shared/data/ptb-dev/ptb-dev.trees
mkdir -p runs/fam-ptb-onlstm runs/fam-ptb-both
onlstm train $TRAIN --seeds 3 --time-budget 1h --threads 1 \
    -o runs/fam-ptb-onlstm/en.onlstm > runs/fam-ptb-onlstm/train.log 2>&1 &
onlstm train $TRAIN --seeds 3 --time-budget 1h --threads 1 --families onlstm,pcfg \
    -o runs/fam-ptb-both/en.onlstm > runs/fam-ptb-both/train.log 2>&1 &
wait
for D in runs/fam-ptb-onlstm runs/fam-ptb-both; do
  docs/experiments/scripts/eval_files.sh $GOLD $D/en.onlstm $D/en.*seed*.onlstm > $D/eval.txt 2>&1
done
echo ALLDONE > runs/fam-ptb-both/done
