#!/usr/bin/env bash
# small-corpora.md, "(e) on Portuguese over seven seeds": the recipe's split of the Bosque train text, then for each
# of seeds 1114-1117 the cosine and the constant run side by side, one thread each, 15 minutes; their dev F1 and curves
set -u
. "$(dirname "$0")/pt_split_runs.sh"
for seed in 1114 1115 1116 1117; do
  run cosine $seed & run constant $seed & wait
done
docs/experiments/scripts/eval_files.sh ../shared/data/ud-pt-bosque/pt_bosque-ud-dev.conllu \
  runs/lr/pt-{cosine,constant}-s111[4-7].onlstm > runs/lr/pt-more-seeds.eval 2>&1
python docs/experiments/scripts/curve.py runs/lr/pt-*-s111[4-7].log > runs/lr/pt-more-seeds.curve
echo ALLDONE > runs/lr/pt-more-seeds.done
