#!/usr/bin/env bash
# pcfg.md, "Teachers that agree far less than the others": 24-minute students on runs/more-tr1h's teachers, side by
# side on one thread each as more_pcfgs_nine.sh trains them: X, the nine whose mean agreement with the other teachers
# (the record's `agreement`, validation text, no gold tree) is at least 0.75 x the twelve's median; T2, all twelve again
. /work/main/.venv/bin/activate; cd /work/main
T=runs/more-tr1h; S=runs/tr1h-cut; O=runs/agree; G=../shared/data/ud-tr-imst/tr_imst-ud-dev.conllu
mkdir -p $O
KEPT=$(python - <<'PY'
import json, statistics
teachers = json.load(open("runs/more-tr1h/tr.onlstm.recipe.json"))["teachers"]
line = 0.75 * statistics.median(t["agreement"] for t in teachers)
print(" ".join(f"--teacher runs/more-tr1h/{t['path']}" for t in teachers if t["agreement"] >= line))
PY
)
ALL=""; for t in lm-seed1111 lm-seed1112 lm-seed1113 pcfg-seed1111 pcfg-seed1112 pcfg-seed1113 pcfg-seed1114 \
  pcfg-seed1115 pcfg-seed1116 pcfg-endings-seed1111 pcfg-endings-seed1112 pcfg-endings-seed1113; do
  ALL="$ALL --teacher $T/tr.$t.onlstm"; done
echo "X: $KEPT" > $O/teachers.txt
arm() { # NAME TEACHERS…
  local name=$1; shift
  python docs/experiments/scripts/student_until_budget.py train $S/tr.recipe-train.txt --valid $S/tr.recipe-valid.txt \
    "$@" --teacher-layers 2,3 --right-branching auto --time-budget 24m --threads 1 -o $O/$name.onlstm > $O/$name.log 2>&1
}
arm X $KEPT & arm T2 $ALL & wait
bash docs/experiments/scripts/eval_files.sh $G $O/X.onlstm $O/T2.onlstm > $O/eval.txt 2>&1
echo ALLDONE >> $O/eval.txt
