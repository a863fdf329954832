#!/usr/bin/env bash
# Entry 120's arms: the one-hour Turkish recipe's stage 2 with --min-relative-agreement 0.75, rerun by the recipe's
# own command over a copy of a finished recipe's stage 1 (its teachers, held-out split and record, the span
# parser's entry taken out and the option added). Stage 1 is deterministic and the option does not touch it.
# Run from the repository root with the branch's code; one arm at a time, nothing beside it.
set -euo pipefail
ONLSTM=${ONLSTM:-onlstm}
CORPUS=../shared/data/ud-tr-imst/tr_imst-ud-train.txt
GOLD=../shared/data/ud-tr-imst/tr_imst-ud-dev.conllu
copy_stage_one() {  # SOURCE DEST
    rm -rf "$2" && mkdir -p "$2"
    cp "$1"/tr.lm-seed*.onlstm "$1"/tr.pcfg*-seed*.onlstm "$2"/
    cp runs/tr1h-cut/tr.recipe-train.txt runs/tr1h-cut/tr.recipe-valid.txt "$2"/  # the split is the corpus's own
    python3 docs/experiments/scripts/recipe_stage_copy.py "$1/tr.onlstm.recipe.json" "$2/tr.onlstm.recipe.json" \
        --set span_parser.min_relative_agreement=0.75
}
arm() {  # NAME SOURCE [OPTION]
    copy_stage_one "runs/$2" "runs/apart/$1"
    (time "$ONLSTM" train "$CORPUS" --seeds 3 --time-budget 1h -o "runs/apart/$1/tr.onlstm" ${3:-}) \
        > "runs/apart/$1/log" 2>&1
    bash docs/experiments/scripts/eval_files.sh "$GOLD" "runs/apart/$1/tr.onlstm" > "runs/apart/$1/eval.txt"
}
arm "${1:-six}" "${2:-tr1h-cut}" "${3:-}"
