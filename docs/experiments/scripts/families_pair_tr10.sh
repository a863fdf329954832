#!/usr/bin/env bash
# pcfg.md, "Families by corpus size at ten minutes": issue 53's 10-minute check (the first 2,000 lines of the
# Turkish train text, --seeds 2 --time-budget 10m), ON-LSTMs alone beside both families, one thread each, then
# each arm's shipped file and its teachers scored on the Turkish dev trees, both protocols, and each arm's minutes
set -u
cd /work/main && . .venv/bin/activate
GOLD=../shared/data/ud-tr-imst/tr_imst-ud-dev.conllu
mkdir -p runs/fam-tr10-onlstm runs/fam-tr10-both
head -n 2000 ../shared/data/ud-tr-imst/tr_imst-ud-train.txt > runs/fam-tr10-c.txt
for arm in onlstm both; do
  fam=onlstm; [ $arm = both ] && fam=onlstm,pcfg
  ( start=$(date +%s)
    onlstm train runs/fam-tr10-c.txt --seeds 2 --time-budget 10m --threads 1 --families $fam \
        -o runs/fam-tr10-$arm/tr.onlstm > runs/fam-tr10-$arm/train.log 2>&1
    echo "wall $(( $(date +%s) - start )) s" >> runs/fam-tr10-$arm/train.log ) &
done
wait
for D in runs/fam-tr10-onlstm runs/fam-tr10-both; do
  docs/experiments/scripts/eval_files.sh $GOLD $D/tr.onlstm $D/tr.*seed*.onlstm > $D/eval.txt 2>&1
done
echo ALLDONE > runs/fam-tr10-both/done
