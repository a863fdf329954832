"""A language model's perplexity: on a batchified stream (validation during training), or on a text read as the
model's training text was (`onlstm evaluate --text`)."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import torch

from onlstm_cli.lm.model import ONLSTMLanguageModel
from onlstm_cli.text.corpus import batchify, read_as_trained, token_stream


@torch.no_grad()
def evaluate_perplexity(model: ONLSTMLanguageModel, data: torch.Tensor, bptt: int) -> float:
    """Perplexity of a batchified stream, state carried across windows."""
    model.eval()
    state, total_loss, total = None, 0.0, 0
    for i in range(0, data.shape[0] - 1, bptt):
        seq = min(bptt, data.shape[0] - 1 - i)
        x, y = data[i:i + seq], data[i + 1:i + 1 + seq]
        out = model(x, state, targets=y)
        state = out.state
        total_loss += out.loss.item() * y.numel()
        total += y.numel()
    return math.exp(min(total_loss / max(total, 1), 50.0))


def text_perplexity(loaded, path: str | Path, bptt: int = 70, batch_size: int | None = None) -> float:
    """A trained model's perplexity on a text, read exactly as its training text and validation were."""
    batch_size = batch_size or loaded.meta.get("train", {}).get("eval_batch_size", 10)
    sentences = read_as_trained(path, loaded, loaded.config.reverse)
    stream = batchify(token_stream(sentences, loaded.vocab), batch_size)
    return evaluate_perplexity(loaded.model, stream.to(next(loaded.model.parameters()).device), bptt)


UNIGRAM_SMOOTHING = (0.01, 0.1, 0.5, 1.0)  # add-k counts; the best k is taken: the baseline at its best


def unigram_perplexity(train_counts, valid_ids, vocab_size: int) -> float:
    """The validation text's perplexity under the training text's word frequencies alone (a unigram model of
    add-k counts, the best k of UNIGRAM_SMOOTHING): what a language model must beat to have learned anything of
    the words' order. `train_counts`: each word id's count in the training text (TokenColumns.counts);
    `valid_ids`: an array (or tensor) of word ids."""
    counts = np.asarray(train_counts, dtype=np.float64)
    seen = np.bincount(np.asarray(valid_ids).ravel(), minlength=vocab_size).astype(np.float64)
    best = math.inf
    for k in UNIGRAM_SMOOTHING:
        log_p = np.log((counts + k) / (counts.sum() + k * vocab_size))
        best = min(best, float(-(seen * log_p).sum() / max(seen.sum(), 1.0)))
    return math.exp(best)
