"""Every per-language default in one table: the tokenizer a new model of the language reads with, the split rule
it parses with, and how a language is told from its text when the user does not say."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from onlstm_cli.errors import UserError
from onlstm_cli.text.tokenizers import Tokenizer, has_cjk


@dataclass(frozen=True)
class Language:
    tokenizer: str          # a name in tokenizers.TOKENIZERS
    split: str = "paper"    # the split rule a new model parses with by default (trees.SPLIT_RULES)


LANGUAGES = {
    "en": Language("ptb"),
    # symmetric: the rule that lifts Chinese trees most on the UD dev trees (models/zh.md)
    "zh": Language("jieba", split="symmetric"),
}
OTHER = Language("unicode")  # any language without an entry: words and punctuation by Unicode class


def language(code: str) -> Language:
    return LANGUAGES.get(code, OTHER)


def default_tokenizer(lang: str) -> Tokenizer:
    """A model file keeps its own tokenizer: one trained with "whitespace" still splits on spaces only."""
    return Tokenizer(language(lang).tokenizer)


def default_split(lang: str) -> str:
    return language(lang).split


def lang_of_text(text: str) -> str:
    return "zh" if has_cjk(text) else "en"


def detect_lang(path: Path, n_lines: int = 200) -> str:
    """The language of a corpus, from its first lines' script."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            head = "".join(line for _, line in zip(range(n_lines), f))
    except OSError as e:
        raise UserError(f"cannot read {path}: {e.strerror}") from None
    return lang_of_text(head)
