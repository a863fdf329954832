"""Punctuation marks in a sentence's tokens, and where they cut its tree (parse's "boundaries" rule): which
tokens are marks, which marks open (brackets, quotes), which pair, and how early the tree is cut before each
token. The rule is applied by trees.punctuation_first; what it measured is in docs/experiments/turkish.md."""
from __future__ import annotations

import unicodedata
from itertools import accumulate
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
    open_of_kind: dict[str, int] = {}  # marks of each kind on the stack: a closing mark asks without a search
    pairs = []
    for k, token in enumerate(tokens):
        kind = _mark_kind(token, opening[k]) if may_pair(token) and is_mark(token) else None
        if kind is None:
            continue
        if opening[k]:
            stack.append((k, kind))
            open_of_kind[kind] = open_of_kind.get(kind, 0) + 1
        elif open_of_kind.get(kind):
            while True:  # each mark is pushed and popped once: linear in the line
                opened, open_kind = stack.pop()
                open_of_kind[open_kind] -= 1
                if open_kind == kind:
                    break
            pairs.append((opened, k))
    return pairs


def piece_levels(tokens: Sequence[str]) -> list[int]:
    """For each token, how early the tree is cut before it: 0 where no piece starts (piece_starts), else the
    higher the fewer pairs of marks enclose the cut, so that a quotation or a parenthesis stays one
    constituent (its ends are cut before anything inside it)."""
    opening = opening_marks(tokens)
    starts = piece_starts(tokens, opening)
    # the cuts before tokens opened + 1 … closed lie inside a pair: each pair's +1 there, as a running sum of
    # its changes (+1 where it begins, −1 after it), so that nested pairs cost no more than the line's length
    change = [0] * (len(tokens) + 1)
    for opened, closed in mark_pairs(tokens, opening):
        change[opened + 1] += 1
        change[closed + 1] -= 1
    depth = list(accumulate(change[:-1]))
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
