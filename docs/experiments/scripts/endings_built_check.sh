#!/usr/bin/env bash
# pcfg.md: the built `--units endings` (branch endings, worktree /work/wt-endings) on the one-hour Turkish recipe's text,
# seed 1111, as arm UU was trained; `onlstm` (not python -m, which would read the cwd's onlstm_cli) on PYTHONPATH
export PYTHONPATH=/work/wt-endings
. /work/main/.venv/bin/activate; cd /work/main
T=runs/tr1h-cut; O=runs/endings-built
onlstm train $T/tr.recipe-train.txt --valid $T/tr.recipe-valid.txt --family pcfg --units endings --seed 1111 \
  --threads 1 --time-budget 8m -o $O/UU-built.onlstm > $O/UU-built.log 2>&1
bash docs/experiments/scripts/eval_files.sh ../shared/data/ud-tr-imst/tr_imst-ud-dev.conllu $O/UU-built.onlstm > $O/eval.txt 2>&1
echo ALLDONE >> $O/eval.txt
