"""The vocabulary: word types ↔ ids, <unk> and <eos> first.

A vocabulary with `endings` k reads a word seen fewer than ENDING_BELOW times in training by its last k characters,
one unit for each ending ("words read by their endings"), and a word it does not hold by its ending where it holds
that: in a suffixing language the ending of a rare word is mostly its case or person suffix, the part that says how
it attaches (docs/experiments/pcfg.md, "A small text's PCFG that reads a rare word by its ending")."""
from __future__ import annotations

from collections import Counter
from typing import Iterable

UNK, EOS = "<unk>", "<eos>"
ENDING_BELOW = 2  # a word seen fewer times than this is read by its ending


def ending_unit(word: str, endings: int) -> str:
    """The unit of a word read by its last `endings` characters. It starts with a space, which no word holds (every
    reader splits words at spaces), so it is never taken for a word."""
    return " " + word[-endings:]


class Vocabulary:
    """Word types ↔ ids. Id 0 is <unk>, id 1 is <eos>. `endings`: see the module's docstring (0: whole words)."""

    def __init__(self, words: Iterable[str], endings: int = 0):
        self.itos: list[str] = [UNK, EOS] + [w for w in words if w not in (UNK, EOS)]
        self.stoi: dict[str, int] = {w: i for i, w in enumerate(self.itos)}
        self.endings = endings
        if len(self.stoi) != len(self.itos):
            raise ValueError("vocabulary has duplicate words")

    @classmethod
    def build(cls, counts: Counter, max_size: int | None = None, min_freq: int = 1,
              endings: int = 0) -> "Vocabulary":
        """Most frequent words first (ties alphabetically, so the result does not depend on input order); with
        `endings`, the words seen fewer than ENDING_BELOW times counted as their endings."""
        if endings:
            units: Counter = Counter()
            for word, count in counts.items():
                units[word if count >= ENDING_BELOW else ending_unit(word, endings)] += count
            counts = units
        ranked = sorted((w for w, c in counts.items() if c >= min_freq and w not in (UNK, EOS)),
                        key=lambda w: (-counts[w], w))
        if max_size is not None:
            ranked = ranked[:max(0, max_size - 2)]
        return cls(ranked, endings)

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
        if self.endings:
            return [self.stoi[t] if t in self.stoi else self.stoi.get(ending_unit(t, self.endings), 0) for t in tokens]
        return [self.stoi.get(t, 0) for t in tokens]
