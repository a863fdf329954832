# Sourced by cosine_pt_seeds.sh and cosine_pt_more_seeds.sh (small-corpora.md, rule (e) on Portuguese): writes the
# recipe's split of the Bosque train text (every 20th line held out) and defines run SCHEDULE SEED, a fresh plain
# run of 15 minutes on one thread with that --lr-schedule
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
