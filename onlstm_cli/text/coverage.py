"""Whether a model can read the text it is given, for a warning: a tree is built for any text, but the
English model reads Chinese as one unknown word (a one-word tree) and the Chinese model reads English
words as unknown ones; either way the tree says nothing about the text. `Parser` (api.py) warns once per
parser, `onlstm parse` once per run, on stderr.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from onlstm_cli.text.languages import SCRIPT_CHARS, script_of
from onlstm_cli.text.tokenizers import has_cjk, is_punctuation

MOSTLY = 0.5            # "most": more than this share
MIN_UNKNOWN_WORDS = 2   # one unknown word (a name) is no reason to warn
VOCAB_SAMPLE = 2000     # the most frequent words of a vocabulary tell its script
COVERAGE_SAMPLE = 1000  # the first sentences a model is given tell whether it can read the text
_KANA = re.compile(f"[{SCRIPT_CHARS['Kana']}]")
CJK_SCRIPTS = ("Hani", "Kana")  # ideographs, or Japanese (which mixes kana with them)


def in_cjk_script(word: str) -> bool:
    """Ideographs or kana: Japanese mixes the two, so that a Japanese model's words are half kanji, half kana."""
    return has_cjk(word) or _KANA.search(word) is not None


@dataclass
class Coverage:
    words: int = 0         # tokens that are not punctuation
    unknown: int = 0       # of them, unknown to the model
    cjk_words: int = 0     # words with a CJK character or kana
    letter_words: int = 0  # words with a letter of any script (CJK included)
    letter_lines: int = 0  # sentences with a letter
    cjk_lines: int = 0     # of them, those in CJK script by languages.script_of: what sends a line to zh

    def add(self, other: "Coverage") -> None:
        self.words += other.words
        self.unknown += other.unknown
        self.cjk_words += other.cjk_words
        self.letter_words += other.letter_words
        self.letter_lines += other.letter_lines
        self.cjk_lines += other.cjk_lines


def reads_any_word(loaded, by_span_parser: bool = True) -> bool:
    """Whether what parses reads every word by its n-grams (text/units.py): the language model, or the span
    parser of a self-trained file where it parses (no --layer asked for)."""
    parser = loaded.tree_parser if by_span_parser else None
    return bool(loaded.unit_buckets) or getattr(parser, "unit_embed", None) is not None


def known(loaded, word: str) -> bool:
    """Whether the model's vocabulary has `word` (normalized): a character model reads a CJK word by its
    characters."""
    return all(unit in loaded.vocab for unit in loaded.tokenizer.units(word))


def sentence_coverage(loaded, tokens: Sequence[str], any_word: bool = False) -> Coverage:
    """`any_word`: the model reads every word (reads_any_word), so that none is unknown."""
    coverage = Coverage()
    for token in tokens:
        word = loaded.tokenizer.normalize(token)
        if is_punctuation(word):
            continue
        coverage.words += 1
        coverage.unknown += not any_word and not known(loaded, word)
        coverage.cjk_words += in_cjk_script(token)
        coverage.letter_words += any(ch.isalpha() for ch in token)
    script = script_of(" ".join(tokens))
    coverage.letter_lines, coverage.cjk_lines = script is not None, script in CJK_SCRIPTS
    return coverage


def reads_cjk(loaded) -> bool:
    """Whether the model's vocabulary is mostly CJK words or kana (its most frequent ones, letters only)."""
    words = [w for w in loaded.vocab.itos[2:VOCAB_SAMPLE + 2] if any(ch.isalpha() for ch in w)]
    return sum(in_cjk_script(w) for w in words) > MOSTLY * len(words)


def coverage_warning(loaded, sentences: Sequence[Sequence[str]], model_name: str,
                     by_span_parser: bool = True) -> str | None:
    """A one-line warning when the model cannot read most of these sentences (their user tokens), else None:
    their script is not the model's (CJK text to a model of another script, or the other way round), or
    most of their words are unknown to what parses (`by_span_parser`: a self-trained file's span parser, as
    it does unless a layer is asked for)."""
    total = Coverage()
    any_word = reads_any_word(loaded, by_span_parser)
    for tokens in sentences:
        total.add(sentence_coverage(loaded, tokens, any_word))
    if total.letter_words:
        model_cjk = reads_cjk(loaded)
        # A CJK model is warned about by lines, as their script sends them to it: a Chinese line with Latin
        # names in it, sent to zh, is in CJK script; any other by words, most of which it cannot read.
        cjk_share = total.cjk_lines / max(total.letter_lines, 1) if model_cjk else total.cjk_words / total.letter_words
        if model_cjk and cjk_share <= MOSTLY or not model_cjk and cjk_share > MOSTLY:
            text, trained = ("in CJK script", "text in another script") if not model_cjk else \
                ("not in CJK script", "CJK text")
            return (f"the text is {text} but model {model_name} was trained on {trained}: its trees of this "
                    "text mean little (choose a model for the text's language)")
    if total.unknown >= MIN_UNKNOWN_WORDS and total.unknown > MOSTLY * total.words:
        return (f"{total.unknown} of {total.words} words are unknown to model {model_name}: its trees of this "
                "text mean little (is the text in the model's language?)")
    return None
