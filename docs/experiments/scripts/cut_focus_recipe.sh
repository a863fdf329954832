#!/usr/bin/env bash
# pcfg.md, "Focused PCFGs on the teachers' trees cut at marks": arm C, the one-hour Turkish recipe's focused PCFGs
# and span parser trained again by the recipe's own command, with the branch's code, over a copy of arm B's language
# models, its split and its record (the PCFGs' and the span parser's entries taken out, the stage-1 seconds those
# models had when B's PCFGs started). The recipe then gives the PCFGs B's deadline and the span parser what is left.
# usage: cut_focus_recipe.sh LM_SECONDS   (from the repository root of the branch; nothing beside it)
set -euo pipefail
ONLSTM=${ONLSTM:-onlstm}
CORPUS=../shared/data/ud-tr-imst/tr_imst-ud-train.txt
GOLD=../shared/data/ud-tr-imst/tr_imst-ud-dev.conllu
B=runs/cf/B C=runs/cf/C
rm -rf "$C" && mkdir -p "$C"
cp "$B"/tr.lm-seed*.onlstm "$B"/tr.recipe-train.txt "$B"/tr.recipe-valid.txt "$C"/
python3 docs/experiments/scripts/recipe_stage_copy.py "$B/tr.onlstm.recipe.json" "$C/tr.onlstm.recipe.json" \
    --only-family onlstm --stage-one-seconds "$1"
(time "$ONLSTM" train "$CORPUS" --seeds 3 --time-budget 1h --keep-intermediate -o "$C/tr.onlstm") > "$C/log" 2>&1
bash docs/experiments/scripts/eval_files.sh "$GOLD" "$C/tr.onlstm" "$C"/tr.pcfg-seed*.onlstm > "$C/eval.txt"
