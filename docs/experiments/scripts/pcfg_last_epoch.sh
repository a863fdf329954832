#!/usr/bin/env bash
# pcfg.md, "A small text's PCFG kept at its first epoch": each recipe PCFG of runs/ship-teacher/tr-{2111,3111}
# trained again (its seed, the run's two language models as teachers, 114 s, one thread) with the recipe's training
# split as --valid too, so that the epoch kept is the last or nearly; then scored on the Turkish dev trees
set -u
cd /work/main && . .venv/bin/activate
GOLD=../shared/data/ud-tr-imst/tr_imst-ud-dev.conllu
for run in 2111 3111; do
  D=runs/ship-teacher/tr-$run; E=runs/pcfg-last/tr-$run; mkdir -p $E
  python -c "import sys; from pathlib import Path; from onlstm_cli.training.recipe.files import held_out_split; held_out_split(Path(sys.argv[1]), Path(sys.argv[2]))" $D/c.txt $E/split.onlstm  # the recipe's own split: $E/split.recipe-{train,valid}.txt
  for seed in $run $((run + 1)); do
    onlstm train $E/split.recipe-train.txt --family pcfg --teacher $D/m.lm-seed$run.onlstm --teacher $D/m.lm-seed$((run + 1)).onlstm \
      --valid $E/split.recipe-train.txt --seed $seed --time-budget 114s --threads 1 -o $E/pcfg-$seed.onlstm > $E/pcfg-$seed.log 2>&1
    docs/experiments/scripts/eval_files.sh $GOLD $E/pcfg-$seed.onlstm >> $E/eval.txt 2>&1
  done
done
echo ALLDONE > runs/pcfg-last/done
