"""`Parser`: the Python face of `onlstm parse`, shaped like other parsers (NLTK's ParserI, benepar).

    from onlstm_cli import Parser
    parser = Parser.load("en")                 # a bundled name, a .onlstm path, or None: by each text's script
    parser.parse("The cat sat on the mat.")    # an nltk.Tree, the tree `onlstm parse -f bracket` prints
    parser.parse(["The", "cat", "sat"])        # tokens as given
    for tree in parser.parse_sents(lines): ... # streams, batch_size sentences a forward pass
    parser.distances("The cat sat.")           # each token's syntactic distance (None: not fed to the model)

The CLI runs the same object (`parse_batches`: it parses what stdin has ready at once, so a pipe is
answered line by line).
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from pathlib import Path

from nltk.parse.api import ParserI
from nltk.tree import Tree as NltkTree

from .formats import to_nltk
from .parser import ModelCache, ParsedSentence, parse_lines, resolve_model

Sentence = str | Sequence[str]  # a line of text, or its tokens
BLOCK = 2048  # lines parsed as one piece when input is plentiful (a file, a full pipe)


def blocks(lines: Iterable[str], block: int = BLOCK) -> Iterator[list[str]]:
    """The lines in lists of `block` (the last one shorter)."""
    lines = iter(lines)
    while chunk := list(islice(lines, block)):
        yield chunk


class Parser(ParserI):
    """Unlabeled binary constituency trees from an ON-LSTM model's syntactic distances.

    model: a bundled name ("en", "zh"), a path to a .onlstm file, or None to pick per sentence by its script.
    device: "cpu", "cuda" or "auto". batch_size: sentences per forward pass. layer, split: the model's
    own unless given. pretokenized: split text on spaces only. ensemble=False: an ensemble file's first
    model alone.

    Unlike NLTK's ParserI, whose `parse` yields candidate trees, `parse` returns the one tree (as benepar
    does); `parse_all` and `parse_one` keep ParserI's meaning (a list of trees; the best tree or None).
    """

    def __init__(self, model: str | Path | None = None, *, device: str = "cpu", batch_size: int = 64,
                 layer: int | None = None, split: str | None = None, pretokenized: bool = False,
                 ensemble: bool = True):
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self.model = None if model is None else str(model)
        self.batch_size, self.layer, self.split, self.pretokenized = batch_size, layer, split, pretokenized
        self._cache = ModelCache(device, ensemble)

    @classmethod
    def load(cls, model: str | Path | None = None, **options) -> "Parser":
        """A parser with its model read now (a bad name or file fails here, not at the first sentence)."""
        parser = cls(model, **options)
        if parser.model is not None:
            parser._cache.get(resolve_model(parser.model))
        return parser

    def parse_lines(self, lines: Iterable[str], block: int = BLOCK) -> Iterator[ParsedSentence]:
        """Parse lines of text in blocks of `block` lines, yielding a ParsedSentence per line, in order."""
        for parsed in self.parse_batches(blocks(lines, block)):
            yield from parsed

    def parse_batches(self, batches: Iterable[Sequence[str]]) -> Iterator[list[ParsedSentence]]:
        """Parse each batch of lines as soon as it comes, yielding its ParsedSentences (one a line) as a list.

        A batch is parsed as one piece (its sentences go batch_size at a time through the model), so a
        caller that writes and flushes after each list answers every batch before it reads the next:
        `onlstm parse` makes a batch of what stdin has ready, up to BLOCK lines.
        """
        for batch in batches:
            yield parse_lines(list(batch), model=self.model, cache=self._cache, pretokenized=self.pretokenized,
                              layer=self.layer, split=self.split, batch_size=self.batch_size)

    def _lines(self, sentences: Iterable[Sentence]) -> Iterator[str]:
        for sentence in sentences:
            if isinstance(sentence, str):
                yield sentence.replace("\n", " ")
            elif not self.pretokenized:
                raise ValueError("parse_sents takes lists of tokens with Parser(..., pretokenized=True)")
            else:  # tokens were given: keep them as they are
                yield " ".join(sentence)

    def parse_sents(self, sentences: Iterable[Sentence]) -> Iterator[NltkTree]:
        """One nltk.Tree per sentence, in order, parsed batch_size at a time (an empty sentence: an empty S)."""
        for parsed in self.parse_lines(self._lines(sentences), block=max(self.batch_size, 1) * 4):
            yield NltkTree("S", []) if parsed.tree is None else to_nltk(parsed.tree)

    def _for(self, sentence: Sentence) -> "Parser":
        """This parser, or for a list of tokens its twin that splits on spaces only (sharing its models)."""
        if isinstance(sentence, str) or self.pretokenized:
            return self
        twin = Parser(self.model, batch_size=self.batch_size, layer=self.layer, split=self.split, pretokenized=True)
        twin._cache = self._cache
        return twin

    def parse(self, sentence: Sentence) -> NltkTree:
        """The tree of one sentence, given as text or as a list of tokens."""
        return next(self._for(sentence).parse_sents([sentence]))

    def parse_all(self, sentence: Sentence) -> list[NltkTree]:
        return [self.parse(sentence)]

    def parse_one(self, sentence: Sentence) -> NltkTree | None:
        return self.parse(sentence)

    def distances(self, sentence: Sentence) -> list[float | None]:
        """Each token's syntactic distance d_f (None for a token not fed to the model, e.g. punctuation
        outside its vocabulary). A self-trained file's span parser gives its tree's split heights instead:
        the length of the constituent that splits before the token."""
        twin = self._for(sentence)
        return next(twin.parse_lines(twin._lines([sentence]))).distances

    def grammar(self):
        raise NotImplementedError("an ON-LSTM parser has no explicit grammar")
