#!/usr/bin/env bash
# small-corpora.md, "(e) on Portuguese over three seeds": the recipe's split of the Bosque train text, then
# cosine seeds 1112 and 1113 side by side, then the baseline's seed 1113, one thread each, 15 minutes; dev F1
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
run cosine 1112 & run cosine 1113 & wait
run constant 1113
docs/experiments/scripts/eval_files.sh ../shared/data/ud-pt-bosque/pt_bosque-ud-dev.conllu \
  runs/lr/pt-cosine-s1112.onlstm runs/lr/pt-cosine-s1113.onlstm runs/lr/pt-constant-s1113.onlstm > runs/lr/pt-seeds.eval 2>&1
python docs/experiments/scripts/curve.py runs/lr/pt-*-s111[23].log > runs/lr/pt-seeds.curve
echo ALLDONE > runs/lr/pt-seeds.done
