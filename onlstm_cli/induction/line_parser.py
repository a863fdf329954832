"""`LineParser`: lines of text parsed with a model file, the part of `Parser` (api.py) that `onlstm parse` runs.

It checks a parser's options, shares each model file among the parsers of a process, pickles as a reference
to its model (so workers load it once) and warns when the model cannot read the text. It imports no nltk:
the CLI's start-up does not pay for trees it never builds.
"""
from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from itertools import islice
from pathlib import Path

from onlstm_cli.text.coverage import COVERAGE_SAMPLE, coverage_warning
from onlstm_cli.induction.distances import ParsedSentence, parse_lines, without_controls
from onlstm_cli.induction.models import BUNDLED_MODELS, ModelCache, resolve_model
from onlstm_cli.errors import ParseError
from onlstm_cli.trees import PUNCTUATION_RULES, SPLIT_RULES

Sentence = str | Sequence[str]  # a line of text, or its tokens
BLOCK = 2048  # lines parsed as one piece when input is plentiful (a file, a full pipe)


class UnreadableTextWarning(UserWarning):
    """The model cannot read most of the text (another script, or mostly unknown words): its trees mean little."""


def blocks(lines: Iterable, block: int = BLOCK) -> Iterator[list]:
    """The lines in lists of `block` (the last one shorter)."""
    lines = iter(lines)
    while chunk := list(islice(lines, block)):
        yield chunk


# --- the input --------------------------------------------------------------------------------------------

def sentence_line(sentence, number: int | None = None) -> tuple[str, bool]:
    """A sentence as parse_lines reads it: its text, and whether it came as tokens (then the text is the
    tokens joined by spaces, split on spaces again). A token is one leaf of the tree, so a token that is
    empty or holds whitespace (or a control character, read as a space) is refused, not split or dropped."""
    where = f"sentence {number}: " if number is not None else ""
    if isinstance(sentence, str):
        return sentence.replace("\n", " "), False
    if sentence is None or isinstance(sentence, (bytes, bytearray, Mapping)) or not isinstance(sentence, Iterable):
        raise TypeError(f"{where}a sentence is a string or a list of token strings, not {type(sentence).__name__}")
    tokens = list(sentence)
    for k, token in enumerate(tokens, 1):
        if not isinstance(token, str):
            raise TypeError(f"{where}token {k} is a {type(token).__name__}, not a string")
        if not token:
            raise ValueError(f"{where}token {k} is empty: each token is a leaf of the tree; leave empty ones out")
        if without_controls(token).split() != [token]:
            raise ValueError(f"{where}token {k} ({token[:40]!r}) holds whitespace or a control character: each token "
                             "is one leaf of the tree; split it into tokens, or give the sentence as a string")
    return " ".join(tokens), True


def positive_whole(name: str, value) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be a whole number, not {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be at least 1")
    return value


def checked_options(model, device, batch_size, layer, split, pretokenized, ensemble, warn,
                    punctuation=None) -> str | None:
    """Parser's arguments checked (TypeError for a wrong type, ValueError for a wrong value); the model as a string."""
    positive_whole("batch_size", batch_size)
    if layer is not None:
        positive_whole("layer", layer)
    if split is not None and split not in SPLIT_RULES:
        raise ValueError(f"unknown split rule {split!r}; expected one of {', '.join(SPLIT_RULES)} (or None: the model's)")
    if punctuation is not None and punctuation not in PUNCTUATION_RULES:
        raise ValueError(f"unknown punctuation rule {punctuation!r}; expected one of {', '.join(PUNCTUATION_RULES)} "
                         "(or None: the model's)")
    if not isinstance(device, str):
        raise TypeError(f"device must be a string (cpu, cuda, cuda:N or auto), not {device!r}")
    for name, flag in (("pretokenized", pretokenized), ("ensemble", ensemble), ("warn", warn)):
        if not isinstance(flag, bool):
            raise TypeError(f"{name} must be True or False, not {flag!r}")
    if model is None:
        return None
    if not isinstance(model, (str, os.PathLike)):
        raise TypeError(f"model must be a bundled name, a path to a .onlstm file or None, not {type(model).__name__}")
    if not str(model).strip():
        raise ValueError(f"model is empty: give a bundled name ({', '.join(sorted(BUNDLED_MODELS))}), a path to a "
                         ".onlstm file, or None to choose by each text's script")
    return str(model)


# --- models shared by the parsers of a process -------------------------------------------------------------

_LOADED: dict[tuple, object] = {}  # (path, device, ensemble) → (file stamp, LoadedModel)


class SharedModels(ModelCache):
    """A ModelCache whose models every parser of this process shares: a parser unpickled in a worker process
    reads its model file once per process, not once per task. A file rewritten since (another size or
    modification time) is read again."""

    def get(self, path: Path):
        key = (str(Path(path).absolute()), self.device, self.ensemble)
        try:
            info = os.stat(path)
            stamp = (info.st_size, info.st_mtime_ns)
        except OSError:
            stamp = None  # the loader says what is wrong with it
        if key not in _LOADED or _LOADED[key][0] != stamp:
            _LOADED[key] = (stamp, ModelCache(self.device, self.ensemble).get(path))
        return _LOADED[key][1]


# --- the parser -------------------------------------------------------------------------------------------

class LineParser:
    """Lines of text → ParsedSentences (tree, tokens, distances) with an ON-LSTM model file: what `onlstm parse`
    runs, in its own process or in workers (parallel.py). `Parser` (api.py) is this with NLTK's face, trees as
    nltk.Trees; this class needs no nltk, whose import would lengthen every `onlstm parse` start-up.

    The arguments and their errors are `Parser`'s (see there).
    """

    def __init__(self, model: str | Path | None = None, *, device: str = "cpu", batch_size: int = 64,
                 layer: int | None = None, split: str | None = None, pretokenized: bool = False,
                 ensemble: bool = True, warn: bool = True, punctuation: str | None = None):
        self.model = checked_options(model, device, batch_size, layer, split, pretokenized, ensemble, warn, punctuation)
        self.batch_size, self.layer, self.split, self.pretokenized = batch_size, layer, split, pretokenized
        self.punctuation = punctuation
        self.device, self.ensemble, self.warn = device, ensemble, warn
        self._cache = SharedModels(device, ensemble)
        self._warned: set[str] = set()  # models warned about
        self._checked: dict[str, int] = {}  # sentences each model's coverage was checked on

    @classmethod
    def load(cls, model: str | Path | None = None, **options) -> "LineParser":
        """A parser with its model read now (a bad name or file fails here, not at the first sentence)."""
        parser = cls(model, **options)
        if parser.model is not None:
            parser._cache.get(resolve_model(parser.model))
        return parser

    def __getstate__(self) -> dict:
        """A reference to the model, not its weights: its bundled name or absolute path, and the options."""
        model = self.model
        try:
            if model is not None and resolve_model(model) == Path(model):  # a path, not a bundled name
                model = str(Path(model).absolute())  # the worker may run in another directory
        except ParseError:
            pass
        return {"model": model, "device": self.device, "batch_size": self.batch_size, "layer": self.layer,
                "split": self.split, "pretokenized": self.pretokenized, "ensemble": self.ensemble, "warn": self.warn,
                "punctuation": self.punctuation}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state.pop("model"), **state)  # the model is loaded at first use, once per process

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
            yield self._parse(list(batch), self.pretokenized)

    def _parse(self, lines: list[str], pretokenized: bool) -> list[ParsedSentence]:
        parsed = parse_lines(lines, model=self.model, cache=self._cache, pretokenized=pretokenized,
                             layer=self.layer, split=self.split, batch_size=self.batch_size,
                             punctuation=self.punctuation)
        if self.warn:
            self._check_coverage(parsed, lambda message: warnings.warn(message, UnreadableTextWarning, stacklevel=5))
        return parsed

    def unreadable_warnings(self, batches: Iterable[list[ParsedSentence]],
                            echo: Callable[[str], None]) -> Iterator[list[ParsedSentence]]:
        """The batches of ParsedSentences as they come, `echo` given a one-line warning (once per model) when
        the model cannot read most of a batch. What `onlstm parse` shows on stderr, in its own process
        whichever processes parsed (its parser, made with warn=False, and the copies in workers say nothing)."""
        for batch in batches:
            self._check_coverage(batch, echo)
            yield batch

    def _check_coverage(self, parsed: list[ParsedSentence], echo: Callable[[str], None]) -> None:
        """Warn, once per model, when it cannot read most of these sentences (coverage.py)."""
        by_model: dict[str, list[list[str]]] = {}
        for sentence in parsed:
            # a model's first sentences tell whether it can read the text: no per-line cost after them
            if sentence.tokens and sentence.model not in self._warned and \
                    self._checked.get(sentence.model, 0) < COVERAGE_SAMPLE:
                self._checked[sentence.model] = self._checked.get(sentence.model, 0) + 1
                by_model.setdefault(sentence.model, []).append(sentence.tokens)
        for path, sentences in by_model.items():
            message = coverage_warning(self._cache.get(Path(path)), sentences, Path(path).name,
                                       by_span_parser=self.layer is None)
            if message is not None:
                self._warned.add(path)
                echo(message)

    def distances(self, sentence: Sentence) -> list[float | None]:
        """Each token's syntactic distance d_f (None for a token not fed to the model, e.g. punctuation
        outside its vocabulary). A self-trained file's span parser gives its tree's split heights instead:
        the length of the constituent that splits before the token."""
        line, as_tokens = sentence_line(sentence)
        return self._parse([line], self.pretokenized or as_tokens)[0].distances
