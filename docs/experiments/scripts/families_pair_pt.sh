#!/usr/bin/env bash
# pcfg.md, "Families by corpus size": the Portuguese pair, both arms side by side on one thread each, then each
# arm's shipped file and its teachers scored on Bosque dev, both protocols
set -u
cd /work/main && . .venv/bin/activate
TRAIN=../shared/data/ud-pt-bosque/pt_bosque-ud-train.txt
GOLD=../shared/data/ud-pt-bosque/pt_bosque-ud-dev.conllu
mkdir -p runs/fam-pt-onlstm runs/fam-pt-both
onlstm train $TRAIN --seeds 3 --time-budget 1h --threads 1 \
    -o runs/fam-pt-onlstm/pt.onlstm > runs/fam-pt-onlstm/train.log 2>&1 &
onlstm train $TRAIN --seeds 3 --time-budget 1h --threads 1 --families onlstm,pcfg \
    -o runs/fam-pt-both/pt.onlstm > runs/fam-pt-both/train.log 2>&1 &
wait
for D in runs/fam-pt-onlstm runs/fam-pt-both; do
  docs/experiments/scripts/eval_files.sh $GOLD $D/pt.onlstm $D/pt.*seed*.onlstm > $D/eval.txt 2>&1
done
echo ALLDONE > runs/fam-pt-both/done
