#!/usr/bin/env bash
# usage: eval_files.sh GOLD FILE... : each file's own row, three protocols: cut at marks / --punctuation ignore /
# --punctuation remove (the literature's: the gold words alone, parsed as `parse --pretokenized` parses them);
# $ONLSTM: the command that evaluates (default onlstm; a probe's patched one, e.g. "python …/suffix_units_probe.py")
set -u
. /work/main/.venv/bin/activate
gold=$1; shift
for f in "$@"; do
  for p in cut ignore remove; do
    opt=""; [ $p != cut ] && opt="--punctuation $p"
    ${ONLSTM:-onlstm} evaluate --gold "$gold" -m "$f" $opt --json > "$f.$p.json" 2> "$f.$p.err" || echo "FAIL $f $p"
  done
  python - "$f" <<'PY'
import json,sys
f=sys.argv[1]; out=[]
for p in ("cut","ignore","remove"):
    s=json.load(open(f"{f}.{p}.json"))["systems"]
    k=next(iter(s)); out.append(f"{s[k]['sentence_f1']:.2f}")
print(f"{f}: {' / '.join(out)} ({k})")
PY
done
