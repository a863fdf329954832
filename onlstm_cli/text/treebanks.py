"""Reading gold trees (PTB brackets, a folder of .mrg files, or CoNLL-U) and another parser's trees over the
same sentences."""
from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from onlstm_cli.errors import GoldFormatError
from onlstm_cli.files import read_bounded
from onlstm_cli.text.conllu import looks_like_conllu, read_conllu, too_many_words
from onlstm_cli.text.formats import collapse_unary, escape_word, from_bracket
from onlstm_cli.text.gold import TRACE_TAG, WORD_TAGS, GoldSentence
from onlstm_cli.trees import Tree, fold_tree, tree_leaves

if TYPE_CHECKING:  # nltk is imported where it is used: it costs a quarter of a second at start-up
    import nltk


# A treebank in one file: the largest UD ones are split into files of about 150 MB; all of the PTB's WSJ is 40 MB.
MAX_TREEBANK_BYTES = 1 << 30


def _read_text(path: Path, what: str = "gold file") -> str:
    """A regular file's text (a device or a FIFO is refused in one line: /dev/zero never ends)."""
    data = read_bounded(path, what, GoldFormatError, MAX_TREEBANK_BYTES)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[:error.start].count(b"\n") + 1
        raise GoldFormatError(f"{path}:{line}: not UTF-8 text ({error.reason})") from None
    return text.removeprefix("\ufeff")


def _plain_label(label: str) -> str:
    """NP-SBJ-1 -> NP, NP=2 -> NP; labels that start with "-" (-NONE-) stay as they are."""
    if label.startswith("-"):
        return label
    return re.split(r"[-=]", label, maxsplit=1)[0]


def _split_bracketed(path: Path, text: str) -> list[tuple[int, str]]:
    """(first line, text) of each top-level bracketed tree, found by counting parentheses.

    Works for one tree per line and for multi-line .mrg files alike.
    """
    trees: list[tuple[int, str]] = []
    depth = 0
    start = start_line = 0
    line = 1
    for index, char in enumerate(text):
        if char == "\n":
            line += 1
        elif char == "(":
            if depth == 0:
                start, start_line = index, line
            depth += 1
        elif char == ")":
            if depth == 0:
                raise GoldFormatError(f"{path}:{line}: unbalanced parentheses: ')' without '('")
            depth -= 1
            if depth == 0:
                trees.append((start_line, text[start:index + 1]))
        elif depth == 0 and not char.isspace():
            raise GoldFormatError(f"{path}:{line}: text outside a bracketed tree")
    if depth:
        raise GoldFormatError(
            f"{path}:{start_line}: unbalanced parentheses: this tree is never closed")
    return trees


def _gold_from_ptb(parsed: nltk.Tree, source: str) -> Optional[GoldSentence]:
    """Apply the protocol to one PTB tree; None when no word is kept.

    One walk of the tree: each node's range of kept words, [low, high), comes up from its children. A node's
    own span is that of the words under its subtrees (a word right under it is its preterminal's, not its
    span's). Nodes that keep no word get no span: this is where constituents of only punctuation or traces
    vanish, and a node with one kept child has its child's span (the unary collapse; a unary chain puts all
    its labels on one span)."""
    all_words: list[str] = []
    words: list[str] = []
    tags: list[str] = []
    kept_positions: list[int] = []
    own: list[tuple[int, int, str]] = []  # each phrasal node's kept-word range and label
    ranges: list[tuple[int, int] | None] = []  # the ranges of the nodes finished whose parent is not yet
    stack: list[tuple] = [(parsed, "", False)]  # (node, its parent's label, children done)
    while stack:
        node, parent_label, done = stack.pop()
        if isinstance(node, str):  # a word: its tag is its parent's label
            kept = parent_label in WORD_TAGS
            if parent_label != TRACE_TAG:
                all_words.append(node)
            if kept:
                words.append(node)
                tags.append(parent_label)
                kept_positions.append(len(all_words) - 1)
            ranges.append((len(words) - 1, len(words)) if kept else None)
        elif not done:
            stack.append((node, parent_label, True))
            stack.extend((child, node.label(), False) for child in reversed(node))
        else:
            children = ranges[len(ranges) - len(node):]
            del ranges[len(ranges) - len(node):]
            under = [r for r, child in zip(children, node) if r is not None and not isinstance(child, str)]
            if under:
                own.append((under[0][0], under[-1][1], node.label()))
            found = [r for r in children if r is not None]
            ranges.append((found[0][0], found[-1][1]) if found else None)
    if not words:
        return None

    spans: set[tuple[int, int]] = set()
    labels: dict[tuple[int, int], set[str]] = {}
    for low, high, node_label in own:
        span = (low, high)
        if high - low < 2 or span == (0, len(words)):
            continue
        spans.add(span)
        label = _plain_label(node_label)
        if label:
            labels.setdefault(span, set()).add(label)
    return GoldSentence(words, all_words, tags, spans, labels, source, kept_positions)


# nltk.Tree.fromstring refuses trees nested this deep (nltk.tree.tree.MAX_TREE_DEPTH, where nltk has it), and
# its recursive methods would not get much further.
GOLD_MAX_DEPTH = 500


def _nesting_depth(text: str) -> int:
    depth = deepest = 0
    for char in text:
        if char == "(":
            depth += 1
            deepest = max(deepest, depth)
        elif char == ")":
            depth -= 1
    return deepest


def _read_bracket_file(path: Path, text: str) -> list[GoldSentence]:
    import nltk
    pieces = _split_bracketed(path, text)
    if not pieces:
        raise GoldFormatError(f"{path}: no trees found")
    sentences = []
    for line, tree_text in pieces:
        try:
            parsed = nltk.Tree.fromstring(tree_text)
        except ValueError as error:
            depth = _nesting_depth(tree_text)
            limit = getattr(getattr(nltk.tree, "tree", None), "MAX_TREE_DEPTH", GOLD_MAX_DEPTH)
            if "MAX_TREE_DEPTH" in str(error) or depth >= limit:
                raise GoldFormatError(f"{path}:{line}: this tree is nested {depth} brackets deep, more than the "
                                      f"{limit - 1} onlstm reads (treebank trees are far shallower): "
                                      "remove or flatten it") from None
            reason = str(error).splitlines()[0]
            raise GoldFormatError(f"{path}:{line}: cannot read this tree: {reason}") from None
        if error := too_many_words(f"{path}:{line}", len(parsed.leaves())):
            raise error
        sentence = _gold_from_ptb(parsed, f"{path.name}:{line}")
        if sentence is not None:
            sentences.append(sentence)
    return sentences


def read_gold(path: str | Path) -> list[GoldSentence]:
    """Gold sentences from a directory of *.mrg files, a CoNLL-U file, or a bracketed-tree file.

    Raises GoldFormatError, naming file and line, for anything malformed.
    """
    path = Path(path)
    if not path.exists():
        raise GoldFormatError(f"{path}: no such file or directory")
    if path.is_dir():
        files = sorted(path.glob("*.mrg"))
        if not files:
            raise GoldFormatError(f"{path}: no *.mrg files in this directory")
        sentences = [sentence for file in files
                     for sentence in _read_bracket_file(file, _read_text(file))]
    else:
        text = _read_text(path)
        if not text.strip():
            raise GoldFormatError(f"{path}: empty file")
        if looks_like_conllu(path, text):
            sentences = read_conllu(path, text)
        else:
            sentences = _read_bracket_file(path, text)
    if not sentences:
        raise GoldFormatError(f"{path}: no sentences with words in it")
    return sentences


def _kept_positions(gold: GoldSentence) -> list[int]:
    """Where gold.words sit in gold.all_words (greedy match if the reader did not record it)."""
    if gold.kept_positions:
        return gold.kept_positions
    positions, start = [], 0
    for word in gold.words:
        start = gold.all_words.index(word, start)
        positions.append(start)
        start += 1
    return positions


def keep_only(tree: Tree, keep: set[int], words: list[str]) -> Tree:
    """The tree restricted to the word positions in keep, unary nodes collapsed.

    Leaves are replaced by words[position], i.e. by the gold spelling.
    """
    position = -1

    def on_leaf(_word: str) -> Tree | list:
        nonlocal position
        position += 1
        return words[position] if position in keep else []

    return fold_tree(tree, on_leaf, collapse_unary)


def _first_difference(got: list[str], expected: list[str]) -> str:
    for index, (a, b) in enumerate(zip(got, expected)):
        if escape_word(a) != escape_word(b):
            return f"word {index + 1} is {a!r}, gold has {b!r}"
    return f"{len(got)} words, gold has {len(expected)}"


def read_predicted(path: str | Path, gold: list[GoldSentence]) -> list[Tree]:
    """Another parser's trees, one bracketed tree per line, matched line by line to gold.

    A tree's words must be the gold words, or all gold tokens (punctuation included), in
    which case the removed tokens are dropped from the tree. -LRB- and ( count as the same.
    Returns trees over the kept words (possibly n-ary).
    """
    path = Path(path)
    lines = _read_text(path, "predicted trees file").splitlines()
    trees: list[Tree] = []
    for number, (line, sentence) in enumerate(zip(lines, gold), start=1):
        where = f"{path}:{number}"
        if not line.strip():
            raise GoldFormatError(f"{where}: blank line; expected one bracketed tree per line")
        try:
            tree = from_bracket(line)
        except ValueError as error:
            reason = str(error).splitlines()[0]
            raise GoldFormatError(f"{where}: cannot read this tree: {reason}") from None
        leaves = [escape_word(word) for word in tree_leaves(tree)]
        if leaves == [escape_word(word) for word in sentence.words]:
            trees.append(keep_only(tree, set(range(len(leaves))), sentence.words))
        elif leaves == [escape_word(word) for word in sentence.all_words]:
            trees.append(keep_only(tree, set(_kept_positions(sentence)), sentence.all_words))
        else:
            expected = sentence.all_words if len(leaves) == len(sentence.all_words) \
                else sentence.words
            raise GoldFormatError(f"{where}: words differ from the gold sentence "
                                  f"{sentence.source} ({_first_difference(leaves, expected)})")
    if len(lines) != len(gold):
        raise GoldFormatError(f"{path}: {len(lines)} trees for {len(gold)} gold sentences")
    return trees
