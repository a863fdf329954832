"""Training steps of a neural PCFG (log-likelihood, forward and backward, batches of PcfgTrainConfig's size), in
words a second, on a trained file's grammar and on a fresh one of its sizes, on the same sentences.

    python docs/experiments/scripts/pcfg_step_rate.py PCFG_FILE TEXT [THREADS] [BATCHES]

It runs as `train --family pcfg` does (within fast.denormals_flushed, where the code has it, entered before
set_num_threads starts torch's threads), so that the figures of two commits can be set side by side (run it once
under each, PYTHONPATH=CHECKOUT)."""
import contextlib
import random
import sys
import time

import torch

from onlstm_cli import fast
from onlstm_cli.config import PcfgTrainConfig
from onlstm_cli.modelfile import load_model
from onlstm_cli.pcfg.model import NeuralPCFG

path, text = sys.argv[1], sys.argv[2]
threads = int(sys.argv[3]) if len(sys.argv) > 3 else 1
count = int(sys.argv[4]) if len(sys.argv) > 4 else 60
flushed = getattr(fast, "denormals_flushed", contextlib.nullcontext)()  # kept: a dropped one is closed
flushed.__enter__()  # for the rest of the script
torch.set_num_threads(threads)
loaded = load_model(path)
trained = loaded.pcfg
fresh = NeuralPCFG(trained.config)
size = PcfgTrainConfig().batch_size
with open(text, encoding="utf-8") as lines:
    sentences = [ids for ids in (loaded.vocab.encode(line.split()) for line in lines) if 2 <= len(ids) <= 40]
sentences.sort(key=len)
batches = [sentences[k:k + size] for k in range(0, len(sentences), size)]
random.Random(0).shuffle(batches)
batches = batches[:count]


def rate(model: NeuralPCFG) -> float:
    start, words = time.perf_counter(), 0
    for batch in batches:
        lengths = torch.tensor([len(ids) for ids in batch])
        ids = torch.zeros(len(batch), int(lengths.max()), dtype=torch.long)
        for row, sentence in enumerate(batch):
            ids[row, :len(sentence)] = torch.tensor(sentence)
        model.zero_grad()
        (-model.log_likelihood(ids, lengths).sum()).backward()
        words += int(lengths.sum())
    return words / (time.perf_counter() - start)


for name, model in (("trained", trained), ("fresh", fresh)):
    rate(model)  # warm-up
    print(f"{name} grammar, {threads} thread(s): {rate(model):.0f} words/s", flush=True)
