#!/usr/bin/env bash
# usage: en_on_new_pcfg.sh OUT_DIR NEW_PCFG : entry 179's stage B. Run E5's command (models/en-ptb.md) with the
# previous en (the file at 4320228) and NEW_PCFG as teachers, on both threads and 60 minutes; then the student and the
# bundled en scored by eval_files.sh on the PTB dev trees, with
# their F1 on sentences of at most 10 words.
set -u
. /work/main/.venv/bin/activate
out=$1; pcfg=$2
[ -f "$out/en-old.onlstm" ] || git show 4320228:models/en-ptb.onlstm > "$out/en-old.onlstm"
onlstm train ../shared/data/ptb-lm/ptb.train.txt --valid ../shared/data/ptb-lm/ptb.valid.txt \
  --teacher "$out/en-old.onlstm" --teacher "$pcfg" --second-round --right-branching auto \
  --time-budget 60m --threads 2 -o "$out/e7.onlstm" > "$out/e7.log" 2>&1 || { echo "train failed"; exit 1; }
cp models/en-ptb.onlstm "$out/en-bundled.onlstm"
bash docs/experiments/scripts/eval_files.sh ../shared/data/ptb-dev/ptb-dev.trees "$out/e7.onlstm" \
  "$out/en-bundled.onlstm" | tee "$out/eval-e7.txt"
for f in "$out/e7.onlstm" "$out/en-bundled.onlstm"; do  # F1 on sentences of at most 10 words, from the same reports
  python -c 'import json,sys; f=sys.argv[1]; print(f, "<=10 words:", " / ".join("%.2f" % next(iter(json.load(open(f"{f}.{p}.json"))["systems"].values()))["sentence_f1_len_le_10"] for p in ("cut","ignore","remove")))' "$f"
done | tee -a "$out/eval-e7.txt"
