#!/usr/bin/env bash
# Retrain the bundled default models (models/en-ptb.onlstm, models/zh.onlstm) from the shared data.
#
#   bash scripts/train_default_models.sh [DATA_DIR] [OUT_DIR] [MINUTES_EN] [MINUTES_ZH]
#
# Defaults: DATA_DIR=../shared/data OUT_DIR=runs, 72 and 63 minutes: the budgets of the shipped models,
# trained side by side with one thread each on a 2-core CPU. A run can be continued with
# `onlstm train ... --resume OUT.ckpt --time-budget <larger total>`. Then ship with
#   python scripts/ship_model.py OUT_DIR/en.onlstm models/en-ptb.onlstm --parse-layer N
set -euo pipefail
data=${1:-../shared/data}
out=${2:-runs}
min_en=${3:-72}
min_zh=${4:-63}
mkdir -p "$out"
recipe=(--threads 1 --batch-size 20 --bptt 70 --optimizer sgd --lr 30 --clip 0.25 --emb-size 200 --hidden-size 400
        --layers 3 --chunk-size 10 --dropout 0.45 --dropout-h 0.3 --dropout-i 0.5 --dropout-e 0.1 --weight-drop 0.45
        --seed 1111)

python scripts/prepare_zh.py "$data" "$out/zh"

onlstm train "$data/ptb-lm/ptb.train.txt" --valid "$data/ptb-lm/ptb.valid.txt" --out "$out/en.onlstm" \
    --lang en --time-budget "${min_en}m" "${recipe[@]}" > "$out/en.log" 2>&1 &
onlstm train "$out/zh/zh.train.txt" --valid "$out/zh/zh.valid.txt" --out "$out/zh.onlstm" \
    --lang zh --max-vocab 12000 --time-budget "${min_zh}m" "${recipe[@]}" > "$out/zh.log" 2>&1 &
wait
echo "trained: $out/en.onlstm $out/zh.onlstm (logs: $out/en.log $out/zh.log)"
echo "then: onlstm evaluate --gold $data/ptb-dev/ptb-dev.trees --model $out/en.onlstm --all-layers"
echo "      onlstm evaluate --gold $data/ud-zh-gsdsimp/zh_gsdsimp-ud-dev.conllu --model $out/zh.onlstm --all-layers"
