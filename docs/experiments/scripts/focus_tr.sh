#!/usr/bin/env bash
# pcfg.md's Turkish parse-focusing runs: TF (a PCFG focused on runs/fam-tr-onlstm's three ON-LSTMs), then TS (the
# recipe's stage 2 over them and TF), then both scored on the Turkish dev trees
set -u
cd /work/main && . .venv/bin/activate
FT="runs/fam-tr-onlstm/tr.lm-seed1111.onlstm runs/fam-tr-onlstm/tr.lm-seed1112.onlstm runs/fam-tr-onlstm/tr.lm-seed1113.onlstm"
TRG=../shared/data/ud-tr-imst/tr_imst-ud-dev.conllu
onlstm train runs/vocab/tr.train.txt --family pcfg $(for f in $FT; do echo --teacher $f; done) --right-branching auto \
  --valid runs/vocab/tr.valid.txt --time-budget 15m --threads 1 -o runs/focus-tr/pcfg.onlstm > runs/focus-tr/tf.log 2>&1
python docs/experiments/scripts/stage2_focus.py word-order 900 runs/focus-tr/student.onlstm runs/vocab/tr.train.txt \
  runs/vocab/tr.valid.txt runs/focus-tr/pcfg.onlstm $FT > runs/focus-tr/ts.log 2>&1
docs/experiments/scripts/eval_files.sh $TRG runs/focus-tr/pcfg.onlstm runs/focus-tr/student.onlstm > runs/focus-tr/eval.txt 2>&1
echo done > runs/focus-tr/done
