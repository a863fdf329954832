"""Pictures of parses: one sentence as SVG (many sentences as one HTML page: page.py; the evaluation
report's page: report_page.py).

The picture is the one the method is explained with: the words along the bottom, a bar above each word
for its syntactic distance (with a scale, and a legend saying what the numbers are: the ON-LSTM's d_f, or
a span parser's split heights), and above the bars the tree those distances give. The tree is drawn as in
a textbook: one row per depth, every child one row below its parent, each word dropping straight down from
its row to the words, so no two edges cross. Each internal node carries its split number: 1 is the root
(the first split, at the largest distance), then the nodes are numbered breadth-first: by depth from the
root (the root's children, then their children, ...), left to right at each depth, so the numbers read
row by row. Every node's number is larger than its parent's, so the numbers read as the top-down
splitting; nodes at the same depth split independently of each other, and left-to-right is only a
reading order between them. The numbers come from the tree alone, so they are the same for either split
rule. A sentence in a script written from right to left (Arabic, Hebrew) is drawn from right to left: its first
word at the right, the tree mirrored, the numbers going right to left at each depth.

Everything is text built with the standard library: no scripts, fonts or images are loaded from anywhere.
CJK words are drawn with the system's fonts through a font-family stack,
and their width is estimated as one em per wide character (text_width).
Nothing heavy is imported here.
"""
from __future__ import annotations

import html
import math
import re
import unicodedata
from dataclasses import dataclass
from typing import Optional, Sequence

from onlstm_cli.text.languages import is_right_to_left
from onlstm_cli.trees import Tree, fold_tree

# Latin from the system's UI font; CJK from the first of these that the machine has (Linux, macOS, Windows).
# Without any of them a browser draws Chinese as empty boxes: the CLI warns then (picture_files.py).
FONT_FAMILY = ("system-ui, 'Noto Sans CJK SC', 'Noto Sans SC', 'Source Han Sans SC', 'Source Han Sans CN', "
               "'WenQuanYi Micro Hei', 'WenQuanYi Zen Hei', 'PingFang SC', 'Hiragino Sans GB', 'Microsoft YaHei', "
               "'Droid Sans Fallback', sans-serif")
FONT_SIZE = 14          # the words
SMALL_TEXT = 12         # everything else: split numbers, the scale, the legend, the title (page.py keeps it >= 11 px)

MARGIN = 12
TITLE_HEIGHT = 20
COLUMN_PADDING = 12     # horizontal room around each word
MIN_COLUMN = 24         # so a bar and a node circle still fit over a one-letter word
BAR_AREA = 72           # height of the tallest bar
BAR_GAP = 6             # between the tree's leaves and the bar area, and the bars and the words
WORD_ROW = 22
NODE_RADIUS = 10        # a circle around a two-digit split number
TREE_HEIGHT_TARGET = 360  # deep trees get a smaller level step, down to MIN_LEVEL_STEP
MAX_LEVEL_STEP = 30
# A long sentence's tree is deep: rows closer than two circles keep its words near the tree (on screen with
# it) instead of under hundreds of pixels of vertical lines. Circles of consecutive rows still never touch:
# _level_step keeps each parent's circle CIRCLE_GAP clear of its child's, and nodes over disjoint spans stand
# at least a column apart.
MIN_LEVEL_STEP = 8
CIRCLE_GAP = 4
MIN_BAR = 3.0           # the smallest bar still shows when a page scales a long sentence down
SCALE_GUTTER = 52       # right of the bars, for their scale

# What the bars measure, by the kind of model that gave the distances (sentence_svg's `bars`).
BAR_LEGENDS = {
    "onlstm": "bars: ON-LSTM syntactic distance d_f (split level of the master forget gate)",
    "span": "bars: split height (words in the span parser's constituent split before the word)",
    None: "bars: syntactic distance of each word",
}

INK = "#222"
TREE_INK = "#555"
BAR_COLOR = "#4a7bd0"
BELOW_ZERO = "#b9cbed"     # a bar for a distance under the scale's 0
UNREAD_INK = "#9a9a9a"
GUIDE_INK = "#d8d8d8"

# XML 1.0 cannot hold these even as character references: they become U+FFFD.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _text(value: object) -> str:
    """Escaped for XML and HTML text and attribute values alike; newlines too, so an SVG stays one line."""
    escaped = html.escape(_NOT_XML.sub("\ufffd", str(value)), quote=True)
    return escaped.replace("\n", "&#10;").replace("\r", "&#13;").replace("\t", "&#9;")


def _num(value: float) -> str:
    """A coordinate with at most one decimal: pictures of long pages stay small."""
    return f"{value:.1f}".rstrip("0").rstrip(".")


# Scripts whose letters are drawn wider than Latin's: in Chromium with the Noto fonts, a Malayalam, Sinhala or
# Myanmar word was up to 1.6 times as wide as 0.62 em a letter, a Tamil one 1.4 times (a browser test in
# tests/pictures/test_draw.py measures words of these scripts).
_WIDE_LETTERS = re.compile("[\u0b80-\u0bff\u0d00-\u0dff\u1000-\u109f]")


def text_width(text: str, font_size: float = FONT_SIZE) -> float:
    """Estimated drawn width: wide (CJK, full-width) characters one em, combining marks none, letters of the
    wide scripts above 0.8 em, others 0.62 em."""
    ems = 0.0
    for char in text:
        if unicodedata.combining(char):
            continue
        ems += 1.0 if unicodedata.east_asian_width(char) in ("W", "F") else \
            0.8 if _WIDE_LETTERS.match(char) else 0.62
    return ems * font_size


# --- one sentence -----------------------------------------------------------------------------

class _Node:
    """A tree node over word columns first..last (inclusive); a leaf has no children. depth: edges from
    the root; x: where it is drawn (a leaf over its word, an inner node midway between its outer children)."""
    __slots__ = ("first", "last", "height", "children", "order", "depth", "x")

    def __init__(self, first: int, last: int, height: int, children: list):
        self.first, self.last, self.height, self.children = first, last, height, children
        self.order = self.depth = 0
        self.x = 0.0


def _layout_nodes(tree: Tree) -> list[_Node]:
    """Every node in level order (the root first), with its span, height, depth and split number."""
    position = 0

    def on_leaf(_word: str) -> _Node:
        nonlocal position
        position += 1
        return _Node(position - 1, position - 1, 0, [])

    def on_node(children: list[_Node]) -> _Node:
        return _Node(children[0].first, children[-1].last, 1 + max(c.height for c in children), children)

    nodes = [fold_tree(tree, on_leaf, on_node)]  # fold_tree uses a stack: deep trees are fine
    number = 0
    for node in nodes:  # breadth-first: the list grows as it is read
        if node.children:
            number += 1
            node.order = number
            for child in node.children:
                child.depth = node.depth + 1
                nodes.append(child)
    return nodes


def split_order(tree: Tree) -> list[tuple[int, int, int]]:
    """(split number, first word, end word) of each internal node, end exclusive, in split order.

    Numbered as drawn: the root is 1, then breadth-first (by depth from the root, left to right).
    """
    return [(node.order, node.first, node.last + 1) for node in _layout_nodes(tree) if node.children]


def _empty_svg(note: str, title: Optional[str]) -> str:
    width, height = 2 * MARGIN + max(text_width(note), text_width(title or "")) + 4, 2 * MARGIN + 44
    parts = [_svg_open(width, height, title)]
    if title:
        parts.append(f'<text class="title" x="{MARGIN}" y="{MARGIN + 12}" font-size="{SMALL_TEXT}" fill="#666">'
                     f'{_text(title)}</text>')
    parts.append(f'<text class="note" x="{MARGIN}" y="{MARGIN + 36}" fill="{UNREAD_INK}">{_text(note)}</text>')
    return "".join(parts) + "</svg>"


def _svg_open(width: float, height: float, title: Optional[str]) -> str:
    w, h = _num(width), _num(height)
    head = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
            f'font-family="{_text(FONT_FAMILY)}" font-size="{FONT_SIZE}">')
    if title:
        head += f"<title>{_text(title)}</title>"
    return head


@dataclass
class _Frame:
    """Where things go in one sentence's picture: word columns, and the rows from the top down."""
    centers: list[float]
    widths: list[float]
    step: float         # between consecutive depths of the tree
    tree_top: float     # the root's row
    leaf_y: float       # the deepest row: every word's line ends here
    bars_top: float
    bars_bottom: float
    word_y: float       # the words' baseline
    legend_y: float     # the legend's baseline (the bars' meaning), when there is one
    width: float
    height: float

    def row(self, depth: int) -> float:
        return self.tree_top + depth * self.step


def drawn_right_to_left(tokens: Sequence[str]) -> bool:
    """Whether a sentence is drawn from the right: most of its letters are of a right-to-left script."""
    return is_right_to_left(" ".join(tokens))


def _frame(tokens: Sequence[str], nodes: list[_Node], numbered: bool, title: Optional[str], legend: Optional[str],
           min_width: float = 0) -> _Frame:
    """The columns run from right to left for a sentence in a script written that way (Arabic, Hebrew): its
    first word is where its reader starts, and the tree over it is the mirror image of the same tree over a
    left-to-right sentence. Places the nodes (their x) on the way: the rows' step depends on where they are."""
    widths = [max(MIN_COLUMN, text_width(token) + COLUMN_PADDING) for token in tokens]
    rtl = drawn_right_to_left(tokens)
    centers, x = [], float(MARGIN)
    for width in (reversed(widths) if rtl else widths):
        centers.append(x + width / 2)
        x += width
    if rtl:
        centers.reverse()
    for node in reversed(nodes):  # children before their parents
        node.x = ((node.children[0].x + node.children[-1].x) / 2 if node.children
                  else centers[node.first])
    width = x + MARGIN + (SCALE_GUTTER if legend else 0)
    if legend:
        width = max(width, 2 * MARGIN + text_width(legend, SMALL_TEXT))
    width = max(width, min_width)
    depth = max(node.depth for node in nodes)
    step = _level_step(nodes, depth, numbered)
    tree_top = MARGIN + (TITLE_HEIGHT if title else 0) + NODE_RADIUS
    leaf_y = tree_top + depth * step
    bars_top = leaf_y + BAR_GAP
    bars_bottom = bars_top + (BAR_AREA if legend else 0)
    word_y = bars_bottom + BAR_GAP + FONT_SIZE
    legend_y = word_y + WORD_ROW / 2 + SMALL_TEXT + 4
    height = (legend_y if legend else word_y + WORD_ROW / 2) + MARGIN
    return _Frame(centers, widths, step, tree_top, leaf_y, bars_top, bars_bottom, word_y, legend_y, width, height)


def _level_step(nodes: list[_Node], depth: int, numbered: bool) -> float:
    """Rows as far apart as fits the tree into TREE_HEIGHT_TARGET, within MIN and MAX_LEVEL_STEP, and far
    enough apart that no numbered circle touches one a few rows under it in its own subtree (a parent right
    above the middle child of three needs rows two circles apart)."""
    if not depth:
        return 0.0
    step = min(MAX_LEVEL_STEP, max(MIN_LEVEL_STEP, TREE_HEIGHT_TARGET / depth))
    if not numbered:
        return step
    widest = max(_radius(node) for node in nodes if node.children)
    for node in nodes:
        below, rows = [child for child in node.children if child.children], 1
        while below and rows * step < _radius(node) + widest + CIRCLE_GAP:
            for child in below:
                reach, apart = _radius(node) + _radius(child) + CIRCLE_GAP, abs(child.x - node.x)
                if apart < reach:
                    step = max(step, math.sqrt(reach ** 2 - apart ** 2) / rows)
            below, rows = [g for child in below for g in child.children if g.children], rows + 1
    return step


def sentence_svg(tokens: Sequence[str], tree: Optional[Tree], distances: Optional[Sequence[Optional[float]]],
                 title: Optional[str] = None, split_numbers: bool = True, bars: Optional[str] = None,
                 min_width: float = 0, root_id: Optional[str] = None, hint: Optional[str] = None) -> str:
    """One self-contained SVG (a single line of text) of a sentence: its tree, distance bars and words.

    Each token is exactly one <text class="word"> element along the bottom. Above each token the model
    read, a <rect class="bar"> shows its distance, scaled to the sentence's largest one (the value is in
    the bar's tooltip, the scale beside the bars); a token with distance None (not read by the model) is
    drawn grey without a bar. bars says what the distances are, for the legend under the words: "onlstm"
    (the ON-LSTM's d_f), "span" (a span parser's split heights) or None (not known). distances=None draws
    no bar area at all (a gold tree). Above the bars the tree is drawn textbook style, one row per depth,
    with no two edges crossing; with split_numbers each internal node is a circle with its split number
    (see the module docstring for the order) as <text class="order">. Trees may be n-ary. min_width
    widens the picture (room on the right): two pictures of one sentence then scale alike in a page.
    root_id: an id for the root's mark (class "root"), for a page's link to it. hint: a line on how to
    see the picture (a wide one scrolls), drawn in the title's row after the title (class "hint").
    An empty sentence (no tokens) gives a small SVG saying so.
    """
    tokens = list(tokens)
    if not tokens:
        return _empty_svg("(empty line)", title)
    if tree is None:
        raise ValueError("a sentence with words needs a tree")
    nodes = _layout_nodes(tree)
    if nodes[0].last + 1 != len(tokens):
        raise ValueError(f"the tree has {nodes[0].last + 1} words, the sentence {len(tokens)}")
    if distances is not None and len(distances) != len(tokens):
        raise ValueError(f"{len(distances)} distances for {len(tokens)} words")
    has_bars = distances is not None and any(d is not None for d in distances)
    legend = BAR_LEGENDS.get(bars, BAR_LEGENDS[None]) if has_bars else None
    frame = _frame(tokens, nodes, split_numbers, title or hint, legend, min_width)

    description = "The tree above the words." if distances is None else \
        "The tree above, a bar per word for its syntactic distance, the words below."
    if split_numbers:
        description += " The numbers on the tree give the split order: 1 is the root, then row by row."
    parts = [_svg_open(frame.width, frame.height, title), f"<desc>{description}</desc>"]
    if title:
        parts.append(f'<text class="title" x="{MARGIN}" y="{MARGIN + 12}" font-size="{SMALL_TEXT}" fill="#666">'
                     f'{_text(title)}</text>')
    if hint:
        x = MARGIN + (text_width(title, SMALL_TEXT) + SMALL_TEXT if title else 0)
        parts.append(f'<text class="hint" x="{_num(x)}" y="{MARGIN + 12}" font-size="{SMALL_TEXT}" fill="#666">'
                     f'{_text(hint)}</text>')
    if distances is not None:
        # Guides from each word's line down through the bars, behind everything else. Lines are drawn as
        # one <path> per kind: a long page holds thousands of pictures, and this keeps each small.
        guides = "".join(f"M{_num(cx)} {_num(frame.leaf_y)}V{_num(frame.bars_bottom)}" for cx in frame.centers)
        parts.append(f'<path class="guides" d="{guides}" stroke="{GUIDE_INK}" stroke-dasharray="2 3"/>')
    parts.extend(_tree(nodes, frame, split_numbers, root_id))
    if has_bars:
        parts.append(_bars(tokens, distances, frame, legend))
    parts.append(_words(tokens, distances, frame))
    return "".join(parts) + "</svg>"


def _tree(nodes: list[_Node], frame: _Frame, split_numbers: bool, root_id: Optional[str] = None) -> list[str]:
    """Edges, then node marks on top of them.

    Each child is drawn one row below its parent, and a word then drops straight down to the words' row:
    every subtree stays inside the columns of its words and below its root's row, and a parent's edges
    stay between its row and the next, so no two edges can cross (the textbook layout).
    """
    edges, marks = [], []
    for node in nodes:
        if not node.children:
            continue
        py = frame.row(node.depth)
        for child in node.children:
            edges.append(f"M{_num(node.x)} {_num(py)}L{_num(child.x)} {_num(frame.row(child.depth))}")
            if not child.children and frame.row(child.depth) < frame.leaf_y:
                edges.append(f"V{_num(frame.leaf_y)}")
        marks.append(_node_mark(node, node.x, py, split_numbers, root_id if node is nodes[0] else None))
    parts = [f'<path class="edges" d="{"".join(edges)}" stroke="{TREE_INK}" stroke-width="1.3" fill="none"/>']
    if split_numbers:
        parts.append(f'<g class="nodes" fill="#fff" stroke="{TREE_INK}" font-size="{SMALL_TEXT}" '
                     f'font-weight="bold" text-anchor="middle">'
                     f'{"".join(marks)}</g>')
    else:
        parts.append(f'<g class="nodes" fill="{TREE_INK}">{"".join(marks)}</g>')
    return parts


def _words(tokens: Sequence[str], distances: Optional[Sequence[Optional[float]]], frame: _Frame) -> str:
    parts = [f'<g class="words" text-anchor="middle" fill="{INK}">']
    for k, (token, cx) in enumerate(zip(tokens, frame.centers)):
        word = f'<text class="word" x="{_num(cx)}" y="{_num(frame.word_y)}">{_text(token)}</text>'
        if distances is not None and distances[k] is None:
            word = (f'<g class="unread" fill="{UNREAD_INK}"><title>{_text(token)}: not read by the model'
                    f'</title>{word}</g>')
        parts.append(word)
    return "".join(parts) + "</g>"


def _radius(node: _Node) -> float:
    """A numbered node's circle: wide enough for its split number."""
    return max(NODE_RADIUS, text_width(str(node.order), SMALL_TEXT) / 2 + 3)


def _node_mark(node: _Node, x: float, y: float, numbered: bool, mark_id: Optional[str] = None) -> str:
    """A node's circle, with its split number when numbered, and a tooltip giving its words; mark_id: the
    root's id (and class "root")."""
    named = f' id="{_text(mark_id)}" class="root"' if mark_id else ""
    if len(node.children) == 2:
        right = node.children[1].first
        span = f"words {node.first + 1}–{right} | {right + 1}–{node.last + 1}"
    else:
        span = f"words {node.first + 1}–{node.last + 1}"
    if not numbered:
        return f'<circle{named} cx="{_num(x)}" cy="{_num(y)}" r="3"><title>{span}</title></circle>'
    label = str(node.order)
    radius = _radius(node)
    return (f'<g{named}><title>split {label}: {span}</title><circle cx="{_num(x)}" cy="{_num(y)}" r="{_num(radius)}"/>'
            f'<text class="order" x="{_num(x)}" y="{_num(y + 4)}" fill="{INK}" stroke="none">{label}</text></g>')


def _value(value: float) -> str:
    """A scale's figure: whole numbers as such (split heights), others to 3 significant digits."""
    return str(int(value)) if float(value).is_integer() else f"{value:.3g}"


def _bars(tokens: Sequence[str], distances: Sequence[Optional[float]], frame: _Frame, legend: str) -> str:
    """A bar per read word, from the bottom of the bar area up (the tallest is the sentence's largest
    distance), a scale from 0 right of them, and the legend saying what they measure under the words.

    A distance below 0 (a word that begins inside a unit the model read is put under every boundary:
    distances.distances_of_words) is a pale stub at the 0 line: distances and split heights measure from 0,
    so the scale never starts below it."""
    top, bottom, centers, widths = frame.bars_top, frame.bars_bottom, frame.centers, frame.widths
    high = max(float(d) for d in distances if d is not None)
    right = MARGIN + sum(widths)  # the columns' right end (the first word's or the last's)
    parts = [f'<g class="bars" fill="{BAR_COLOR}">',
             f'<line x1="{MARGIN}" y1="{_num(bottom)}" x2="{_num(right)}" '
             f'y2="{_num(bottom)}" stroke="{GUIDE_INK}"/>']
    for token, d, cx, width in zip(tokens, distances, centers, widths):
        if d is None:
            continue
        share = max(0.0, float(d)) / high if high > 0 else 0.0
        height = max(MIN_BAR, share * (bottom - top))  # a zero distance still shows, even scaled down
        bar_width = min(26.0, max(8.0, width * 0.5))
        below = f' class="bar below" fill="{BELOW_ZERO}"' if d < 0 else ' class="bar"'
        parts.append(f'<rect{below} x="{_num(cx - bar_width / 2)}" y="{_num(bottom - height)}" '
                     f'width="{_num(bar_width)}" height="{_num(height)}">'
                     f'<title>{_text(token)}: distance {float(d):.3f}{" (below 0)" if d < 0 else ""}</title></rect>')
    parts.append("</g>")
    x = right + 8
    # The scale in the bars' blue and upright, the split numbers black, bold and circled: a "10" on the
    # scale reads as a bar height at a glance, never as split 10.
    parts.append(f'<g class="scale" fill="{BAR_COLOR}" stroke="{BAR_COLOR}" font-size="{SMALL_TEXT}">'
                 f'<path d="M{_num(x)} {_num(top)}V{_num(bottom)}M{_num(x)} {_num(top)}h4M{_num(x)} {_num(bottom)}h4"/>'
                 f'<text x="{_num(x + 6)}" y="{_num(top + 4)}" stroke="none">{_value(max(0.0, high))}</text>'
                 f'<text x="{_num(x + 6)}" y="{_num(bottom)}" stroke="none">0</text></g>'
                 f'<text class="legend" x="{MARGIN}" y="{_num(frame.legend_y)}" font-size="{SMALL_TEXT}" '
                 f'fill="#666">{_text(legend)}</text>')
    return "".join(parts)
