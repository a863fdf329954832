"""Gold trees from CoNLL-U dependency treebanks (UD): each word's subtree, where it is contiguous over the
kept words, is a constituent; multiword tokens are kept as the text shows them (GoldSentence.tokens)."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from onlstm_cli.text.gold import GoldSentence
from onlstm_cli.errors import GoldFormatError
from onlstm_cli.trees import MAX_SENTENCE_WORDS

CONLLU_DROPPED_UPOS = frozenset({"PUNCT"})


def too_many_words(where: str, words: int) -> GoldFormatError | None:
    """The error for a gold sentence longer than parse parses (trees.MAX_SENTENCE_WORDS), else None."""
    if words <= MAX_SENTENCE_WORDS:
        return None
    return GoldFormatError(f"{where}: a sentence of {words:,} words, more than the {MAX_SENTENCE_WORDS:,} onlstm "
                           "parses (treebank sentences are far shorter): remove it, or split it into sentences")


def looks_like_conllu(path: Path, text: str) -> bool:
    if path.suffix == ".conllu":
        return True
    for line in text.splitlines():
        if line.strip() and not line.startswith("#"):
            return len(line.split("\t")) == 10
    return False


def _heads(path: Path, rows: list[tuple[int, list[str]]], number: int) -> list[int]:
    """Each token's head (0-based, -1 for the root), checked: ids in order, heads in range, one root."""
    count = len(rows)
    heads: list[int] = []
    root_id: Optional[int] = None
    for expected_id, (line, fields) in enumerate(rows, start=1):
        if fields[0] != str(expected_id):
            raise GoldFormatError(
                f"{path}:{line}: token id {fields[0]!r}, expected {expected_id}")
        try:
            head = int(fields[6])
        except ValueError:
            raise GoldFormatError(f"{path}:{line}: bad head index {fields[6]!r}") from None
        if head == expected_id:
            raise GoldFormatError(f"{path}:{line}: bad head index {head}: token {expected_id} is its own head")
        if not 0 <= head <= count:
            raise GoldFormatError(f"{path}:{line}: bad head index {head} in a "
                                  f"{count}-word sentence")
        if head == 0:
            if root_id is not None:  # UD: exactly one token of a sentence has head 0
                raise GoldFormatError(f"{path}:{line}: sentence {number} has more than one root: tokens "
                                      f"{root_id} and {expected_id} both have head 0 (CoNLL-U allows one)")
            root_id = expected_id
        heads.append(head - 1)
    return heads


def _leaves_first(path: Path, rows: list[tuple[int, list[str]]], heads: list[int]) -> list[int]:
    """The tokens of a dependency tree, each after every token below it; a token that the root does not reach
    (its heads form a cycle) is a GoldFormatError."""
    children: list[list[int]] = [[] for _ in heads]
    roots = []
    for token, head in enumerate(heads):
        (roots if head == -1 else children[head]).append(token)
    order = list(roots)  # parents first, then reversed
    for token in order:
        order.extend(children[token])
    if len(order) < len(heads):
        reached = set(order)
        first = next(token for token in range(len(heads)) if token not in reached)
        raise GoldFormatError(f"{path}:{rows[first][0]}: head indices form a cycle")
    return order[::-1]


def _gold_from_conllu(path: Path, rows: list[tuple[int, list[str]]], source: str, number: int = 1,
                      multiword: Optional[list[tuple[int, int, str]]] = None) -> Optional[GoldSentence]:
    """Gold spans of a dependency tree: the subtree of each word, if contiguous over kept words.

    `number`: the sentence's place in the file (1-based), for messages. `multiword`: the sentence's
    multiword tokens, (first word id, last word id, form)."""
    count = len(rows)
    heads = _heads(path, rows, number)
    all_words = [fields[1] for _, fields in rows]
    upos = [fields[3] for _, fields in rows]
    kept_positions = [i for i in range(count) if upos[i] not in CONLLU_DROPPED_UPOS]
    if not kept_positions:
        return None
    kept_index = {token: index for index, token in enumerate(kept_positions)}

    # Each token's subtree as the kept words in it, (lowest index, highest, how many), gathered from the
    # leaves up in one pass: following each word up to the root took time quadratic in a deep tree's length.
    low, high, size = [count] * count, [-1] * count, [0] * count
    for token in _leaves_first(path, rows, heads):
        if token in kept_index:
            index = kept_index[token]
            low[token], high[token], size[token] = min(low[token], index), max(high[token], index), size[token] + 1
        head = heads[token]
        if head != -1:
            low[head], high[head] = min(low[head], low[token]), max(high[head], high[token])
            size[head] += size[token]

    n_kept = len(kept_positions)
    spans: set[tuple[int, int]] = set()
    labels: dict[tuple[int, int], set[str]] = {}
    for head in range(count):
        if size[head] < 2:
            continue
        # A non-projective subtree has gaps over the kept words: it is no constituent.
        if high[head] - low[head] + 1 != size[head] or (low[head], high[head] + 1) == (0, n_kept):
            continue
        span = (low[head], high[head] + 1)
        spans.add(span)
        labels.setdefault(span, set()).add(upos[head])

    tokens, token_of_word = _written_tokens(all_words, kept_positions, multiword or [])
    return GoldSentence(
        words=[all_words[i] for i in kept_positions],
        all_words=all_words,
        tags=[upos[i] for i in kept_positions],
        spans=spans,
        labels=labels,
        source=source,
        kept_positions=kept_positions,
        tokens=tokens,
        token_of_word=token_of_word,
    )


def _written_tokens(all_words: list[str], kept_positions: list[int], multiword: list[tuple[int, int, str]]
                    ) -> tuple[Optional[list[str]], Optional[list[int]]]:
    """The kept words' tokens as written: a multiword token once, for all of its kept words."""
    if not multiword:
        return None, None
    token_at = {}  # 0-based word position → (multiword token number, its form)
    for number, (first, last, form) in enumerate(multiword):
        for position in range(first - 1, last):  # (read_conllu checked that the range is inside the sentence)
            token_at[position] = (number, form)
    tokens, token_of_word, index_of = [], [], {}
    for position in kept_positions:
        key, form = token_at.get(position, (("word", position), all_words[position]))
        if key not in index_of:
            index_of[key] = len(tokens)
            tokens.append(form)
        token_of_word.append(index_of[key])
    return tokens, token_of_word


def _multiword_range(path: Path, line: int, token_id: str, words_before: int,
                     previous: list[tuple[int, int, int, str]]) -> tuple[int, int]:
    """The first and last word id of a multiword token (`3-4`), refused where they do not fit the sentence as
    CoNLL-U has it: an increasing range that starts at the next word (its line goes right before the words it
    joins), past the last range. Whether it ends inside the sentence is known at its end (read_conllu)."""
    where = f"{path}:{line}: multiword token {token_id!r}"
    first, _, last = token_id.partition("-")
    if not (first.isdigit() and last.isdigit()):
        raise GoldFormatError(f"{where}: expected a range of word ids such as 3-4")
    first, last = int(first), int(last)
    if first >= last:
        raise GoldFormatError(f"{where}: a reversed or one-word range (its first word id must be below its last)")
    if previous and first <= previous[-1][2]:
        raise GoldFormatError(f"{where} overlaps multiword token {previous[-1][1]}-{previous[-1][2]}")
    if first != words_before + 1:
        raise GoldFormatError(f"{where} comes after word {words_before}: a range goes right before its first word, "
                              f"so it should start at {words_before + 1}")
    return first, last


def read_conllu(path: Path, text: str) -> list[GoldSentence]:
    sentences: list[GoldSentence] = []
    rows: list[tuple[int, list[str]]] = []
    multiword: list[tuple[int, int, int, str]] = []  # the block's multiword tokens: line, first and last word id, form
    block_start: Optional[int] = None
    number = 0  # sentences of the file so far

    def finish_block() -> None:
        nonlocal number
        for line, first, last, _ in multiword:
            if last > len(rows):
                raise GoldFormatError(f"{path}:{line}: multiword token '{first}-{last}' goes beyond the sentence's "
                                      f"{len(rows)} words")
        if rows:
            number += 1
            if error := too_many_words(f"{path}:{block_start}", len(rows)):
                raise error
            sentence = _gold_from_conllu(path, rows, f"{path.name}:{block_start}", number,
                                         [(first, last, form) for _, first, last, form in multiword])
            if sentence is not None:
                sentences.append(sentence)

    for line_number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            finish_block()
            rows, multiword, block_start = [], [], None
            continue
        if block_start is None:
            block_start = line_number
        if line.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) != 10:
            raise GoldFormatError(f"{path}:{line_number}: expected 10 tab-separated fields, "
                                  f"found {len(fields)}")
        # Multiword tokens (1-2) and empty nodes (1.1) are not words of the basic tree; a multiword token is
        # what the text shows, though (GoldSentence.tokens).
        if "-" in fields[0]:
            first, last = _multiword_range(path, line_number, fields[0], len(rows), multiword)
            multiword.append((line_number, first, last, fields[1]))
            continue
        if "." in fields[0]:
            continue
        rows.append((line_number, fields))
    finish_block()
    return sentences
