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
python3 - "$C/tr.onlstm.recipe.json" "$D/tr.onlstm.recipe.json" <<'PY'
import json, os, sys
record = json.load(open(sys.argv[1]))
for name in ("corpus", "valid"):  # the recipe's split of the corpus, now beside the copy
    path = record["options"][name]
    record["options"][name] = os.path.join(os.path.dirname(os.path.realpath(sys.argv[2])), os.path.basename(path))
record["span_parser"] = None  # the stage not yet run, as an interrupted recipe records it
record["stage_seconds"].pop("span_parser")
record["options"]["recipe"]["more_pcfgs"] = True
record["options"]["span_parser"]["min_relative_agreement"] = 0.75
json.dump(record, open(sys.argv[2], "w"), indent=1)
PY
(time "$ONLSTM" train "$CORPUS" --seeds 3 --time-budget 1h --keep-intermediate --more-pcfgs \
    --min-relative-agreement 0.75 -o "$D/tr.onlstm") > "$D/log" 2>&1
bash docs/experiments/scripts/eval_files.sh "$GOLD" "$D/tr.onlstm" "$D"/tr.pcfg*-seed111[4-6].onlstm \
    "$D"/tr.pcfg-endings-seed*.onlstm > "$D/eval.txt"
