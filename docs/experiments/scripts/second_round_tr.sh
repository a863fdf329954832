#!/usr/bin/env bash
# pcfg.md, "A second round on a small text": a span parser on the votes of runs/ship-teacher/tr-3111's student and
# its two PCFGs, each voting with its own trees, 5 minutes on one thread; scored on the Turkish dev trees
set -u
cd /work/main && . .venv/bin/activate
D=runs/ship-teacher/tr-3111; E=runs/second-round-tr; mkdir -p $E
awk 'NF { if (k % 20 != 19) print; k++ }' $D/c.txt > $E/train.txt
awk 'NF { if (k % 20 == 19) print; k++ }' $D/c.txt > $E/valid.txt
onlstm train $E/train.txt --valid $E/valid.txt --teacher $D/m.student.onlstm --teacher $D/m.pcfg-seed3111.onlstm \
  --teacher $D/m.pcfg-seed3112.onlstm --second-round --time-budget 5m --threads 1 -o $E/r2.onlstm > $E/train.log 2>&1
docs/experiments/scripts/eval_files.sh ../shared/data/ud-tr-imst/tr_imst-ud-dev.conllu $E/r2.onlstm > $E/eval.txt 2>&1
echo ALLDONE > $E/done
