"""Every per-language default in one table: the tokenizer a new model of the language reads with, the split rule
it parses with, and how a language is told from its text when the user does not say."""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from onlstm_cli.errors import UserError
from onlstm_cli.files import bounded_lines
from onlstm_cli.text.tokenizers import TOKENIZERS, Tokenizer


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
    """The defaults of a language given by a BCP 47 tag, read by its language subtag whatever its case: zh-CN,
    zh-Hans and ZH are Chinese, pt-BR is Portuguese."""
    return LANGUAGES.get(code.split("-", 1)[0].lower(), OTHER)


def default_tokenizer(lang: str) -> Tokenizer:
    """A model file keeps its own tokenizer: one trained with "whitespace" still splits on spaces only."""
    return Tokenizer(language(lang).tokenizer)


def default_split(lang: str) -> str:
    return language(lang).split


# Scripts by their Unicode blocks: (ISO 15924 code, name, character ranges). Text of a script without a language
# of its own in LANGUAGES is "und-<code>" (BCP 47: an undetermined language in that script), read by the unicode
# tokenizer. Latin text is taken as English (its PTB rules) unless the user says otherwise, and is told so.
# Letters of a script not listed here count as "Zzzz" (ISO 15924: uncoded), so that no text of letters outside
# Latin is ever taken as English.
SCRIPTS = (
    ("Latn", "Latin", "A-Za-z\u00c0-\u02af\u1e00-\u1eff\u2c60-\u2c7f\ua720-\ua7ff\uff21-\uff3a\uff41-\uff5a"),
    ("Hani", "CJK", "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002a6df"),
    ("Kana", "Japanese kana", "\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f"),
    ("Hang", "Hangul", "\u1100-\u11ff\u3130-\u318f\ua960-\ua97f\uac00-\ud7ff"),
    ("Cyrl", "Cyrillic", "\u0400-\u052f\u1c80-\u1c8f\u2de0-\u2dff\ua640-\ua69f"),
    ("Grek", "Greek", "\u0370-\u03ff\u1f00-\u1fff"),
    ("Armn", "Armenian", "\u0530-\u058f\ufb13-\ufb17"),
    ("Geor", "Georgian", "\u10a0-\u10ff\u1c90-\u1cbf\u2d00-\u2d2f"),
    ("Hebr", "Hebrew", "\u0590-\u05ff\ufb1d-\ufb4f"),
    ("Arab", "Arabic", "\u0600-\u06ff\u0750-\u077f\u08a0-\u08ff\ufb50-\ufdff\ufe70-\ufeff"),
    ("Syrc", "Syriac", "\u0700-\u074f"),
    ("Thaa", "Thaana", "\u0780-\u07bf"),
    ("Deva", "Devanagari", "\u0900-\u097f\ua8e0-\ua8ff"),
    ("Beng", "Bengali", "\u0980-\u09ff"),
    ("Guru", "Gurmukhi", "\u0a00-\u0a7f"),
    ("Gujr", "Gujarati", "\u0a80-\u0aff"),
    ("Orya", "Odia", "\u0b00-\u0b7f"),
    ("Taml", "Tamil", "\u0b80-\u0bff"),
    ("Telu", "Telugu", "\u0c00-\u0c7f"),
    ("Knda", "Kannada", "\u0c80-\u0cff"),
    ("Mlym", "Malayalam", "\u0d00-\u0d7f"),
    ("Sinh", "Sinhala", "\u0d80-\u0dff"),
    ("Thai", "Thai", "\u0e00-\u0e7f"),
    ("Laoo", "Lao", "\u0e80-\u0eff"),
    ("Tibt", "Tibetan", "\u0f00-\u0fff"),
    ("Mymr", "Myanmar", "\u1000-\u109f"),
    ("Ethi", "Ethiopic", "\u1200-\u139f\u2d80-\u2ddf"),
    ("Cher", "Cherokee", "\u13a0-\u13ff\uab70-\uabbf"),
    ("Cans", "Canadian syllabics", "\u1400-\u167f\u18b0-\u18ff"),
    ("Khmr", "Khmer", "\u1780-\u17ff\u19e0-\u19ff"),
    ("Mong", "Mongolian", "\u1800-\u18af"),
)
SCRIPT_NAMES = {code: name for code, name, _ in SCRIPTS} | {"Zzzz": "non-Latin"}
SCRIPT_CHARS = {code: chars for code, _, chars in SCRIPTS}  # a character class's insides: f"[{...}]"
# One pass over a line: at a letter (the look-ahead skips a space or a mark at one test), a run of a listed
# script, or one letter of any other
_SCRIPT_RUNS = re.compile(r"(?=[^\W\d_])(?:" + "|".join(f"(?P<{code}>[{chars}]+)" for code, _, chars in SCRIPTS)
                          + "|(?P<Zzzz>.))")


def script_counts(text: str) -> Counter:
    """How many characters of the text are in each script (letters of unlisted scripts as "Zzzz")."""
    counts: Counter = Counter()
    for run in _SCRIPT_RUNS.finditer(text):
        counts[run.lastgroup] += run.end() - run.start()
    return counts


RIGHT_TO_LEFT = ("Arab", "Hebr", "Syrc", "Thaa")  # scripts written from right to left


def is_right_to_left(text: str) -> bool:
    """Whether most of the text's letters are of a script written from right to left (Arabic, Hebrew …)."""
    if text.isascii():
        return False
    counts = script_counts(text)
    return 2 * sum(counts[code] for code in RIGHT_TO_LEFT) > sum(counts.values())


def script_of(text: str) -> str | None:
    """The text's script: kana where there is any (Japanese mixes CJK ideographs in), else Hangul where it has
    at least as many Hangul letters as ideographs (Korean text may carry Hanja), else CJK where there are
    ideographs (a Chinese line may carry Latin names and numbers), else the script most of its letters are in;
    None for text without letters."""
    if text.isascii():  # the common case, decided at C speed: `parse` asks this of every line
        return "Latn" if any(ch.isalpha() for ch in text) else None
    counts = script_counts(text)
    if counts["Kana"]:
        return "Kana"
    if counts["Hani"] and counts["Hang"] < counts["Hani"]:
        return "Hani"
    return max(counts, key=counts.get) if counts else None


def lang_of_text(text: str) -> str:
    """The language `--lang auto` takes for a text, by its script: zh for CJK ideographs, en for Latin (or no
    letters), "und-<script>" for any other script."""
    return lang_of_script(script_of(text))


def lang_of_script(script: str | None) -> str:
    return "zh" if script == "Hani" else "en" if script in (None, "Latn") else f"und-{script}"


def assumed_note(lang: str, given: bool, mix: dict[str, float] | None = None) -> str | None:
    """What to tell a user about a language taken for them; None where they gave it. `mix`: the share of the
    corpus's lines in each script (detect_lang), said where the lines are not all of one script."""
    if given:
        return None
    if lang == "en":
        note = "the text is in Latin script: English rules (the PTB tokenizer) are used; for another language " \
               "give --lang CODE (e.g. --lang tr), which reads words by Unicode class"
    elif lang.startswith("und-"):
        note = f"the text is in {SCRIPT_NAMES.get(lang[4:], lang[4:])} script: words are read by Unicode class; " \
               "give --lang CODE to name its language"
    else:
        note = f"the text is in CJK script: taken as Chinese (--lang {lang}); give --lang CODE for another language"
    if mix and len(mix) > 1:
        shares = ", ".join(f"{SCRIPT_NAMES[code]} {100 * share:.0f}%" for code, share in mix.items())
        note = note.replace("the text is in", "most of the text is in", 1) + f" (its first lines by script: {shares})"
    return note


def check_lang(code: str) -> str:
    """A language code as given (--lang), checked: a BCP 47-like tag such as en, tr, pt-BR or und-Cyrl."""
    if not re.fullmatch(r"[A-Za-z]{2,3}(-[A-Za-z0-9]{1,8})*", code or ""):
        raise UserError(f"--lang {code!r}: expected a language code such as en, zh, tr or pt-BR, or auto")
    return code


def detect_lang(path: Path, n_lines: int = 200) -> tuple[str, dict[str, float]]:
    """The language of a corpus, from the script most of its first lines are in (one line of another script,
    a Chinese name in a Turkish text say, does not decide for the others), and the share of those lines in
    each script, largest first."""
    try:
        with open(path, "rb") as f:
            # (a line at a time, each at most MAX_LINE_BYTES: a file without line breaks is refused)
            scripts = Counter(script_of(line.decode("utf-8", "replace"))
                              for _, line in zip(range(n_lines), bounded_lines(f, path)))
    except OSError as e:
        raise UserError(f"cannot read {path}: {e.strerror}") from None
    scripts.pop(None, None)  # lines without letters say nothing
    total = sum(scripts.values())
    mix = {code: count / total for code, count in scripts.most_common()}
    return lang_of_script(next(iter(mix), None)), mix


def corpus_language(corpus: Path, lang: str = "auto", tokenizer: str = "auto",
                    characters: bool = False) -> tuple[str, Tokenizer, str]:
    """The language and tokenizer a new model of `corpus` reads with, as --lang and --tokenizer say (auto: the
    language its script says, and that language's tokenizer), and the line that tells the user which it took."""
    if tokenizer != "auto" and tokenizer not in TOKENIZERS:
        raise UserError(f"--tokenizer {tokenizer!r}: expected auto, {', '.join(TOKENIZERS)}")
    code, mix = detect_lang(corpus) if lang == "auto" else (check_lang(lang), None)
    tok = default_tokenizer(code) if tokenizer == "auto" else Tokenizer(tokenizer)
    tok.characters = characters
    assumed = assumed_note(code, given=lang != "auto", mix=mix)
    return code, tok, (f"language {code}, tokenizer {tok.kind}{' (characters)' if tok.characters else ''}"
                       + (f": {assumed}" if assumed else "") + "; --lang and --tokenizer change them")
