#!/usr/bin/env bash
# pcfg.md, "A second round on a small text": a span parser on the votes of runs/ship-teacher/tr-3111's student and
# its two PCFGs, each voting with its own trees, 5 minutes on one thread; scored on the Turkish dev trees
set -u
cd /work/main && . .venv/bin/activate
D=runs/ship-teacher/tr-3111; E=runs/second-round-tr; mkdir -p $E
python -c "import sys; from pathlib import Path; from onlstm_cli.training.recipe.files import held_out_split; held_out_split(Path(sys.argv[1]), Path(sys.argv[2]))" $D/c.txt $E/split.onlstm  # the recipe's own split: $E/split.recipe-{train,valid}.txt
onlstm train $E/split.recipe-train.txt --valid $E/split.recipe-valid.txt --teacher $D/m.student.onlstm --teacher $D/m.pcfg-seed3111.onlstm \
  --teacher $D/m.pcfg-seed3112.onlstm --second-round --time-budget 5m --threads 1 -o $E/r2.onlstm > $E/train.log 2>&1
docs/experiments/scripts/eval_files.sh ../shared/data/ud-tr-imst/tr_imst-ud-dev.conllu $E/r2.onlstm > $E/eval.txt 2>&1
echo ALLDONE > $E/done
