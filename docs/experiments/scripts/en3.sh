#!/usr/bin/env bash
# pcfg.md, "`en` rebuilt on three teachers": once G (runs/en3/focus-sr.onlstm, started by hand with the rule's
# command) has ended, S (E5's command with G as a third teacher), then every file on the PTB dev trees
set -u
cd /work/main && . .venv/bin/activate
O=runs/en3; G=../shared/data/ptb-dev/ptb-dev.trees
while pgrep -f "focus-sr.onlstm" > /dev/null; do sleep 20; done
onlstm train ../shared/data/ptb-lm/ptb.train.txt --valid ../shared/data/ptb-lm/ptb.valid.txt \
    --teacher models/en-ptb.onlstm --teacher models/en-pcfg.onlstm --teacher $O/focus-sr.onlstm \
    --second-round --right-branching 0 --time-budget 80m -o $O/en3.onlstm > $O/en3.out 2>&1
docs/experiments/scripts/eval_files.sh $G $O/en3.onlstm $O/focus-sr.onlstm > $O/eval.txt 2>&1
onlstm evaluate --gold $G -m $O/en3.onlstm --punctuation boundaries > $O/en3.boundaries.txt 2>&1
echo ALLDONE >> $O/eval.txt
