#!/usr/bin/env bash
# usage: en_pcfg_rebuild.sh OUT_DIR : entry 179's stage A. en-pcfg's card command on today's main (50 minutes, one
# thread), seeds 1111 and 1112 side by side, one core each; then each file and the bundled en-pcfg scored by
# eval_files.sh on the PTB dev trees (cut at marks / ignore / remove).
set -u
. /work/main/.venv/bin/activate
out=$1; mkdir -p "$out"
for s in 1111 1112; do
  onlstm train ../shared/data/ptb-lm/ptb.train.txt --family pcfg --valid ../shared/data/ptb-lm/ptb.valid.txt \
    --time-budget 50m --threads 1 --seed $s -o "$out/en-pcfg-s$s.onlstm" > "$out/train-s$s.log" 2>&1 &
done
wait
cp models/en-pcfg.onlstm "$out/en-pcfg-bundled.onlstm"
bash docs/experiments/scripts/eval_files.sh ../shared/data/ptb-dev/ptb-dev.trees "$out"/en-pcfg-s1111.onlstm \
  "$out"/en-pcfg-s1112.onlstm "$out"/en-pcfg-bundled.onlstm | tee "$out/eval.txt"
