#!/usr/bin/env bash
# usage: eval_ptb.sh FILE... : each file (or bundled name) on the PTB dev trees: sentence F1, corpus F1 and
# sentence F1 on sentences of at most 10 words, both protocols (cut at marks / --punctuation ignore)
set -u
. /work/main/.venv/bin/activate
for f in "$@"; do
  tag=$(basename "$f"); mkdir -p runs/eval-ptb
  for p in cut ignore; do
    opt=""; [ $p = ignore ] && opt="--punctuation ignore"
    onlstm evaluate --gold ../shared/data/ptb-dev/ptb-dev.trees -m "$f" $opt --json > "runs/eval-ptb/$tag.$p.json" \
      2> "runs/eval-ptb/$tag.$p.err" || echo "FAIL $f $p"
  done
  python - "$tag" <<'PY'
import json, sys
tag = sys.argv[1]
rows = []
for p in ("cut", "ignore"):
    s = json.load(open(f"runs/eval-ptb/{tag}.{p}.json"))["systems"]
    k = next(iter(s))
    rows.append(f"{p}: {s[k]['sentence_f1']:.2f} / {s[k]['corpus_f1']:.2f} / {s[k]['sentence_f1_len_le_10']:.2f}")
print(f"{tag} ({k}): " + "; ".join(rows))
PY
done
