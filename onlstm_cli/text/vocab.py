"""The vocabulary: word types ↔ ids, <unk> and <eos> first."""
from __future__ import annotations

from collections import Counter
from typing import Iterable

UNK, EOS = "<unk>", "<eos>"


class Vocabulary:
    """Word types ↔ ids. Id 0 is <unk>, id 1 is <eos>."""

    def __init__(self, words: Iterable[str]):
        self.itos: list[str] = [UNK, EOS] + [w for w in words if w not in (UNK, EOS)]
        self.stoi: dict[str, int] = {w: i for i, w in enumerate(self.itos)}
        if len(self.stoi) != len(self.itos):
            raise ValueError("vocabulary has duplicate words")

    @classmethod
    def build(cls, counts: Counter, max_size: int | None = None, min_freq: int = 1) -> "Vocabulary":
        """Most frequent words first (ties alphabetically, so the result does not depend on input order)."""
        ranked = sorted((w for w, c in counts.items() if c >= min_freq and w not in (UNK, EOS)),
                        key=lambda w: (-counts[w], w))
        if max_size is not None:
            ranked = ranked[:max(0, max_size - 2)]
        return cls(ranked)

    def __len__(self) -> int:
        return len(self.itos)

    def __contains__(self, word: str) -> bool:
        return word in self.stoi

    @property
    def unk_id(self) -> int:
        return 0

    @property
    def eos_id(self) -> int:
        return 1

    def encode(self, tokens: Iterable[str]) -> list[int]:
        return [self.stoi.get(t, 0) for t in tokens]
