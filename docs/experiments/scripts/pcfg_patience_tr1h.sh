#!/usr/bin/env bash
# pcfg.md, "--patience on the one-hour Turkish recipe": the recipe's PCFG seed 1111 of runs/pat-tr1h again, on its split
# of the text (written again beside it as the recipe writes it) and focused on its three language models, without
# patience for 20 epochs; then on the dev trees.
. /work/main/.venv/bin/activate; cd /work/main
python -c "from pathlib import Path; from onlstm_cli.training.recipe.files import held_out_split
held_out_split(Path('../shared/data/ud-tr-imst/tr_imst-ud-train.txt'), Path('runs/pat-tr1h/tr.onlstm'))"
BUDGET=40m docs/experiments/scripts/pcfg_focused_arm.sh runs/pat-tr1h 1111 runs/pat-tr1h-p0/tr.pcfg-seed1111.onlstm \
  ../shared/data/ud-tr-imst/tr_imst-ud-dev.conllu --patience 0 --epochs 20
