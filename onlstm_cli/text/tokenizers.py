"""Tokenization and normalization: a registry of tokenizers, name → function that cuts a line into tokens.

The same `Tokenizer` settings are stored in every model file, so that `parse` cuts and normalizes text
exactly the way the training text was: PTB-style tokens for English, jieba words for Chinese.
Normalization (lower-case, numbers to `N`, NFKC) maps a token to the form the model knows; the tree
always shows the user's own token.
"""
from __future__ import annotations

import functools
import logging
import re
import unicodedata
from dataclasses import asdict, dataclass
from itertools import groupby
from typing import Callable, Sequence

from onlstm_cli.text.marks import NOT_MARKS


# a sign, then digits and separators with a digit among them, then a percent sign. The digit is asked for by a
# look-ahead over the separators before it, as a class that holds no digit: a class with digits on both sides of
# one `\d` backtracked over a long run of digits without an end (111…1x) in time quadratic in its length.
_NUMBER = re.compile(r"^[+\-]?(?=[.,:/\-]*\d)[\d.,:/\-]+%?$")
_SPECIAL = re.compile(r"<\w+>")
BOM = "\ufeff"  # the byte order mark, a zero-width no-break space inside a text
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002a6df]")
_CJK_OR_RUN = re.compile(rf"{_CJK.pattern}|(?:(?!{_CJK.pattern}).)+", re.DOTALL)  # a CJK character, or a run of others


def has_cjk(text: str) -> bool:
    return _CJK.search(text) is not None


def is_punctuation(token: str) -> bool:
    """True for tokens made only of punctuation and symbols (`,` `--` `''` `。` `$`)."""
    return bool(token) and all(unicodedata.category(ch)[0] in "PS" for ch in token)


@dataclass
class Tokenizer:
    """How raw text becomes model tokens. Stored in the model file."""
    # "ptb" (English, the Penn Treebank rules), "jieba" (Chinese), "unicode" (other languages: words and
    # punctuation by Unicode class, see unicode_words), "whitespace" (files trained before "unicode" existed)
    kind: str = "ptb"
    lowercase: bool = True
    numbers_to_n: bool = True  # "29", "3.5", "1,000" → "N", as in the Mikolov PTB text
    nfkc: bool = True          # full-width digits and letters → ASCII
    characters: bool = False   # the model reads CJK words a character at a time (see `units`)

    def __post_init__(self):
        if self.kind not in TOKENIZERS:  # (TOKENIZERS is filled in below, once its functions are defined)
            raise ValueError(f"unknown tokenizer {self.kind!r}; expected one of {', '.join(TOKENIZERS)}")

    def split(self, line: str, pretokenized: bool = False) -> list[str]:
        """Cut a line into the user's tokens (not normalized). A byte order mark (U+FEFF) inside a text, where
        files were joined, is no character of any word: it separates tokens as a space does."""
        line = line.replace(BOM, " ")
        return line.split() if pretokenized else TOKENIZERS[self.kind](line)

    def normalize(self, token: str) -> str:
        """The form of a token that is looked up in the vocabulary."""
        if _SPECIAL.fullmatch(token):
            return token
        if self.nfkc:
            token = unicodedata.normalize("NFKC", token)
        token = token.translate(_CURLY_QUOTES)
        if self.lowercase:
            # Turkish and Azeri İ lower-cases to i and a combining dot above (i̇), which no word typed in
            # lower case has: İstanbul would be another word than istanbul
            token = token.lower().replace("i\u0307", "i")
        if self.numbers_to_n and _NUMBER.match(token):
            return "N"
        return token

    def units(self, token: str) -> list[str]:
        """What a character model reads for one normalized token: each CJK character of it, and its runs of
        other characters (Latin, Cyrillic, digits) whole; a token without CJK is one unit. A character model
        has no unknown CJK words however the text is segmented."""
        return _CJK_OR_RUN.findall(token) if self.characters and has_cjk(token) else [token]

    def reads_words_as_given(self, recut: bool = True) -> bool:
        """True when the model reads a sentence's words as they are (see `reading`)."""
        return not self.characters and (self.kind != "jieba" or not recut)

    def reading(self, words: Sequence[str], recut: bool = True) -> tuple[list[str], list[int | None]]:
        """The units the model reads for a sentence of normalized words, and for each word the index of the
        unit that begins where the word begins (None: the word begins inside a unit). A word's distance is
        that unit's: the boundary before the word.

        - A character model reads each CJK word a character at a time (`units`).
        - A jieba word model reads the sentence cut by jieba again, as its training text was cut: words
          segmented another way (a treebank's, or a user's `--pretokenized` text) would give it word forms
          it never saw, most of them unknown. A word that begins inside a jieba word gets no distance of its
          own (None): it is bound to the word before it more tightly than any boundary the model read.
          With `recut` False the words are jieba's own cut of the text already and are read as they are.
        - Any other model reads the words as they are."""
        if self.characters:
            pieces = [self.units(w) for w in words]
            starts, offset = [], 0
            for piece in pieces:
                starts.append(offset)
                offset += len(piece)
            return [u for piece in pieces for u in piece], starts
        if self.reads_words_as_given(recut) or not words:
            return list(words), list(range(len(words)))
        text, word_at = "", []
        for word in words:
            if text and not (has_cjk(text[-1]) or has_cjk(word[:1])):
                text += " "  # as written: Chinese runs on into digits and Latin, Latin words have spaces
            word_at.append(len(text))
            # a number as a number: jieba would join the letter N to the character after it (N年)
            text += "0" if word == "N" and self.numbers_to_n else word
        units, unit_at, offset = [], {}, 0
        for piece in jieba_cut(text):
            if piece.strip():
                unit_at[offset] = len(units)
                units.append(self.normalize(piece))  # the same form again, and 0 → N
            offset += len(piece)
        return units, [unit_at.get(at) for at in word_at]

    def to_dict(self) -> dict:
        return asdict(self)


_CURLY_QUOTES = str.maketrans({"“": '"', "”": '"', "‘": "'", "’": "'"})


@functools.lru_cache(maxsize=None)
def _marks_outside_ptb():
    """Punctuation marks the Treebank rules would leave glued to a word (« » „ … ¿ ¡), in text of any language
    read with them: any but ASCII, the curly quotes (read as straight ones), and the marks that stand for a
    word or sit inside one (NOT_MARKS, `·` as in Catalan col·lecció, `‐` as in e‐mail)."""
    import regex  # (a dependency of nltk's; imported on first use, as the unicode tokenizer's)
    kept = "".join(regex.escape(ch) for ch in sorted(NOT_MARKS | set("“”‘’·‐")))
    return regex.compile(rf"(?V1)[[\p{{Ps}}\p{{Pe}}\p{{Pi}}\p{{Pf}}\p{{Po}}]--[\x00-\x7f{kept}]]")


_jieba_module = None

# The Penn Treebank tokenizer's rules (Robert MacIntyre's sed script), in the order and form of nltk's
# TreebankWordTokenizer (nltk 3.x, Apache 2.0), which tests/text/test_tokenizers.py checks this copy against. They
# live here with the standard `re` because nltk ≥ 3.10 runs every pattern through its `regex`-engine ReDoS
# guard (these patterns are linear anyway), which made tokenizing the slowest part of `parse`, and because
# importing nltk costs a quarter of a second at every start. Each rule carries strings one of which the
# text must contain for the rule to match (None: no test), so most rules are skipped by a substring test.
def _rules(*rules):
    return [(re.compile(pattern), replacement, needles) for pattern, replacement, needles in rules]


_TREEBANK_RULES = _rules(
    # starting quotes
    (r"^\"", r"``", ('"',)),
    (r"(``)", r" \1 ", ("``",)),
    (r"([ \(\[{<])(\"|\'{2})", r"\1 `` ", ('"', "''")),
    # punctuation
    (r"([:,])([^\d])", r" \1 \2", (":", ",")),
    (r"([:,])$", r" \1 ", (":", ",")),
    (r"\.\.\.", r" ... ", ("...",)),
    (r"[;@#$%&]", r" \g<0> ", None),
    (r'([^\.])(\.)([\]\)}>"\']*)\s*$', r"\1 \2\3 ", (".",)),  # the final period
    (r"[?!]", r" \g<0> ", None),
    (r"([^'])' ", r"\1 ' ", ("' ",)),
    # parentheses and brackets, double dashes
    (r"[\]\[\(\)\{\}\<\>]", r" \g<0> ", None),
    (r"--", r" -- ", ("--",)),
)
# applied to " " + text + " "
_TREEBANK_ENDING_QUOTES = _rules(
    (r"''", " '' ", ("''",)),
    (r'"', " '' ", ('"',)),
    (r"([^' ])('[sS]|'[mM]|'[dD]|') ", r"\1 \2 ", ("'",)),
    (r"([^' ])('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) ", r"\1 \2 ", ("'",)),
)
# case-insensitive: their needles are tested on the lower-cased text (see treebank_words)
_TREEBANK_CONTRACTIONS = _rules(*((pattern, r" \1 \2 ", (needle,)) for pattern, needle in (
    (r"(?i)\b(can)(?#X)(not)\b", "cannot"), (r"(?i)\b(d)(?#X)('ye)\b", "d'ye"),
    (r"(?i)\b(gim)(?#X)(me)\b", "gimme"), (r"(?i)\b(gon)(?#X)(na)\b", "gonna"),
    (r"(?i)\b(got)(?#X)(ta)\b", "gotta"), (r"(?i)\b(lem)(?#X)(me)\b", "lemme"),
    (r"(?i)\b(more)(?#X)('n)\b", "more'n"), (r"(?i)\b(wan)(?#X)(na)(?=\s)", "wanna"),
    (r"(?i) ('t)(?#X)(is)\b", "'tis"), (r"(?i) ('t)(?#X)(was)\b", "'twas"))))


def treebank_words(text: str) -> list[str]:
    """Penn Treebank word tokens of `text`, exactly as nltk's TreebankWordTokenizer().tokenize(text)."""
    for pattern, replacement, needles in _TREEBANK_RULES:
        if needles is None or any(needle in text for needle in needles):
            text = pattern.sub(replacement, text)
    text = f" {text} "
    for pattern, replacement, needles in _TREEBANK_ENDING_QUOTES:
        if any(needle in text for needle in needles):
            text = pattern.sub(replacement, text)
    # The rules only insert spaces from here on, so a needle missing now stays missing. Outside ASCII,
    # (?i) also matches letters that str.lower() does not map to ASCII (ſ, ı, K), so no test there.
    lowered = text.lower() if text.isascii() else None
    for pattern, replacement, (needle,) in _TREEBANK_CONTRACTIONS:
        if lowered is None or needle in lowered:
            text = pattern.sub(replacement, text)
    return text.split()


def ptb_words(line: str) -> list[str]:
    """English tokens by the Penn Treebank rules, each as the user wrote it."""
    # Keep special tokens such as <unk> whole: the Treebank rules would cut them into < unk >.
    specials = _SPECIAL.findall(line)
    written = line
    if specials:
        line = _SPECIAL.sub(" onlstmspecialtoken ", line)
        written = _SPECIAL.sub(lambda m: f" {m.group(0)} ", written)  # the line as written, specials apart
    # Treebank rules know only straight quotes; curly ones come back as written via _as_written.
    line_for_rules = line.translate(_CURLY_QUOTES)
    if not line_for_rules.isascii():
        line_for_rules = _marks_outside_ptb().sub(r" \g<0> ", line_for_rules)
    tokens = treebank_words(line_for_rules)
    if specials:
        queue = iter(specials)
        tokens = [next(queue) if t == "onlstmspecialtoken" else t for t in tokens]
    return _as_written(written, tokens)


def _as_written(line: str, tokens: list[str]) -> list[str]:
    """Give the user back the characters they wrote: the Treebank rules rewrite quotes (" → `` or '')
    and we feed them curly quotes as straight ones. The rules only add spaces and rewrite quotes, so each
    token starts where the spaces after the one before end: it is looked for there, not searched for
    along the rest of the line (a search for each token took time quadratic in the line)."""
    plain = line.translate(_CURLY_QUOTES)  # same length as line, so positions carry over
    out, cursor = [], 0
    for token in tokens:
        at = cursor
        while at < len(plain) and plain[at].isspace():
            at += 1
        forms = ('"', "``", "''") if token in ("``", "''") else (token,)
        length = next((len(form) for form in forms if plain.startswith(form, at)), 0)
        if not length:  # not found as written: keep the tokenizer's form
            out.append(token)
            cursor = at
            continue
        out.append(line[at:at + length])
        cursor = at + length
    return out


# The "unicode" tokenizer, for languages without rules of their own. A word is a run of letters, marks,
# digits and format characters (soft hyphen, zero-width joiners), by the `regex` module's \p classes: the
# standard `re` has no \p, and its \w leaves out combining marks, which would cut Devanagari words apart.
# Inner apostrophes and hyphens join a word (aujourd'hui, disse-lhe, из-за), and so do the Hebrew maqaf, geresh
# and gershayim (בית־ספר, צה״ל), the Armenian hyphen, and the Armenian question, exclamation and emphasis
# marks, written over a vowel inside the word they ask or stress (ինչո՞ւ); every other character is
# punctuation, a token of its own (a run of the same character, "..." or "--", is one token). Kept whole:
# numbers with inner separators (3,5 1.000 10:30), abbreviations with inner periods (z.B. U.S. т.е.), and
# before another word a single capital (initials, French "M.") or a common title or abbreviation below; a
# final period is always split off. French and Italian elisions are cut after the apostrophe
# (l'homme → l' homme, dell'anno → dell' anno), as their treebanks do. Japanese, written without spaces, is
# cut where the script changes between kanji, hiragana and katakana
# (私は本を読みました → 私 は 本 を 読 みました): a particle or an ending is then a word of its own, as in
# Japanese treebanks, where the run would otherwise be one word a sentence. It is 3 to 4 times as fast as
# nltk's toktok, which also leaves a period inside a line on its word and cuts aujourd'hui in three.
_ABBREVIATIONS = ("Dr", "Mr", "Mrs", "Ms", "Prof", "St", "Sr", "Sra", "Srta", "Dra", "Mme", "Mlle", "Hr", "Fr",
                  "Nr", "bzw", "vgl", "usw", "ca", "etc", "Abs", "Jh", "pp", "vs", "cf", "av",
                  "г", "гг", "см", "др", "ул", "им", "тыс", "млн", "млрд")
_UNICODE_TOKEN = r"""
    <\w+>                                              # a special token: <unk>
  | \p{N}+(?:[.,:/]\p{N}+)+(?![\p{L}\p{M}\p{N}\p{Cf}])  # 3,5  1.000  10:30  1/2
  | (?:\p{L}{1,4}\.){2,}                               # z.B.  U.S.  a.k.a.
  | (?:\p{Lu}|(?:ABBREVIATIONS))\.(?=\s+\S)            # M. Dupont, Dr. Müller (not at the end)
  | [\p{L}\p{M}\p{N}\p{Cf}_]+(?:['’\-֊־՛՜՞׳״][\p{L}\p{M}\p{N}\p{Cf}_]+)*  # words, inner apostrophes and hyphens
  | ([^\p{L}\p{M}\p{N}\p{Cf}\s])\1*                    # punctuation: one character, or a run of it
"""
_ELISION = r"(?i)^(?:l|d|j|m|n|s|t|c|qu|jusqu|lorsqu|puisqu|quoiqu|dell|nell|dall|sull|all|quell|un)['’](?=\p{L})"
_KANA = r"[\p{Hiragana}\p{Katakana}]"
# a run of one of the three (ー, the long-vowel mark, goes with the kana before it), or of anything else
_JAPANESE_RUNS = r"\p{Han}+|\p{Hiragana}[\p{Hiragana}ー]*|\p{Katakana}[\p{Katakana}ー]*|[^\p{Han}\p{Hiragana}\p{Katakana}]+"
_unicode_patterns = None


def unicode_words(line: str) -> list[str]:
    """The "unicode" tokenizer's tokens of a line (see above), each a piece of the line as written."""
    global _unicode_patterns
    if _unicode_patterns is None:
        import regex  # (a dependency of nltk's; imported here, as only this tokenizer needs it)
        words = "|".join(r"\b" + a for a in _ABBREVIATIONS)
        _unicode_patterns = (regex.compile(_UNICODE_TOKEN.replace("ABBREVIATIONS", words), regex.VERBOSE),
                             regex.compile(_ELISION), regex.compile(_KANA), regex.compile(_JAPANESE_RUNS))
    token_pattern, elision, kana, japanese_runs = _unicode_patterns
    tokens = []
    for match in token_pattern.finditer(line):
        token = match.group(0)
        cut = elision.match(token)
        if cut:
            tokens += [token[:cut.end()], token[cut.end():]]
        elif kana.search(token):
            tokens += japanese_runs.findall(token)
        else:
            tokens.append(token)
    return tokens


def _jieba():
    global _jieba_module
    if _jieba_module is None:
        import jieba
        jieba.setLogLevel(logging.WARNING)  # its dictionary-loading chatter is not for our users
        _jieba_module = jieba
    return _jieba_module


def _is_word_piece(piece: str) -> bool:
    """Letters, marks, digits (and format characters, such as zero-width joiners) of a script other than CJK."""
    return not has_cjk(piece) and all(unicodedata.category(ch)[0] in "LMN" or unicodedata.category(ch) == "Cf"
                                      for ch in piece)


def jieba_cut(text: str) -> list[str]:
    """jieba's pieces of a text, spaces included (their lengths add up to the text's), except that a word of
    another script stays whole: jieba knows Chinese and ASCII only, and cuts кошка, Ελλάδα or naïve a letter
    at a time. Pieces of ASCII alone are jieba's, as in a jieba model's training text."""
    pieces: list[str] = []
    for is_word, run in groupby(_jieba().lcut(text), key=_is_word_piece):
        run = list(run)
        if is_word and len(run) > 1 and not all(piece.isascii() for piece in run):
            pieces.append("".join(run))
        else:
            pieces.extend(run)
    return pieces


def jieba_words(line: str) -> list[str]:
    """Chinese words as jieba cuts them; a word of another script whole (jieba_cut)."""
    return [w for w in jieba_cut(line.strip()) if w.strip()]


# name → the function that cuts a line into the user's tokens (stored in a model file by its name). A new
# tokenizer is one function and one line here.
TOKENIZERS: dict[str, Callable[[str], list[str]]] = {
    "ptb": ptb_words,          # English: the Penn Treebank rules
    "jieba": jieba_words,      # Chinese
    "unicode": unicode_words,  # any other language: words and punctuation by Unicode class
    "whitespace": str.split,   # files trained before "unicode" existed
}
