#!/usr/bin/env bash
# pcfg.md, "A small text's PCFG that reads its words' character n-grams": the ten-minute Turkish recipe's PCFG seed 1111
# again with --units ngrams, on the probe's code (PYTHONPATH: a worktree of main with pcfg_ngrams.patch applied,
# default /work/wt-ng), then on the dev trees.  usage: pcfg_ngrams_tr.sh
cd /work/main
export PYTHONPATH=${PYTHONPATH:-/work/wt-ng}
docs/experiments/scripts/pcfg_focused_arm.sh runs/lg-T 1111 runs/pcfg-ngrams/T-s1111.onlstm \
  ../shared/data/ud-tr-imst/tr_imst-ud-dev.conllu --units ngrams
