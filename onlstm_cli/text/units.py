"""Words read through their character n-grams, so that no word is unknown (fastText's subword vectors).

A model with `unit_buckets` reads each word as its own row (for the words it has one) plus the mean of the
vectors of the word's n-grams: n = 2 … 5 over `<word>`, each hashed into one of `unit_buckets` rows. A word
never seen in training still has its stem's and its ending's n-grams. A `UnitTable` holds the n-gram rows of
a list of words (a vocabulary, or the words of one batch) flat, so that a batch of word rows looks them up
with one `embedding_bag`.
"""
from __future__ import annotations

import functools
import zlib
from collections import Counter
from dataclasses import dataclass
from typing import Sequence

import torch
import torch.nn as nn
import torch.nn.functional as F

MIN_N, MAX_N = 2, 5
# A word's n-grams are those of its first and last EDGE characters: a 5,000-letter word is read in bounded
# time and memory, by its beginning and its end (where stems and endings are).
EDGE = 24
# The Good–Turing share of unseen words (tokens of words seen once, over all tokens) from which `auto`
# reads n-grams; the rule and the figures it was fixed on are in docs/experiments/units.md.
UNSEEN_SHARE = 0.05
MAX_INPUT_TYPES = 200_000  # word types of the training text that get an input id in an n-gram model


def word_units(word: str) -> list[str]:
    """The n-grams a word is read by: n = MIN_N … MAX_N over the word marked `<word>`."""
    marked = f"<{word}>" if len(word) <= 2 * EDGE else f"<{word[:EDGE]}\x00{word[-EDGE:]}>"
    grams = []
    for n in range(MIN_N, MAX_N + 1):
        grams.extend(marked[i:i + n] for i in range(len(marked) - n + 1) if "\x00" not in marked[i:i + n])
    return grams or [marked]


@functools.lru_cache(maxsize=1 << 16)  # a parse hashes each batch's words: the frequent ones once, in bounded memory
def unit_rows(word: str, buckets: int) -> tuple[int, ...]:
    """The bucket of each of a word's n-grams (crc32: the same on every machine and Python run)."""
    return tuple(zlib.crc32(g.encode("utf-8", "surrogatepass")) % buckets for g in word_units(word))


@dataclass
class UnitTable:
    """The n-gram rows of a list of words, flat: word k's are flat[starts[k] : starts[k] + counts[k]]."""
    flat: torch.Tensor
    starts: torch.Tensor
    counts: torch.Tensor

    @classmethod
    def of_words(cls, words: Sequence[str], buckets: int) -> "UnitTable":
        rows = [unit_rows(w, buckets) for w in words]
        counts = torch.tensor([len(r) for r in rows], dtype=torch.long)
        starts = torch.cumsum(counts, 0) - counts
        flat = torch.tensor([b for r in rows for b in r], dtype=torch.long)
        return cls(flat, starts, counts)

    def to(self, device) -> "UnitTable":
        return UnitTable(self.flat.to(device), self.starts.to(device), self.counts.to(device))


def unit_vectors(weight: torch.Tensor, rows: torch.Tensor, table: UnitTable) -> torch.Tensor:
    """The mean n-gram vector of each word (`rows` indexes `table`, any shape) → rows.shape + (size,)."""
    index = rows.reshape(-1)
    counts, starts = table.counts[index], table.starts[index]
    offsets = torch.cumsum(counts, 0) - counts
    within = torch.arange(int(counts.sum()), device=index.device) - offsets.repeat_interleave(counts)
    grams = table.flat[starts.repeat_interleave(counts) + within]
    return F.embedding_bag(grams, weight, offsets, mode="mean").view(*rows.shape, weight.shape[1])


def own_rows(ids: torch.Tensor, rows: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The ids of the words with a row of their own (an index < `rows`, <unk> aside), the others 0, and the mask
    (ids.shape + (1,)) that zeroes the others' rows: a rare or unseen word is read by its n-grams alone. Were it
    read as <unk>'s row plus its n-grams, <unk>'s row, trained on every rare word, would drown its n-grams out."""
    has_row = (ids > 0) & (ids < rows)
    return torch.where(has_row, ids, 0), has_row.unsqueeze(-1)


def batch_units(sentences: Sequence[Sequence[str]], buckets: int, pad: str) -> tuple[dict[str, int], UnitTable]:
    """A table of the distinct words of a batch (and `pad`, for the positions after a sentence's end) and
    each word's row in it."""
    row_of = {pad: 0}
    for sentence in sentences:
        for word in sentence:
            row_of.setdefault(word, len(row_of))
    return row_of, UnitTable.of_words(list(row_of), buckets)


def batch_rows(sentences: Sequence[Sequence[str]], buckets: int, pad: str, shape: tuple[int, int],
               offset: int = 0, time_major: bool = False) -> tuple[torch.Tensor, UnitTable]:
    """A padded batch's n-gram rows: for position k of sentence b, the row of its word in a table of the batch's
    words (`batch_units`), at [offset + k, b] where `time_major` (a (T, B) batch of the language model), else at
    [b, offset + k] (the span parser's `<eos> w1 … wn <eos>` rows); every other position gets `pad`'s row, 0."""
    row_of, table = batch_units(sentences, buckets, pad)
    rows = torch.zeros(shape, dtype=torch.long)
    for b, sentence in enumerate(sentences):
        ids = torch.tensor([row_of[w] for w in sentence], dtype=torch.long)
        if time_major:
            rows[offset:offset + len(sentence), b] = ids
        else:
            rows[b, offset:offset + len(sentence)] = ids
    return rows, table


def reads_ngrams(counts: Counter, max_vocab: int | None) -> bool:
    """`--units auto`: n-grams where much of new text would be unknown words (docs/experiments/units.md)."""
    tokens = sum(counts.values())
    beyond = sum(sorted(counts.values(), reverse=True)[max(0, (max_vocab or len(counts)) - 2):])
    return tokens > 0 and (unseen_share(counts) >= UNSEEN_SHARE or beyond / tokens > UNSEEN_SHARE)


def unseen_share(counts: Counter) -> float:
    """Good–Turing's estimate of the share of new text's tokens that are unseen words: N1 / N."""
    tokens = sum(counts.values())
    return sum(1 for c in counts.values() if c == 1) / tokens if tokens else 0.0


class UnitEmbedding(nn.Module):
    """The n-gram vectors (`buckets` × size), and the n-gram table of the model's vocabulary, which reads a
    word id's n-grams in training; a parse gives the table of its batch's words instead (`batch_units`).
    The vocabulary's table is made from its words the first time it is needed (a parse never needs it), not
    saved with the model."""

    def __init__(self, buckets: int, size: int, vocabulary: Sequence[str] | None = None):
        super().__init__()
        self.buckets = buckets
        self.weight = nn.Parameter(torch.empty(buckets, size).uniform_(-0.1, 0.1))
        self.vocabulary = list(vocabulary or [])
        self._table: UnitTable | None = None

    def forward(self, rows: torch.Tensor, table: UnitTable | None = None) -> torch.Tensor:
        if table is None:
            if not self.vocabulary:
                raise ValueError("this n-gram model was built without its vocabulary")
            if self._table is None or self._table.flat.device != self.weight.device:  # made once a device
                self._table = UnitTable.of_words(self.vocabulary, self.buckets).to(self.weight.device)
            return unit_vectors(self.weight, rows, self._table)
        return unit_vectors(self.weight, rows, table.to(self.weight.device))
