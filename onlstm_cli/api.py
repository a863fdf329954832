"""`Parser`: the Python face of `onlstm parse`, shaped like other parsers (NLTK's ParserI, benepar).

    from onlstm_cli import Parser
    parser = Parser.load("en")                 # a bundled name, a .onlstm path, or None: by each text's script
    parser.parse("The cat sat on the mat.")    # an nltk.Tree, the tree `onlstm parse -f bracket` prints
    parser.parse(["The", "cat", "sat"])        # tokens as given: one leaf each
    for tree in parser.parse_sents(lines): ... # text or token lists; streams, batch_size sentences a forward pass
    parser.distances("The cat sat.")           # each token's syntactic distance (None: not fed to the model)

The trees are `ParseTree`s: nltk.Trees that Jupyter draws without svgling (draw.py's picture). A parser
pickles as a reference (its model's name or path and its options), not its weights: a process that
unpickles it (multiprocessing, concurrent.futures, Dask, Ray, Spark) loads the model once and shares it.

The CLI runs its nltk-free part, `LineParser` (induction/line_parser.py: options, shared models, pickling,
`parse_batches`, which parses what stdin has ready at once, so a pipe is answered line by line); `Parser` adds
the trees as nltk.Trees and NLTK's ParserI methods.
"""
from __future__ import annotations

import warnings
from collections.abc import Iterable, Iterator
from itertools import groupby

from nltk.parse.api import ParserI
from nltk.tree import Tree as NltkTree

# BLOCK and UnreadableTextWarning are this module's names too: users import them from here
from onlstm_cli.induction.line_parser import BLOCK, LineParser, Sentence, UnreadableTextWarning, sentence_line
from onlstm_cli.induction.distances import ParsedSentence
from onlstm_cli.errors import ParseError
from onlstm_cli.trees import Tree, fold_tree


# --- the trees --------------------------------------------------------------------------------------------

class ParseTree(NltkTree):
    """An nltk.Tree (isinstance holds, and it equals the nltk.Tree of the same brackets) that Jupyter draws
    without extra packages: nltk's own drawing needs svgling; this one is draw.py's, the picture of
    `onlstm parse -f svg`, with each word's distance bar when the tree came from a parser."""

    distances: list | None = None  # per word, from the parser; None: no bars
    error: str | None = None       # why parse_sents did not parse the sentence (its tree is then an empty S)

    def __eq__(self, other):
        # nltk.Tree equals only trees of its own class; a parser's tree should equal Tree.fromstring(...)
        return isinstance(other, NltkTree) and (self._label, list(self)) == (other._label, list(other))

    __ne__ = NltkTree.__ne__
    __hash__ = None

    def _repr_svg_(self) -> str:
        from onlstm_cli.pictures.draw import sentence_svg
        words, shape = words_and_shape(self)
        distances = self.distances if self.distances is not None and len(self.distances) == len(words) else None
        return sentence_svg(words, shape if words else None, distances)

    def _repr_html_(self) -> str:
        return f'<div style="overflow-x: auto">{self._repr_svg_()}</div>'  # a long sentence scrolls


def words_and_shape(tree: NltkTree) -> tuple[list[str], Tree]:
    """The words of an nltk.Tree and its shape as draw.py takes it (nested lists of words; a node with one
    child, such as a word's X, is that child). Folded without recursion: a long sentence can be a deep chain."""
    words: list[str] = []

    def leaf(word) -> str:
        words.append(str(word))
        return words[-1]
    shape = fold_tree(tree, leaf, lambda children: children[0] if len(children) == 1 else children)
    return words, shape


def parse_tree(parsed: ParsedSentence) -> ParseTree:
    """The nltk shape of `onlstm parse -f bracket` (formats.to_nltk): (S ...) nodes over (X word)s. A
    sentence that was not parsed (longer than parser.MAX_SENTENCE_WORDS) raises ParseError."""
    if parsed.error:
        raise ParseError(parsed.error)
    if parsed.tree is None:
        return ParseTree("S", [])
    if isinstance(parsed.tree, str):
        tree = ParseTree("S", [ParseTree("X", [parsed.tree])])
    else:
        tree = fold_tree(parsed.tree, lambda word: ParseTree("X", [word]), lambda children: ParseTree("S", children))
    tree.distances = list(parsed.distances)
    return tree


class NotParsedWarning(UserWarning):
    """A sentence of `parse_sents` that was not parsed (a script no model given reads, more words than a sentence
    may have): it is answered with an empty S whose `error` says why, and the stream goes on, as `onlstm parse`
    answers such a line with an empty line and a message."""


def numbered_blocks(sentences: Iterable[Sentence], size: int) -> Iterator[tuple[list, BaseException | None]]:
    """The sentences read as sentence_line reads them, in blocks of `size`, each with None; an error raised while
    reading (by the iterable, or a sentence refused) comes with the block read before it, so that the sentences
    answered before it are not lost."""
    numbered = (sentence_line(s, k) for k, s in enumerate(sentences, 1))
    while True:
        block: list = []
        try:
            for item in numbered:
                block.append(item)
                if len(block) == size:
                    break
        except Exception as error:  # raised again once the block is answered
            yield block, error
            return
        if not block:
            return
        yield block, None


def not_parsed(error: str, number: int) -> ParseTree:
    """parse_sents's answer to a sentence not parsed: an empty S that says why, and a NotParsedWarning."""
    warnings.warn(f"sentence {number} not parsed: {error}", NotParsedWarning, stacklevel=3)
    tree = ParseTree("S", [])
    tree.error = error
    return tree


# --- the parser -------------------------------------------------------------------------------------------

class Parser(LineParser, ParserI):
    """Unlabeled binary constituency trees from an ON-LSTM model's syntactic distances.

    model: a bundled name ("en", "zh", "zh-st", …), a path to a .onlstm file, or None to pick per sentence by its
    script. device: "cpu", "cuda" or "auto". batch_size: sentences per forward pass. layer, split
    ("paper" or "symmetric"), punctuation ("boundaries": cut at punctuation marks first, or "ignore"): the
    model's own unless given. pretokenized: split text on spaces only.
    ensemble=False: an ensemble file's first model alone. warn=False: no UnreadableTextWarning (below).

    A sentence is a string (cut by the model's tokenizer) or a list of token strings (one leaf each, as NLTK
    parsers take them). Errors: TypeError for an argument or sentence of the wrong type (None, a number);
    ValueError for a wrong value (batch_size 0, an unknown split rule, an empty model name, an empty token,
    a token holding whitespace); onlstm_cli.errors.OnlstmError (ModelFileError, ParseError, DeviceError) for a
    model that cannot be had. When the model cannot read most of a text (another script, mostly unknown
    words), an UnreadableTextWarning is given once per parser and model.

    Unlike NLTK's ParserI, whose `parse` yields candidate trees, `parse` returns the one tree (as benepar
    does); `parse_all` and `parse_one` keep ParserI's meaning (a list of trees; the best tree or None).
    """

    def parse_sents(self, sentences: Iterable[Sentence]) -> Iterator[ParseTree]:
        """One tree per sentence (text or a list of tokens), in order, parsed batch_size at a time (an empty
        sentence: an empty S)."""
        if isinstance(sentences, (str, bytes)) or not isinstance(sentences, Iterable):
            raise TypeError(f"parse_sents takes an iterable of sentences, not {type(sentences).__name__} "
                            "(for one sentence, use parse)")
        return self._trees(sentences)

    def _trees(self, sentences: Iterable[Sentence]) -> Iterator[ParseTree]:
        number = 0
        for block, failure in numbered_blocks(sentences, max(self.batch_size, 1) * 4):
            # a run of token lists is split on spaces only; a run of texts by the model's tokenizer
            for as_tokens, run in groupby(block, key=lambda item: item[1]):
                for parsed in self._parse([line for line, _ in run], self.pretokenized or as_tokens):
                    number += 1
                    yield parse_tree(parsed) if not parsed.error else not_parsed(parsed.error, number)
            if failure is not None:
                raise failure

    def parse(self, sentence: Sentence) -> ParseTree:
        """The tree of one sentence, given as text or as a list (or any iterable) of tokens. A sentence with no
        words (empty, or only spaces and control characters) raises ValueError: no tree has zero words."""
        line, as_tokens = sentence_line(sentence)  # read once: an iterator of tokens can be read only once
        parsed = self._parse([line], self.pretokenized or as_tokens)[0]
        if not parsed.tokens and not parsed.error:
            raise ValueError(f"the sentence has no words ({line[:40]!r}): no tree has zero words "
                             "(parse_sents answers an empty sentence with an empty S)")
        return parse_tree(parsed)

    def parse_all(self, sentence: Sentence) -> list[ParseTree]:
        return [self.parse(sentence)]

    def parse_one(self, sentence: Sentence) -> ParseTree | None:
        return self.parse(sentence)

    def grammar(self):
        raise NotImplementedError("an ON-LSTM parser has no explicit grammar")
