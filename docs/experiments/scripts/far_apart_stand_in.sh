#!/usr/bin/env bash
# pcfg.md, entries 173-178's probes (the stand-in's and Turkish teachers): a finished one-hour recipe (DIR/STEM.onlstm
# and its record) run on from its stage 1 by the recipe's own command with --min-relative-agreement 0.75, or with what
# COPY_OPTION… records instead: its language models and PCFGs copied, its split made again by the recipe's
# held_out_split, the span parser's stages taken out of the record; the span parser and its second round then train
# in what the hour has left, as the run's own did. From the repository root; nothing beside it.
# usage: far_apart_stand_in.sh CORPUS GOLD DIR STEM OUT_DIR [COPY_OPTION…]
# COPY_OPTION…: recipe_stage_copy.py's, in place of the option (e.g. --no-vote-family onlstm: the PCFGs vote alone)
set -euo pipefail
ONLSTM=${ONLSTM:-onlstm}
CORPUS=$1 GOLD=$2 DIR=$3 STEM=$4 OUT=$5; shift 5
COPY=("$@") OPTION=()
[ ${#COPY[@]} -eq 0 ] && COPY=(--set span_parser.min_relative_agreement=0.75) OPTION=(--min-relative-agreement 0.75)
rm -rf "$OUT" && mkdir -p "$OUT"
cp "$DIR/$STEM".lm-seed*.onlstm "$DIR/$STEM".pcfg-seed*.onlstm "$OUT"/
python3 - "$CORPUS" "$OUT/$STEM.onlstm" <<'PY'
import sys
from pathlib import Path
from onlstm_cli.training.recipe.files import held_out_split
held_out_split(Path(sys.argv[1]), Path(sys.argv[2]))
PY
python3 docs/experiments/scripts/recipe_stage_copy.py "$DIR/$STEM.onlstm.recipe.json" "$OUT/$STEM.onlstm.recipe.json" \
    "${COPY[@]}"
(time "$ONLSTM" train "$CORPUS" --seeds 3 --time-budget 1h "${OPTION[@]}" -o "$OUT/$STEM.onlstm") \
    > "$OUT/log" 2>&1
bash docs/experiments/scripts/eval_files.sh "$GOLD" "$OUT/$STEM.onlstm" "$OUT/$STEM.round1.onlstm" > "$OUT/eval.txt"
