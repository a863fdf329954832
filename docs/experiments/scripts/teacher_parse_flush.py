"""How long a recipe's parse of one PCFG teacher takes in a process whose torch threads started before denormals
were flushed (`late`: `train` before it flushed from its start) or after (`early`: as `parse` runs).

    python docs/experiments/scripts/teacher_parse_flush.py MODEL TEXT LINES late|early

The teacher's trees of the first LINES lines of TEXT (words split on spaces), through induction.teachers.model_trees,
as the recipe's votes parse them; prints the seconds and a digest of the trees (the same in both modes)."""
import contextlib
import hashlib
import sys
import time

import torch

from onlstm_cli import fast
from onlstm_cli.induction.teachers import model_trees
from onlstm_cli.modelfile import load_model
from onlstm_cli.induction.models import resolve_model

model, text, count, mode = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
with fast.denormals_flushed() if mode == "early" else contextlib.nullcontext():
    torch.set_num_threads(2)
    torch.ones(256, 256) @ torch.ones(256, 256)  # torch's threads start here, as the language models' training starts them
    sentences = [line.split() for line in open(text, encoding="utf-8").read().splitlines()[:count]]
    loaded = load_model(resolve_model(model))
    start = time.perf_counter()
    trees = model_trees(loaded, sentences, span_parsers=True)  # a PCFG parses with its own trees
    seconds = time.perf_counter() - start
digest = hashlib.sha1(repr([sorted(t) for t in trees]).encode()).hexdigest()[:12]
print(f"{mode}: {len(sentences)} lines, {seconds:.2f} s, trees {digest}")
