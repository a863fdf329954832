"""A gold sentence as the evaluation protocol of PRPN / ON-LSTM / Compound PCFG sees it: only tokens with a
word POS tag are kept (punctuation, traces, currency symbols go), and the gold constituents are the spans over
the kept words, with unary chains collapsed. Read from PTB brackets (treebanks.py) or CoNLL-U (conllu.py)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional


# Penn Treebank tags of real words (the list in the PRPN / ON-LSTM data code). Everything
# else is dropped before evaluation: punctuation, -NONE- traces, $, #, -LRB-, ...
WORD_TAGS = frozenset({
    "CC", "CD", "DT", "EX", "FW", "IN", "JJ", "JJR", "JJS", "LS", "MD", "NN", "NNS", "NNP",
    "NNPS", "PDT", "POS", "PRP", "PRP$", "RB", "RBR", "RBS", "RP", "SYM", "TO", "UH", "VB",
    "VBD", "VBG", "VBN", "VBP", "VBZ", "WDT", "WP", "WP$", "WRB",
})


TRACE_TAG = "-NONE-"


@dataclass
class GoldSentence:
    words: list[str]                   # kept words, the ones that are parsed and scored
    all_words: list[str]               # every token, punctuation included, traces removed
    tags: list[str]                    # POS (PTB) or UPOS (CoNLL-U) of the kept words
    spans: set[tuple[int, int]]        # gold constituents over kept words, >= 2 words, not the root
    labels: dict[tuple[int, int], set[str]]  # the labels on each gold span
    source: str                        # "file:line" where the sentence starts
    # Index in all_words of each kept word; read_predicted needs it to drop punctuation
    # from trees given over all_words.
    kept_positions: list[int] = field(default_factory=list)
    # Where CoNLL-U multiword tokens join words (Portuguese "do" = de + o, Spanish "dámelo"): the text as
    # written, one token per multiword token or word, over the kept words, and each kept word's token. A
    # model reads the text as it was trained on it (model_scores.py); None when every token is one word.
    tokens: Optional[list[str]] = None
    token_of_word: Optional[list[int]] = None

    def as_written(self) -> tuple[list[str], list[Optional[int]]]:
        """(the tokens a reader of the text sees, for each kept word the index of the token it begins, or None
        for a word inside a multiword token after its first)."""
        if self.tokens is None or self.token_of_word is None:
            return list(self.words), list(range(len(self.words)))
        starts, seen = [], set()
        for token in self.token_of_word:
            starts.append(None if token in seen else token)
            seen.add(token)
        return list(self.tokens), starts

    def as_read(self, reads: Callable[[str], bool]) -> tuple[list[str], list[Optional[int]], list[int]]:
        """The sentence as a model reads it: the kept words as written (as_written) and, between them, each
        dropped token that `reads` (punctuation the model was trained on, as `parse` feeds it). Returns (the
        tokens read, for each leaf of the model's tree the index of the token it begins or None, each leaf's
        position in all_words); the scored tree is the model's tree with the leaves that are not kept words
        dropped. A sentence made without kept_positions has its words' own positions and nothing else."""
        tokens, starts = self.as_written()
        if not self.places_known:
            return tokens, starts, list(range(len(self.words)))
        word_at = {position: k for k, position in enumerate(self.kept_positions)}
        fed = {p for p, word in enumerate(self.all_words) if p not in word_at and reads(word)}
        if not fed:
            return tokens, starts, list(self.kept_positions)
        read, leaf_starts, positions = [], [], []
        for position, word in enumerate(self.all_words):
            if position in word_at:
                start = starts[word_at[position]]
                leaf_starts.append(None if start is None else len(read))
                if start is not None:
                    read.append(tokens[start])
            elif position in fed:
                leaf_starts.append(len(read))
                read.append(word)
            else:
                continue
            positions.append(position)
        return read, leaf_starts, positions

    @property
    def places_known(self) -> bool:
        """Whether kept_positions places each kept word in all_words (both readers record it)."""
        return len(self.kept_positions) == len(self.words)

    def all_tokens(self) -> list[str]:
        """The tokens that leaf positions (as_read) index: all_words, or the words where their places are unknown."""
        return self.all_words if self.places_known else self.words
