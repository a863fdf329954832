"""Tree output formats, and reading gold trees (PTB brackets, CoNLL-U) and other parsers' trees.

Gold trees follow the unsupervised-parsing protocol of PRPN / ON-LSTM / Compound PCFG:
only tokens with a word POS tag are kept (punctuation, traces, currency symbols go), and
the gold constituents are the spans over the kept words, with unary chains collapsed.
"""

from __future__ import annotations

import io
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Optional, Sequence

import rich.text
import rich.tree

from onlstm_cli.errors import GoldFormatError, TreeTooDeepError
from onlstm_cli.trees import Tree, fold_tree, tree_leaves

if TYPE_CHECKING:  # nltk is imported where it is used: it costs a quarter of a second at start-up
    import nltk

# Penn Treebank tags of real words (the list in the PRPN / ON-LSTM data code). Everything
# else is dropped before evaluation: punctuation, -NONE- traces, $, #, -LRB-, ...
WORD_TAGS = frozenset({
    "CC", "CD", "DT", "EX", "FW", "IN", "JJ", "JJR", "JJS", "LS", "MD", "NN", "NNS", "NNP",
    "NNPS", "PDT", "POS", "PRP", "PRP$", "RB", "RBR", "RBS", "RP", "SYM", "TO", "UH", "VB",
    "VBD", "VBG", "VBN", "VBP", "VBZ", "WDT", "WP", "WP$", "WRB",
})
TRACE_TAG = "-NONE-"


@dataclass
class GoldSentence:
    words: list[str]                   # kept words, the ones that are parsed and scored
    all_words: list[str]               # every token, punctuation included, traces removed
    tags: list[str]                    # POS (PTB) or UPOS (CoNLL-U) of the kept words
    spans: set[tuple[int, int]]        # gold constituents over kept words, >= 2 words, not the root
    labels: dict[tuple[int, int], set[str]]  # the labels on each gold span
    source: str                        # "file:line" where the sentence starts
    # Index in all_words of each kept word; read_predicted needs it to drop punctuation
    # from trees given over all_words.
    kept_positions: list[int] = field(default_factory=list)
    # Where CoNLL-U multiword tokens join words (Portuguese "do" = de + o, Spanish "dámelo"): the text as
    # written, one token per multiword token or word, over the kept words, and each kept word's token. A
    # model reads the text as it was trained on it (model_scores.py); None when every token is one word.
    tokens: Optional[list[str]] = None
    token_of_word: Optional[list[int]] = None

    def as_written(self) -> tuple[list[str], list[Optional[int]]]:
        """(the tokens a reader of the text sees, for each kept word the index of the token it begins, or None
        for a word inside a multiword token after its first)."""
        if self.tokens is None or self.token_of_word is None:
            return list(self.words), list(range(len(self.words)))
        starts, seen = [], set()
        for token in self.token_of_word:
            starts.append(None if token in seen else token)
            seen.add(token)
        return list(self.tokens), starts


# --- output formats ---------------------------------------------------------------------------

def _escape(word: str) -> str:
    return word.replace("(", "-LRB-").replace(")", "-RRB-")


def _unescape(word: str) -> str:
    return word.replace("-LRB-", "(").replace("-RRB-", ")")


def _preterminal(word: str) -> str:
    word = _escape(word)
    # nltk reads a backslash before ")" as an escape; a space keeps the word whole (EVALB does not mind)
    return f"(X {word} )" if word.endswith("\\") else f"(X {word})"


def to_bracket(tree: Tree) -> str:
    """One PTB-style line: words are preterminals (X w), internal nodes are S.

    ["a", ["b", "c"]] -> "(S (X a) (S (X b) (X c)))"; a single word -> "(S (X w))".
    As in the Penn Treebank, "(" and ")" inside words are written -LRB- and -RRB-, so that
    nltk and EVALB can read the line back; from_bracket undoes it.
    """
    if isinstance(tree, str):
        return f"(S {_preterminal(tree)})"
    # one pass with an explicit stack (trees may be thousands of levels deep); None closes a node
    parts: list[str] = []
    stack: list = [tree]
    while stack:
        node = stack.pop()
        if node is None:
            parts[-1] += ")"
        elif isinstance(node, list):
            parts.append("(S")
            stack.append(None)
            stack.extend(reversed(node))
        else:
            parts.append(_preterminal(node))
    return " ".join(parts)


def to_nltk(tree: Tree) -> nltk.Tree:
    """The to_bracket shape as an nltk.Tree, with the original (unescaped) words as leaves."""
    import nltk
    if isinstance(tree, str):
        return nltk.Tree("S", [nltk.Tree("X", [tree])])
    return fold_tree(tree, lambda word: nltk.Tree("X", [word]),
                     lambda children: nltk.Tree("S", children))


def tree_depth(tree: Tree) -> int:
    """Nodes on the longest path from the root to a word (a word alone: 0)."""
    return fold_tree(tree, lambda _word: 0, lambda children: 1 + max(children, default=0))


def to_ascii(tree: Tree) -> str:
    """nltk's text drawing of the tree (Tree.pretty_print), as a string.

    Wide (CJK) characters are counted as one column by nltk, so Chinese drawings come out
    slightly skewed. nltk draws recursively: a tree nested too deep for it (about a thousand
    levels: a long sentence parsed into a chain) raises TreeTooDeepError, whose message names
    the formats that draw any tree.
    """
    buffer = io.StringIO()
    try:
        to_nltk(tree).pretty_print(stream=buffer)
    except RecursionError:
        raise TreeTooDeepError(_too_deep(tree)) from None
    except ValueError as error:  # nltk's own depth limit (MAX_TREE_DEPTH), whose advice is for programmers
        if "MAX_TREE_DEPTH" not in str(error):
            raise
        raise TreeTooDeepError(_too_deep(tree)) from None
    return buffer.getvalue()


def _too_deep(tree: Tree) -> str:
    return (f"a tree {tree_depth(tree)} levels deep is too deep for the nltk text drawing; "
            "use --format bracket, json, svg or html")


def to_json(tree: Tree, distances: Optional[Sequence[Optional[float]]] = None) -> str:
    """One-line JSON object {"tree": nested lists, "words": [...], "distances": [...]}.

    A distance is null for a token the model did not read (punctuation it has no word for).
    """
    def dump(value: object) -> str:
        return json.dumps(value, ensure_ascii=False, allow_nan=False)

    # Built by hand because json.dumps recurses once per nesting level.
    tree_json = fold_tree(tree, dump, lambda children: "[" + ", ".join(children) + "]")
    parts = [f'"tree": {tree_json}', f'"words": {dump(tree_leaves(tree))}']
    if distances is not None:
        # JSON has no NaN: a distance that is not a finite number is null like an unread token's
        parts.append(f'"distances": {dump([round(float(d), 4) if d is not None and math.isfinite(d) else None for d in distances])}')
    return "{" + ", ".join(parts) + "}"


def distances_text(tokens: Sequence[str], distances: Sequence[Optional[float]]) -> str:
    """`word:2.31 ,:- word:1.07`: each token with its distance (`-` for a token the model did not read)."""
    return " ".join(f"{t}:{'-' if d is None else f'{d:.2f}'}" for t, d in zip(tokens, distances))


def to_rich(tree: Tree) -> rich.tree.Tree:
    """A rich renderable; words are Text, so "[...]" in a word is not read as markup."""
    def leaf(word: str) -> rich.tree.Tree:
        return rich.tree.Tree(rich.text.Text(word, style="bold"))

    def node(children: list[rich.tree.Tree]) -> rich.tree.Tree:
        parent = rich.tree.Tree(rich.text.Text("S", style="dim"))
        parent.children.extend(children)
        return parent

    if isinstance(tree, str):
        return node([leaf(tree)])
    return fold_tree(tree, leaf, node)


def _collapse(children: list) -> Tree | list:
    """Drop children that lost all their words, then collapse unary nodes."""
    kept = [child for child in children if child != []]
    return kept[0] if len(kept) == 1 else kept


_BRACKET_TOKEN = re.compile(r"\(|\)|[^\s()]+")


def from_bracket(line: str) -> Tree:
    """Nested lists of words from any bracketed tree (labels ignored, unary nodes collapsed).

    The inverse of to_bracket, -LRB- / -RRB- included; reads n-ary trees of other parsers too.
    As in PTB, the first token after "(" is the node's label, so "(NP dogs)" is the word
    "dogs", and "((a b) c)" has an unlabeled root. Parsed with an explicit stack rather than
    nltk, which refuses trees nested more than 500 deep.
    Raises ValueError if the line is not exactly one bracketed tree with words.
    """
    open_nodes: list[list] = []
    tree: Tree | list | None = None
    label_expected = False
    for token in _BRACKET_TOKEN.findall(line):
        if token == "(":
            if tree is not None and not open_nodes:
                raise ValueError("more than one tree on the line")
            open_nodes.append([])
            label_expected = True
        elif token == ")":
            if not open_nodes:
                raise ValueError("unbalanced parentheses: ')' without '('")
            node = _collapse(open_nodes.pop())
            if open_nodes:
                open_nodes[-1].append(node)
            else:
                tree = node
            label_expected = False
        elif not open_nodes:
            raise ValueError(f"{token!r} outside the brackets")
        elif label_expected:
            label_expected = False
        else:
            open_nodes[-1].append(_unescape(token))
    if open_nodes:
        raise ValueError("unbalanced parentheses: a '(' is never closed")
    if tree is None or tree == []:
        raise ValueError("the tree has no words")
    return tree


# --- reading gold trees -----------------------------------------------------------------------

def _read_text(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError as error:
        raise GoldFormatError(f"{path}: cannot read: {error.strerror}") from None
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
    """Apply the protocol to one PTB tree; None when no word is kept."""
    all_words: list[str] = []
    words: list[str] = []
    tags: list[str] = []
    kept_positions: list[int] = []
    # Kept-word index range [low, high] under each phrasal node, keyed by tree position.
    ranges: dict[tuple[int, ...], list[int]] = {}
    for leaf_position in parsed.treepositions("leaves"):
        tag = parsed[leaf_position[:-1]].label()
        if tag == TRACE_TAG:
            continue
        all_words.append(parsed[leaf_position])
        if tag not in WORD_TAGS:
            continue
        index = len(words)
        words.append(parsed[leaf_position])
        tags.append(tag)
        kept_positions.append(len(all_words) - 1)
        # Ancestors above the preterminal. Nodes that keep no word never get a range: this
        # is where constituents of only punctuation or traces vanish.
        for depth in range(len(leaf_position) - 1):
            node_range = ranges.setdefault(leaf_position[:depth], [index, index])
            node_range[1] = index
    if not words:
        return None

    spans: set[tuple[int, int]] = set()
    labels: dict[tuple[int, int], set[str]] = {}
    for node_position, (low, high) in ranges.items():
        span = (low, high + 1)
        # A node with one kept child has its child's span: that is the unary collapse, and
        # it is also why a unary chain puts all its labels on one span.
        if span[1] - span[0] < 2 or span == (0, len(words)):
            continue
        spans.add(span)
        label = _plain_label(parsed[node_position].label())
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
        from onlstm_cli.text.conllu import looks_like_conllu, read_conllu  # it builds on this module's types
        if looks_like_conllu(path, text):
            sentences = read_conllu(path, text)
        else:
            sentences = _read_bracket_file(path, text)
    if not sentences:
        raise GoldFormatError(f"{path}: no sentences with words in it")
    return sentences


# --- reading another parser's trees -----------------------------------------------------------

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


def _keep_only(tree: Tree, keep: set[int], words: list[str]) -> Tree:
    """The tree restricted to the word positions in keep, unary nodes collapsed.

    Leaves are replaced by words[position], i.e. by the gold spelling.
    """
    position = -1

    def on_leaf(_word: str) -> Tree | list:
        nonlocal position
        position += 1
        return words[position] if position in keep else []

    return fold_tree(tree, on_leaf, _collapse)


def _first_difference(got: list[str], expected: list[str]) -> str:
    for index, (a, b) in enumerate(zip(got, expected)):
        if _escape(a) != _escape(b):
            return f"word {index + 1} is {a!r}, gold has {b!r}"
    return f"{len(got)} words, gold has {len(expected)}"


def read_predicted(path: str | Path, gold: list[GoldSentence]) -> list[Tree]:
    """Another parser's trees, one bracketed tree per line, matched line by line to gold.

    A tree's words must be the gold words, or all gold tokens (punctuation included), in
    which case the removed tokens are dropped from the tree. -LRB- and ( count as the same.
    Returns trees over the kept words (possibly n-ary).
    """
    path = Path(path)
    lines = _read_text(path).splitlines()
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
        leaves = [_escape(word) for word in tree_leaves(tree)]
        if leaves == [_escape(word) for word in sentence.words]:
            trees.append(_keep_only(tree, set(range(len(leaves))), sentence.words))
        elif leaves == [_escape(word) for word in sentence.all_words]:
            trees.append(_keep_only(tree, set(_kept_positions(sentence)), sentence.all_words))
        else:
            expected = sentence.all_words if len(leaves) == len(sentence.all_words) \
                else sentence.words
            raise GoldFormatError(f"{where}: words differ from the gold sentence "
                                  f"{sentence.source} ({_first_difference(leaves, expected)})")
    if len(lines) != len(gold):
        raise GoldFormatError(f"{path}: {len(lines)} trees for {len(gold)} gold sentences")
    return trees
