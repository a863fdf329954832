#!/usr/bin/env bash
# small-corpora.md, "(e) on Portuguese over three seeds": the recipe's split of the Bosque train text, then
# cosine seeds 1112 and 1113 side by side, then the baseline's seed 1113, one thread each, 15 minutes; dev F1
set -u
. "$(dirname "$0")/pt_split_runs.sh"
run cosine 1112 & run cosine 1113 & wait
run constant 1113
docs/experiments/scripts/eval_files.sh ../shared/data/ud-pt-bosque/pt_bosque-ud-dev.conllu \
  runs/lr/pt-cosine-s1112.onlstm runs/lr/pt-cosine-s1113.onlstm runs/lr/pt-constant-s1113.onlstm > runs/lr/pt-seeds.eval 2>&1
python docs/experiments/scripts/curve.py runs/lr/pt-*-s111[23].log > runs/lr/pt-seeds.curve
echo ALLDONE > runs/lr/pt-seeds.done
