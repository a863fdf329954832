#!/usr/bin/env bash
# A GPU check of parse-focusing (benchmarks/README.md, "Parse-focusing on a GPU"): the PCFG's masked inside pass on
# CUDA against CPU, a focused PCFG trained and parsing on CUDA, and the PCFG and fast tests with CUDA present.
# Made for the lent machine, from the repository's root, after (here, where ../shared is):
#   mkdir -p .gpu && head -2000 ../shared/data/ptb-lm/ptb.train.txt > .gpu/ptb2k.txt
#   head -200 ../shared/data/ptb-lm/ptb.valid.txt > .gpu/valid200.txt; head -5 ../shared/data/ptb-lm/ptb.test.txt > .gpu/sample.txt
#   pip download --no-deps --only-binary=:all: --python-version 3.12 --platform manylinux2014_x86_64 -d .whl nltk
# (.gpu and .whl carried along: the machine's image has torch, triton, typer and rich, but not nltk)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit
export PYTHONUNBUFFERED=1
nvidia-smi -L; lscpu | grep "Model name"; python3 -c "import torch, triton; print(torch.__version__, triton.__version__)"
timeout 200 python3 benchmarks/bench_pcfg_gpu.py --repeats 3 2>&1 | tee $OUT/bench.txt
timeout 180 python3 -m onlstm_cli train .gpu/ptb2k.txt --family pcfg --teacher models/en-ptb.onlstm --teacher models/en-pcfg.onlstm \
   --valid .gpu/valid200.txt --time-budget 1m --device cuda -o /tmp/f.onlstm 2>&1 | tail -25 | tee $OUT/focus.txt
echo "train rc ${PIPESTATUS[0]}"
python3 -m onlstm_cli info /tmp/f.onlstm 2>&1 | tee -a $OUT/focus.txt
python3 -m onlstm_cli parse -m /tmp/f.onlstm --device cuda -f json < .gpu/sample.txt 2>&1 | head -c 1500 | tee -a $OUT/focus.txt
echo
timeout 200 python3 -m pytest -q -x -n 8 -p no:cacheprovider tests/pcfg tests/training/pcfg tests/fast 2>&1 | tail -15 | tee $OUT/tests.txt
