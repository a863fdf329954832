#!/usr/bin/env bash
# The training runs behind the next bundled models (issue 14): more seeds and right-to-left models for
# English, a longer-trained Chinese model. Each run goes on from its checkpoint when there is one, so the
# script can be started again after a machine or session ends (--epochs is the total over all the runs).
#
#   bash scripts/train_next_models.sh [DATA_DIR] [OUT_DIR] RUN...
#
# EPOCHS (environment) is the total number of epochs of each run; default 18 for English, 5 for Chinese (the
# bundled models' recipes). WAIT=1 waits for the runs to end.
# RUN is LANG[-r][-c][-kK]-sSEED: LANG en or zh, -r for --reverse, -c for --characters (Chinese read a
# character at a time), -kK for chunk size K instead of 10, SEED the seed; e.g. en-s2, en-r-s1111, zh-c-s1111,
# zh-k5-s1111.
# Each run takes one thread; start two side by side on a 2-core machine. Then compare them on the dev trees
# with scripts/levers.py and ship with scripts/ship_model.py, by the rule in models/README.md.
set -euo pipefail
data=${1:?DATA_DIR}
out=${2:?OUT_DIR}
shift 2
mkdir -p "$out"
recipe=(--threads 1 --batch-size 20 --bptt 70 --optimizer sgd --lr 30 --clip 0.25 --emb-size 200 --hidden-size 400
        --layers 3 --chunk-size 10 --dropout 0.45 --dropout-h 0.3 --dropout-i 0.5 --dropout-e 0.1 --weight-drop 0.45
        --time-budget none)
for run in "$@"; do
    case "$run" in
        en-*) corpus=("$data/ptb-lm/ptb.train.txt" --valid "$data/ptb-lm/ptb.valid.txt" --lang en --epochs "${EPOCHS:-18}") ;;
        zh-*) [ -f "$out/zh/zh.train.txt" ] || python scripts/prepare_zh.py "$data" "$out/zh"
              corpus=("$out/zh/zh.train.txt" --valid "$out/zh/zh.valid.txt" --lang zh --max-vocab 12000 --epochs "${EPOCHS:-5}") ;;
        *) echo "unknown run $run" >&2; exit 2 ;;
    esac
    seed=${run##*-s}
    variant=()
    [[ "$run" == *-r-* ]] && variant=(--reverse)
    [[ "$run" == *-c-* ]] && variant+=(--characters)
    [[ "$run" =~ -k([0-9]+)- ]] && variant+=(--chunk-size "${BASH_REMATCH[1]}")
    resume=()
    [ -f "$out/$run.onlstm.ckpt" ] && resume=(--resume "$out/$run.onlstm.ckpt")
    nohup onlstm train "${corpus[@]}" --out "$out/$run.onlstm" "${recipe[@]}" "${variant[@]}" --seed "$seed" \
        "${resume[@]}" >> "$out/$run.log" 2>&1 &
    echo "started $run (log: $out/$run.log)"
done
[ "${WAIT:-0}" = 1 ] && wait
exit 0
