#!/usr/bin/env bash
# Self-training (models/README.md): span parsers trained on the bundled models' trees of the training text,
# three seeds for English, then each seed's dev-tree F1 as `onlstm parse` uses it, the mean ± sd, and the
# seeds in the shipping rule's order (lowest validation loss on the teacher's trees first; no gold tree).
#
#   bash scripts/self_train_models.sh [DATA_DIR] [OUT_DIR] [RUN...]     RUN: en-s1111 en-s2 en-s3 zh-s1111
#
# One thread a run, runs one after another (about 5 minutes an English epoch on this project's 2-core CPU,
# at most 8 epochs); a run that was interrupted resumes from its checkpoint when the script is started again.
# The Chinese run reads the text scripts/prepare_zh.py writes (OUT_DIR/zh/).
set -euo pipefail
data=${1:-../shared/data}
root=${2:-runs}
out=$root/st
shift $(( $# < 2 ? $# : 2 ))
runs=("$@")
[ ${#runs[@]} -gt 0 ] || runs=(en-s1111 en-s2 en-s3)
mkdir -p "$out"
for run in "${runs[@]}"; do
    lang=${run%%-*}
    seed=${run#*-s}
    if [ "$lang" = en ]; then
        corpus=$data/ptb-lm/ptb.train.txt valid=$data/ptb-lm/ptb.valid.txt teacher=models/en-ptb.onlstm
    else
        corpus=$root/zh/zh.train.txt valid=$root/zh/zh.valid.txt teacher=models/zh.onlstm
    fi
    model=$out/$lang-st-s$seed.onlstm
    resume=()
    [ -f "$model.ckpt" ] && resume=(--resume "$model.ckpt")
    onlstm train "$corpus" --teacher "$teacher" --valid "$valid" -o "$model" --seed "$seed" --threads 1 \
        --time-budget none ${resume[@]+"${resume[@]}"} 2>&1 | tee -a "$out/$lang-s$seed.log"
done
echo "English seeds as parse uses them (dev trees):"
python scripts/seed_spread.py --gold "$data/ptb-dev/ptb-dev.trees" "$out"/en-st-s*.onlstm
echo "shipping order (lowest validation loss first):"
python - "$out"/en-st-s*.onlstm <<'EOF'
import sys
import torch
rows = sorted((torch.load(p, weights_only=True)["span_parser"]["meta"]["valid_loss"], p) for p in sys.argv[1:])
for loss, path in rows:
    print(f"  {path}: validation loss {loss}")
EOF
