#!/usr/bin/env bash
# pcfg.md, "A student never below the teacher the check ranks above it": the 10-minute recipe (default families,
# --seeds 2, one thread) on the first 2,000 train lines of Turkish (seeds 2111, 3111) and Portuguese (1111,
# 2111), one run at a time; then each run's shipped file and every teacher on the language's dev trees
set -u
cd /work/main && . .venv/bin/activate
mkdir -p runs/ship-teacher
for spec in tr:2111 tr:3111 pt:1111 pt:2111; do
  lang=${spec%%:*}; seed=${spec##*:}; D=runs/ship-teacher/$lang-$seed; mkdir -p $D
  case $lang in
    tr) TXT=../shared/data/ud-tr-imst/tr_imst-ud-train.txt; GOLD=../shared/data/ud-tr-imst/tr_imst-ud-dev.conllu ;;
    pt) TXT=../shared/data/ud-pt-bosque/pt_bosque-ud-train.txt; GOLD=../shared/data/ud-pt-bosque/pt_bosque-ud-dev.conllu ;;
  esac
  head -n 2000 $TXT > $D/c.txt
  start=$(date +%s)
  onlstm train $D/c.txt --seeds 2 --seed $seed --time-budget 10m --threads 1 -o $D/m.onlstm > $D/train.log 2>&1
  echo "wall $(( $(date +%s) - start )) s" >> $D/train.log
  onlstm info $D/m.onlstm > $D/info.txt 2>&1
  docs/experiments/scripts/eval_files.sh $GOLD $D/m.onlstm $D/m.*seed*.onlstm $(ls $D/m.student.onlstm 2>/dev/null) > $D/eval.txt 2>&1
done
echo ALLDONE > runs/ship-teacher/done
