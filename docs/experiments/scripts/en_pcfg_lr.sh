#!/usr/bin/env bash
# usage: en_pcfg_lr.sh OUT_DIR LR : entry 181's probe. en-pcfg's card command with --lr LR, seeds 1111 and 1112 side
# by side, one core each; a copy of each file is kept whenever training writes it (a better validation perplexity:
# OUT_DIR/s{seed}.epoch{N}.onlstm); then each kept file and each copy scored by eval_files.sh on the PTB dev trees.
set -u
. /work/main/.venv/bin/activate
out=$1; lr=$2; mkdir -p "$out"
for s in 1111 1112; do
  onlstm train ../shared/data/ptb-lm/ptb.train.txt --family pcfg --valid ../shared/data/ptb-lm/ptb.valid.txt \
    --time-budget 50m --threads 1 --seed $s --lr "$lr" -o "$out/s$s.onlstm" > "$out/train-s$s.log" 2>&1 &
done
watch_copies() {  # the file is written by a rename, so a copy is a whole file
  while kill -0 "$@" 2>/dev/null; do
    for s in 1111 1112; do
      e=$(grep "| saved" "$out/train-s$s.log" | tail -n 1 | sed 's/.*epoch \([0-9]*\) .*/\1/')
      [ -n "$e" ] && [ -f "$out/s$s.onlstm" ] && [ ! -f "$out/s$s.epoch$e.onlstm" ] && cp "$out/s$s.onlstm" "$out/s$s.epoch$e.onlstm"
    done
    sleep 10
  done
}
watch_copies $(jobs -p)
wait
bash docs/experiments/scripts/eval_files.sh ../shared/data/ptb-dev/ptb-dev.trees "$out"/s1111.onlstm "$out"/s1112.onlstm \
  "$out"/s*.epoch*.onlstm | tee "$out/eval.txt"
