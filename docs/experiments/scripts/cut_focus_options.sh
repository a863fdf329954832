#!/usr/bin/env bash
# pcfg.md, entry 126's probe: arm C's stage 1 (its language models, focused PCFGs, split and record) run on by the
# recipe's own command with --more-pcfgs --min-relative-agreement 0.75: the more PCFGs train in the time stage 1 has
# left, then the span parser in what is left of the hour. From the repository root; nothing beside it.
set -euo pipefail
ONLSTM=${ONLSTM:-onlstm}
CORPUS=../shared/data/ud-tr-imst/tr_imst-ud-train.txt
GOLD=../shared/data/ud-tr-imst/tr_imst-ud-dev.conllu
C=runs/cf/C D=runs/cf/D
rm -rf "$D" && mkdir -p "$D"
cp "$C"/tr.lm-seed*.onlstm "$C"/tr.pcfg-seed*.onlstm "$C"/tr.recipe-train.txt "$C"/tr.recipe-valid.txt "$D"/
python3 docs/experiments/scripts/recipe_stage_copy.py "$C/tr.onlstm.recipe.json" "$D/tr.onlstm.recipe.json" \
    --set recipe.more_pcfgs=true --set span_parser.min_relative_agreement=0.75
(time "$ONLSTM" train "$CORPUS" --seeds 3 --time-budget 1h --keep-intermediate --more-pcfgs \
    --min-relative-agreement 0.75 -o "$D/tr.onlstm") > "$D/log" 2>&1
bash docs/experiments/scripts/eval_files.sh "$GOLD" "$D/tr.onlstm" "$D"/tr.pcfg*-seed111[4-6].onlstm \
    "$D"/tr.pcfg-endings-seed*.onlstm > "$D/eval.txt"
