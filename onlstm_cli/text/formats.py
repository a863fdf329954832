"""Tree output formats (bracket, JSON, nltk drawing, rich) and reading a bracketed tree back."""

from __future__ import annotations

import io
import json
import math
import re
from typing import TYPE_CHECKING, Optional, Sequence

import rich.text
import rich.tree

from onlstm_cli.errors import TreeTooDeepError
from onlstm_cli.trees import Tree, fold_tree, tree_leaves

if TYPE_CHECKING:  # nltk is imported where it is used: it costs a quarter of a second at start-up
    import nltk


# --- output formats ---------------------------------------------------------------------------

def escape_word(word: str) -> str:
    return word.replace("(", "-LRB-").replace(")", "-RRB-")


def _unescape(word: str) -> str:
    return word.replace("-LRB-", "(").replace("-RRB-", ")")


def _preterminal(word: str) -> str:
    word = escape_word(word)
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

    nltk counts a character as one column; on a terminal a wide (CJK) one takes two and a zero-width one
    none. So every word is drawn as a stand-in of its terminal width (rich's cell_len, at least one column),
    one private-use character repeated, and each run of it, left to right, is then replaced by its word
    (nltk writes the leaves in order, apart, on the last line: unwrapped, a long word stays whole): the lines
    stay over their words, and no word is lost whatever characters the words hold (the stand-in appears
    nowhere else in the drawing).
    nltk draws recursively: a tree nested too deep for it (about a thousand levels: a long sentence
    parsed into a chain) raises TreeTooDeepError, whose message names the formats that draw any tree.
    """
    from rich.cells import cell_len

    widths = [max(cell_len(word), 1) for word in tree_leaves(tree)]
    stand_ins = iter(widths)
    drawn = fold_tree(tree, lambda _word: _STAND_IN * next(stand_ins), lambda children: children)
    buffer = io.StringIO()
    try:
        to_nltk(drawn).pretty_print(stream=buffer, maxwidth=0)  # a word whole on its line, not wrapped
    except RecursionError:
        raise TreeTooDeepError(_too_deep(tree)) from None
    except ValueError as error:  # nltk's own depth limit (MAX_TREE_DEPTH), whose advice is for programmers
        if "MAX_TREE_DEPTH" not in str(error):
            raise
        raise TreeTooDeepError(_too_deep(tree)) from None
    words_left = iter(zip(tree_leaves(tree), widths))

    def word(_run) -> str:
        text, width = next(words_left)
        return text + " " * (width - cell_len(text))  # a zero-width word keeps its column
    return re.sub(f"{_STAND_IN}+", word, buffer.getvalue())


_STAND_IN = "\ue000"  # a private-use character: nltk's drawing has none of its own


def _too_deep(tree: Tree) -> str:
    return (f"a tree {tree_depth(tree)} levels deep is too deep for the nltk text drawing; "
            "use --format bracket, json, svg or html")


def to_json(tree: Tree, distances: Optional[Sequence[Optional[float]]] = None,
            log_likelihood: Optional[float] = None) -> str:
    """One-line JSON object {"tree": nested lists, "words": [...], "distances": [...]}, and where a PCFG parsed,
    "log_likelihood": log p(sentence) of the words it read (natural log).

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
    if log_likelihood is not None and math.isfinite(log_likelihood):
        parts.append(f'"log_likelihood": {round(float(log_likelihood), 4)}')
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


def collapse_unary(children: list) -> Tree | list:
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
            node = collapse_unary(open_nodes.pop())
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


# --- reading another parser's trees -----------------------------------------------------------


