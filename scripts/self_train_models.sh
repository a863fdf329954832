#!/usr/bin/env bash
# Self-training (models/README.md): span parsers trained on language models' trees of the training text, then
# each English run's dev-tree F1 as `onlstm parse` uses it, the mean ± sd, and the shipping rule's order
# (lowest validation loss on the teachers' trees first; no gold tree).
#
#   bash scripts/self_train_models.sh [DATA_DIR] [OUT_DIR] [RUN...]
#
# RUN is LANG-RECIPE-sSEED: LANG en or zh; RECIPE vote (the votes of the language's three language-model
# seeds: the bundled model and OUT_DIR/LANG-s2.onlstm, OUT_DIR/LANG-s3.onlstm, which
# scripts/train_default_models.sh trains, read with the bundled model's parse layer and split rule) or st (the bundled model alone). Default: the shipped English
# recipe, en-vote-s1111 en-vote-s2 en-vote-s3. EPOCHS (default 3 for English, 2 for Chinese) is what this
# project's session had time for: about 8-12 minutes an English epoch and 25 a Chinese one on its 2-core CPU
# with several runs side by side. One thread a run, runs one after another; a run that was interrupted
# resumes from its checkpoint when the script is started again. Chinese reads OUT_DIR/zh/ (prepare_zh.py).
set -euo pipefail
data=${1:-../shared/data}
root=${2:-runs}
out=$root/st
shift $(( $# < 2 ? $# : 2 ))
runs=("$@")
[ ${#runs[@]} -gt 0 ] || runs=(en-vote-s1111 en-vote-s2 en-vote-s3)
mkdir -p "$out"
for run in "${runs[@]}"; do
    lang=${run%%-*}
    recipe=${run#*-}; recipe=${recipe%%-*}
    seed=${run##*-s}
    if [ "$lang" = en ]; then
        corpus=$data/ptb-lm/ptb.train.txt valid=$data/ptb-lm/ptb.valid.txt bundled=models/en-ptb.onlstm
        epochs=${EPOCHS:-3} layer=(--parse-layer 2 --split paper)
    else
        corpus=$root/zh/zh.train.txt valid=$root/zh/zh.valid.txt bundled=models/zh.onlstm
        epochs=${EPOCHS:-2} layer=(--parse-layer 3 --split symmetric)
    fi
    teachers=(--teacher "$bundled")
    if [ "$recipe" = vote ]; then  # the other seeds parse with the bundled model's layer and split rule
        for other in 2 3; do
            python scripts/ship_model.py "$root/$lang-s$other.onlstm" "$root/$lang-s$other-as-bundled.onlstm" "${layer[@]}"
            teachers+=(--teacher "$root/$lang-s$other-as-bundled.onlstm")
        done
    fi
    model=$out/$run.onlstm
    resume=()
    [ -f "$model.ckpt" ] && resume=(--resume "$model.ckpt")
    onlstm train "$corpus" "${teachers[@]}" --valid "$valid" -o "$model" --seed "$seed" --epochs "$epochs" \
        --threads 1 --time-budget none ${resume[@]+"${resume[@]}"} 2>&1 | tee -a "$out/$run.log"
done
english=("$out"/en-*.onlstm)
[ -e "${english[0]}" ] || exit 0
echo "English runs as parse uses them (dev trees):"
python scripts/seed_spread.py --gold "$data/ptb-dev/ptb-dev.trees" "${english[@]}"
echo "shipping order within a recipe (lowest validation loss first):"
python - "${english[@]}" <<'EOF'
import sys
from pathlib import Path
import torch
rows = sorted((Path(p).name.split("-")[1], torch.load(p, weights_only=True)["span_parser"]["meta"]["valid_loss"], p)
              for p in sys.argv[1:])
for recipe, loss, path in rows:
    print(f"  {recipe}: {path}: validation loss {loss}")
EOF
echo "ship: cp RUN models/en-ptb.onlstm (a self-trained file keeps the bundled language model inside)"
