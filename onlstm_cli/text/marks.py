"""Punctuation marks in a sentence's tokens, and where they cut its tree (parse's "boundaries" rule): which
tokens are marks, which marks open (brackets, quotes), which pair, and how early the tree is cut before each
token. The rule is applied by trees.punctuation_first; what it measured is in docs/experiments/turkish.md."""
from __future__ import annotations

import unicodedata
from typing import Sequence


# Unicode puts these among the punctuation (Po) though they stand for words or symbols inside a phrase.
NOT_MARKS = frozenset("%‰‱#&@*/\\§¶†‡′″")


def is_mark(token: str) -> bool:
    """True for tokens made only of punctuation marks (Unicode P*: `,` `.` `«` `)` `。`), not symbols (`$`, `%`)."""
    return bool(token) and all(unicodedata.category(ch)[0] == "P" and ch not in NOT_MARKS for ch in token)


# Double quotation marks and guillemets by family: within a family they alternate in a line, the first opening,
# the next closing, since languages use them both ways (“…” and „…“, «…» and »…«). Any other mark opens by
# its Unicode class: brackets (Ps) and initial quotes (Pi: ‘ ‛); so the apostrophe ’ (Pf) never opens.
_QUOTE_FAMILIES = ('"“”„‟', "«»", "‹›")
_FAMILY_OF = {ch: family for family in _QUOTE_FAMILIES for ch in family}


def may_pair(token: str) -> bool:
    """Whether a token may be one of a pair of marks (a bracket or quote): asked first, as it is cheap."""
    return bool(token) and (token[0] in _FAMILY_OF or unicodedata.category(token[0]) in ("Ps", "Pe", "Pi", "Pf"))


def opening_marks(tokens: Sequence[str]) -> list[bool]:
    """For each token, whether it is a punctuation mark that opens: a bracket, or a quotation mark that opens."""
    seen = dict.fromkeys(_QUOTE_FAMILIES, 0)
    result = []
    for token in tokens:
        if not may_pair(token):
            result.append(False)
        elif (family := _FAMILY_OF.get(token)) is not None:
            seen[family] += 1
            result.append(seen[family] % 2 == 1)
        else:
            result.append(is_mark(token) and unicodedata.category(token[0]) in ("Ps", "Pi"))
    return result


def piece_starts(tokens: Sequence[str], opening: Sequence[bool] | None = None) -> list[bool]:
    """For each token, whether a piece of a tree cut at punctuation marks (parse's "boundaries") starts there:
    at a mark that opens (a bracket or a quote, not right after another), or at a word right after a mark that
    does not. So an opening mark goes with the words after it, any other mark with the words before it.
    `opening`: opening_marks(tokens), where the caller has it."""
    opening = opening_marks(tokens) if opening is None else opening
    return [k > 0 and not opening[k - 1] and (opening[k] or (is_mark(tokens[k - 1]) and not is_mark(token)))
            for k, token in enumerate(tokens)]


def _mark_kind(token: str, opens: bool) -> str | None:
    """What a mark pairs with: its quote family, "single" (‘…’), "bracket"; None for a mark that pairs with
    nothing (a comma), or a closing-shaped mark seen where it cannot close."""
    family = _FAMILY_OF.get(token)
    if family is not None:
        return family
    if token[0] in "‘’‛‚":
        return "single"
    category = unicodedata.category(token[0])
    return "bracket" if category in ("Ps", "Pe") and (category == "Ps") == opens else None


def mark_pairs(tokens: Sequence[str], opening: Sequence[bool] | None = None) -> list[tuple[int, int]]:
    """(opening, closing) positions of the marks that pair in a line: an opening bracket or quote with the
    first closing one of its kind after it that nothing opened since; marks that pair with nothing are left
    out, and so are openings left open inside a pair that closes. `opening`: opening_marks(tokens), where the
    caller has it."""
    opening = opening_marks(tokens) if opening is None else opening
    stack: list[tuple[int, str]] = []
    pairs = []
    for k, token in enumerate(tokens):
        kind = _mark_kind(token, opening[k]) if may_pair(token) and is_mark(token) else None
        if kind is None:
            continue
        if opening[k]:
            stack.append((k, kind))
        elif any(open_kind == kind for _, open_kind in stack):
            while stack[-1][1] != kind:
                stack.pop()
            pairs.append((stack.pop()[0], k))
    return pairs


def piece_levels(tokens: Sequence[str]) -> list[int]:
    """For each token, how early the tree is cut before it: 0 where no piece starts (piece_starts), else the
    higher the fewer pairs of marks enclose the cut, so that a quotation or a parenthesis stays one
    constituent (its ends are cut before anything inside it)."""
    opening = opening_marks(tokens)
    starts = piece_starts(tokens, opening)
    depth = [0] * len(tokens)
    for opened, closed in mark_pairs(tokens, opening):
        for k in range(opened + 1, closed + 1):  # the cuts before these tokens lie inside the pair
            depth[k] += 1
    top = max(depth, default=0) + 1
    return [top - d if start else 0 for start, d in zip(starts, depth)]


def levels_among(levels: Sequence[int], positions: Sequence[int]) -> list[int]:
    """`levels` (piece_levels) for the tokens at `positions` (increasing) alone, the others left out: a cut
    before a token left out (a mark the model did not read) moves to the next token kept, the highest one kept."""
    result, previous = [], -1
    for position in positions:
        result.append(max(levels[previous + 1:position + 1]))
        previous = position
    return result
