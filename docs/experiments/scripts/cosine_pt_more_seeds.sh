#!/usr/bin/env bash
# small-corpora.md, "(e) on Portuguese over seven seeds": the recipe's split of the Bosque train text, then for each
# of seeds 1114-1117 the cosine and the constant run side by side, one thread each, 15 minutes; their dev F1 and curves
set -u
cd /work/main && . .venv/bin/activate
mkdir -p runs/vocab runs/lr
python - <<'PY'
from pathlib import Path
lines = [l for l in Path("../shared/data/ud-pt-bosque/pt_bosque-ud-train.txt").read_text(encoding="utf-8").splitlines() if l.strip()]
Path("runs/vocab/pt.train.txt").write_text("".join(l + "\n" for k, l in enumerate(lines) if k % 20 != 19), encoding="utf-8")
Path("runs/vocab/pt.valid.txt").write_text("".join(l + "\n" for k, l in enumerate(lines) if k % 20 == 19), encoding="utf-8")
PY
run() { # SCHEDULE SEED
  onlstm train runs/vocab/pt.train.txt --valid runs/vocab/pt.valid.txt --seed $2 --threads 1 --time-budget 15m \
    --lr-schedule $1 -o runs/lr/pt-$1-s$2.onlstm > runs/lr/pt-$1-s$2.log 2>&1
}
for seed in 1114 1115 1116 1117; do
  run cosine $seed & run constant $seed & wait
done
docs/experiments/scripts/eval_files.sh ../shared/data/ud-pt-bosque/pt_bosque-ud-dev.conllu \
  runs/lr/pt-{cosine,constant}-s111[4-7].onlstm > runs/lr/pt-more-seeds.eval 2>&1
python docs/experiments/scripts/curve.py runs/lr/pt-*-s111[4-7].log > runs/lr/pt-more-seeds.curve
echo ALLDONE > runs/lr/pt-more-seeds.done
