#!/usr/bin/env bash
# pcfg.md, "A third round": E5's command with today's `en`, then the file on the PTB dev trees
set -u
cd /work/main && . .venv/bin/activate
O=runs/en3; G=../shared/data/ptb-dev/ptb-dev.trees
onlstm train ../shared/data/ptb-lm/ptb.train.txt --valid ../shared/data/ptb-lm/ptb.valid.txt \
    --teacher models/en-ptb.onlstm --teacher models/en-pcfg.onlstm --second-round --right-branching 0 \
    --time-budget 80m -o $O/en-r3.onlstm > $O/en-r3.out 2>&1
docs/experiments/scripts/eval_files.sh $G $O/en-r3.onlstm > $O/eval-r3.txt 2>&1
onlstm evaluate --gold $G -m $O/en-r3.onlstm --punctuation boundaries > $O/en-r3.boundaries.txt 2>&1
echo ALLDONE >> $O/eval-r3.txt
