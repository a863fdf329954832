#!/usr/bin/env bash
# pcfg.md, "--patience on the one-hour Turkish recipe": the recipe's PCFG seed 1111 of runs/pat-tr1h again, on its
# split of the text and focused on its three language models, without patience for 20 epochs; then on the dev trees.
. /work/main/.venv/bin/activate; cd /work/main
T=runs/pat-tr1h; O=runs/pat-tr1h-p0; mkdir -p $O
python - <<'PY'  # the recipe's split (training/recipe/files.py held_out_split): every 20th non-blank line held out
from pathlib import Path
lines = [l for l in Path("../shared/data/ud-tr-imst/tr_imst-ud-train.txt").read_text(encoding="utf-8").splitlines() if l.strip()]
Path("runs/pat-tr1h-p0/tr.recipe-train.txt").write_text("".join(l + "\n" for k, l in enumerate(lines) if k % 20 != 19), encoding="utf-8")
Path("runs/pat-tr1h-p0/tr.recipe-valid.txt").write_text("".join(l + "\n" for k, l in enumerate(lines) if k % 20 == 19), encoding="utf-8")
PY
onlstm train $O/tr.recipe-train.txt --valid $O/tr.recipe-valid.txt --family pcfg --seed 1111 --threads 1 \
  --teacher $T/tr.lm-seed1111.onlstm --teacher $T/tr.lm-seed1112.onlstm --teacher $T/tr.lm-seed1113.onlstm \
  --teacher-layers 2,3 --right-branching auto --patience 0 --epochs 20 --time-budget 40m -o $O/tr.pcfg-seed1111.onlstm > $O/log 2>&1
docs/experiments/scripts/eval_files.sh ../shared/data/ud-tr-imst/tr_imst-ud-dev.conllu $O/tr.pcfg-seed1111.onlstm >> $O/eval.txt 2>&1
