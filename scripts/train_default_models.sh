#!/usr/bin/env bash
# Retrain the bundled default models (models/en-ptb.onlstm, models/zh.onlstm) from ../shared/data.
#
#   bash scripts/train_default_models.sh [DATA_DIR] [OUT_DIR] [MINUTES_EN] [MINUTES_ZH]
#
# Defaults: DATA_DIR=../shared/data OUT_DIR=runs, 75 and 70 minutes. The two runs go side by side with one
# thread each (2-core machine). Each can be resumed with `onlstm train ... --resume OUT.ckpt`.
set -euo pipefail
data=${1:-../shared/data}
out=${2:-runs}
min_en=${3:-75}
min_zh=${4:-70}
mkdir -p "$out"

python scripts/prepare_zh.py "$data" "$out/zh"

onlstm train "$data/ptb-lm/ptb.train.txt" --valid "$data/ptb-lm/ptb.valid.txt" --out "$out/en.onlstm" \
    --lang en --time-budget "${min_en}m" --threads 1 --batch-size 64 > "$out/en.log" 2>&1 &
onlstm train "$out/zh/zh.train.txt" --valid "$out/zh/zh.valid.txt" --out "$out/zh.onlstm" \
    --lang zh --max-vocab 12000 --time-budget "${min_zh}m" --threads 1 --batch-size 64 > "$out/zh.log" 2>&1 &
wait
echo "trained: $out/en.onlstm $out/zh.onlstm (logs: $out/en.log $out/zh.log)"
echo "then: onlstm evaluate --gold $data/ptb-dev/ptb-dev.trees --model $out/en.onlstm --all-layers"
echo "      onlstm evaluate --gold $data/ud-zh-gsdsimp/zh_gsdsimp-ud-dev.conllu --model $out/zh.onlstm --all-layers"
