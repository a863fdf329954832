#!/usr/bin/env bash
# after runs/lr/seeds.sh: score its runs, then small-corpora.md's stage-2 pairs (lean from trees / word order)
set -u
cd /work/main && . .venv/bin/activate
while [ ! -f runs/lr/seeds.done ]; do sleep 20; done
S=docs/experiments/scripts
TRG=../shared/data/ud-tr-imst/tr_imst-ud-dev.conllu; PTG=../shared/data/ud-pt-bosque/pt_bosque-ud-dev.conllu
( $S/eval_files.sh $TRG runs/lr/tr-base-s111{2,3}.onlstm runs/lr/tr-avg100-s111{2,3}.onlstm > runs/lr/seeds.tr.eval 2>&1 ) &
( $S/eval_files.sh $PTG runs/lr/pt-base-s1112.onlstm runs/lr/pt-avg100-s1112.onlstm > runs/lr/seeds.pt.eval 2>&1 ) &
wait
st() { # ARM LEAN_FROM BUDGET TRAIN VALID FILES...
  local arm=$1; shift
  python $S/stage2_lean.py $1 $2 runs/lean/$arm.onlstm $3 $4 "${@:5}" > runs/lean/$arm.log 2>&1
}
FT="runs/fam-tr-onlstm/tr.lm-seed1111.onlstm runs/fam-tr-onlstm/tr.lm-seed1112.onlstm runs/fam-tr-onlstm/tr.lm-seed1113.onlstm"
PT="runs/lr/pt-base.onlstm runs/lr/pt-avg100.onlstm runs/lr/pt-base-s1112.onlstm runs/lr/pt-avg100-s1112.onlstm"
B10="runs/budget10/c.lm-seed1111.onlstm runs/budget10/c.lm-seed1112.onlstm"
st tr-trees trees 900 runs/vocab/tr.train.txt runs/vocab/tr.valid.txt $FT &
st tr-order word-order 900 runs/vocab/tr.train.txt runs/vocab/tr.valid.txt $FT & wait
st pt-trees trees 900 runs/vocab/pt.train.txt runs/vocab/pt.valid.txt $PT &
st pt-order word-order 900 runs/vocab/pt.train.txt runs/vocab/pt.valid.txt $PT & wait
st b10-trees trees 144 runs/guard/b10.train.txt runs/guard/b10.valid.txt $B10 &
st b10-order word-order 144 runs/guard/b10.train.txt runs/guard/b10.valid.txt $B10 & wait
( $S/eval_files.sh $TRG runs/lean/tr-trees.onlstm runs/lean/tr-order.onlstm runs/lean/b10-trees.onlstm runs/lean/b10-order.onlstm > runs/lean/tr.eval 2>&1 ) &
( $S/eval_files.sh $PTG runs/lean/pt-trees.onlstm runs/lean/pt-order.onlstm > runs/lean/pt.eval 2>&1 ) &
wait
echo ALLDONE > runs/lean/chain.done
