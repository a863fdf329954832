# Sourced by cosine_pt_seeds.sh, cosine_pt_more_seeds.sh, lr60_probe.sh and dropout_probe.sh (small-corpora.md):
# writes the recipe's split of the Bosque and IMST train texts (every 20th line held out) as runs/vocab/{pt,tr}.
# {train,valid}.txt and defines run SCHEDULE SEED, a fresh plain Portuguese run of 15 minutes on one thread with that
# --lr-schedule
cd /work/main && . .venv/bin/activate
mkdir -p runs/vocab runs/lr
python - <<'PY'
from pathlib import Path
for lang, text in (("pt", "ud-pt-bosque/pt_bosque-ud-train.txt"), ("tr", "ud-tr-imst/tr_imst-ud-train.txt")):
    lines = [l for l in Path("../shared/data", text).read_text(encoding="utf-8").splitlines() if l.strip()]
    Path(f"runs/vocab/{lang}.train.txt").write_text("".join(l + "\n" for k, l in enumerate(lines) if k % 20 != 19), encoding="utf-8")
    Path(f"runs/vocab/{lang}.valid.txt").write_text("".join(l + "\n" for k, l in enumerate(lines) if k % 20 == 19), encoding="utf-8")
PY
run() { # SCHEDULE SEED
  onlstm train runs/vocab/pt.train.txt --valid runs/vocab/pt.valid.txt --seed $2 --threads 1 --time-budget 15m \
    --lr-schedule $1 -o runs/lr/pt-$1-s$2.onlstm > runs/lr/pt-$1-s$2.log 2>&1
}
