"""Many sentences as one self-contained HTML page (`onlstm parse -f html`), and the page frame (style and
scripts) that the evaluation report's page (report_page.py) shares. The pictures are draw.py's SVGs.
`formats` is imported by the function that needs it."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Iterable, Optional, Sequence, Union

from onlstm_cli.pictures.draw import FONT_FAMILY, INK, SMALL_TEXT, _text, drawn_right_to_left, sentence_svg
from onlstm_cli.trees import Tree

MIN_TEXT_PX = 11                    # no text of a picture is drawn smaller, unless the reader zooms out
MIN_SCALE = MIN_TEXT_PX / SMALL_TEXT  # so pictures shrink to fit their box down to this share of their size
ZOOMS = (1, 1.5, 2)                 # fixed zooms offered beside "readable" and "fit to width"
WIDE_PICTURE = 1100                 # a picture wider than this (drawn readable) gets a note on how to see it all


@dataclass
class NumberedSentence:
    """A parsed input line to draw; tree None and no tokens for an empty line, or a line not parsed (`error`)."""
    line: int                                  # 1-based input line number
    tokens: list[str]
    tree: Optional[Tree]
    distances: Optional[list[Optional[float]]]  # per token, None where not read; None: no bars
    bars: Optional[str] = None                  # what the distances are (sentence_svg's `bars`)
    error: Optional[str] = None                 # why the line was not parsed (no model reads its script, …)


SentenceLike = Union[NumberedSentence, tuple]


def numbered(parsed: Iterable, start: int = 1,
             bars: Optional[Callable[[str], Optional[str]]] = None) -> Iterable[NumberedSentence]:
    """NumberedSentence items from parser.ParsedSentence objects (anything with tokens, tree, distances).
    bars: what the distances of a sentence's model are, from its `model` (picture_files.bars_kind)."""
    for line, sentence in enumerate(parsed, start):
        kind = bars(getattr(sentence, "model", "")) if bars is not None and sentence.tokens else None
        yield NumberedSentence(line, list(sentence.tokens), sentence.tree, sentence.distances, kind,
                               getattr(sentence, "error", None))


def as_item(item: SentenceLike) -> NumberedSentence:
    if isinstance(item, NumberedSentence):
        return item
    line, tokens, tree, distances = item
    return NumberedSentence(line, list(tokens), tree, distances)


ZOOM_CSS = "".join(f"body:has(#zoom-{int(z * 100)}:checked) .picture svg {{ width: calc(var(--w) * {z}); "
                   "max-width: none; min-width: 0; }\n" for z in ZOOMS)

PAGE_CSS = f"""
body {{ font-family: {FONT_FAMILY}; color: {INK}; margin: 1.5em; background: #fff; }}
h1 {{ font-size: 1.4em; margin: 0 0 .3em; }}
h2 {{ font-size: 1em; margin: 1.2em 0 .3em; }}
h3 {{ font-size: .95em; margin: 1em 0 .3em; }}
.legend, .note, .meta {{ color: #555; max-width: 60em; }}
.note.capped {{ background: #fff4d6; border: 1px solid #e6c36a; padding: .5em .8em; }}
.sentence {{ border-top: 1px solid #eee; }}
.sentence h2 {{ color: #666; font-weight: normal; }}
.picture {{ overflow-x: auto; }}
/* A box that scrolls sideways is shaded on the side with more to see: the white covers move with the picture
   (attachment local) and hide the shade of an end already reached. */
.picture {{ background: linear-gradient(to right, #fff 40%, #fff0) left / 48px 100% no-repeat local,
  linear-gradient(to left, #fff 40%, #fff0) right / 48px 100% no-repeat local,
  linear-gradient(to right, #0003, #0000) left / 18px 100% no-repeat scroll,
  linear-gradient(to left, #0003, #0000) right / 18px 100% no-repeat scroll, #fff; }}
.wide {{ color: #555; margin: 0 0 .3em; }}
body:has(#zoom-fit:checked) .wide {{ display: none; }}
/* the note's link to the root: the root comes into view clear of the zoom bar and the box's edge, marked */
.picture .root {{ scroll-margin: 5em 8em; }}
.picture .root:target circle {{ fill: #ffe27a; }}
/* a right-to-left sentence's box (dir="rtl") opens scrolled to its right end, where the sentence starts; the
   picture inside keeps left-to-right coordinates for its titles and legends */
.picture svg {{ direction: ltr; }}
/* A picture shrinks to its box, down to {MIN_SCALE:.0%} of its size (no text under {MIN_TEXT_PX} px); past that the
   box scrolls sideways, opening at the sentence's start. --w: the picture's own width. The zoom bar's
   choices (radio buttons: no script; browsers without :has() keep this one) fit every picture to its box
   or draw them all at a fixed size. */
.picture svg {{ display: block; width: 100%; height: auto; max-width: var(--w); min-width: calc(var(--w) * {MIN_SCALE:.4f}); }}
body:has(#zoom-fit:checked) .picture svg {{ min-width: 0; }}
{ZOOM_CSS}.zoom {{ position: sticky; top: 0; z-index: 1; background: #fff; padding: .3em 0; margin: 0; color: #555; }}
.zoom label {{ margin-right: .8em; white-space: nowrap; }}
.pending {{ background: repeating-linear-gradient(90deg, #fafafa 0 12px, #f3f3f3 12px 24px); }}
.bracket {{ font-family: ui-monospace, monospace; font-size: .85em; color: #333; margin: .3em 0 .8em;
           overflow-wrap: anywhere; white-space: pre-wrap; }}
table {{ border-collapse: collapse; margin: .8em 0; }}
th, td {{ padding: .25em .7em; border-bottom: 1px solid #e4e4e4; text-align: right; }}
th:first-child, td:first-child {{ text-align: left; }}
tr.bound td {{ color: #777; font-style: italic; }}
.charts {{ display: flex; flex-wrap: wrap; gap: 1.5em; }}
/* The report's examples: the gold tree above the predicted one, both as wide, in one box that scrolls
   them together: each word of one stands over the same word of the other. */
.pair .caption {{ color: #555; font-size: .9em; margin: .2em 0; position: sticky; left: 0; }}
"""

ZOOM_BAR = ('<p class="zoom">Pictures: '
            f'<label><input type="radio" name="zoom" id="zoom-readable" checked> readable (text {MIN_TEXT_PX} px '
            'or more; a wide one scrolls)</label><label><input type="radio" name="zoom" id="zoom-fit"> fit to width'
            '</label>' + "".join(f'<label><input type="radio" name="zoom" id="zoom-{int(z * 100)}"> {int(z * 100)}%'
                                 '</label>' for z in ZOOMS) + "</p>")

# Pictures after the first max_eager wait in <template>s; this draws each when it nears the viewport
# (all at once where IntersectionObserver is missing).
LAZY_SCRIPT = """
(function () {
  function show(box) {
    var template = box.querySelector('template');
    if (!template) return;
    box.replaceChildren(template.content.cloneNode(true));
    box.classList.remove('pending');
    box.style.minHeight = '';
  }
  var boxes = document.querySelectorAll('.picture.pending');
  if (!('IntersectionObserver' in window)) { boxes.forEach(show); return; }
  var watcher = new IntersectionObserver(function (entries) {
    entries.forEach(function (entry) {
      if (entry.isIntersecting) { watcher.unobserve(entry.target); show(entry.target); }
    });
  }, {rootMargin: '1000px 0px'});
  boxes.forEach(function (box) { watcher.observe(box); });
})();
"""


def _page(title: str, body: Sequence[str], script: str = "") -> str:
    script_tag = f"<script>{script}</script>" if script else ""
    return (f'<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{_text(title)}</title><style>{PAGE_CSS}</style></head>\n<body>\n"
            + "\n".join(body) + f"\n{script_tag}</body></html>\n")


def _svg_size(svg: str, which: str) -> str:
    match = re.search(rf' {which}="([0-9.]+)"', svg)
    return match.group(1) if match else "120"


def picture(svg: str, lazy: bool = False, rtl: bool = False) -> str:
    """A sentence's SVG in its page box, which scales it to the page (see PAGE_CSS); a lazy one waits in a
    <template> (drawn by LAZY_SCRIPT) in a box as high as the picture at full size. `rtl`: the sentence is
    drawn from the right (draw.py), and its box opens at its right end."""
    style = f"--w:{_svg_size(svg, 'width')}px"
    direction = ' dir="rtl"' if rtl else ""
    if not lazy:
        return f'<div class="picture"{direction} style="{style}">{svg}</div>'
    return (f'<div class="picture pending"{direction} style="{style};min-height:{_svg_size(svg, "height")}px">'
            f"<template>{svg}</template></div>")


def wide_note(svg: str, words: int, root_id: str) -> str:
    """Over a picture too wide for most screens (even drawn as small as it is readable): how to see all of it,
    and a link that brings its root (split 1) into view, wherever the box is scrolled."""
    if float(_svg_size(svg, "width")) * MIN_SCALE <= WIDE_PICTURE or f'id="{root_id}"' not in svg:
        return ""
    return (f'<p class="wide">{words} words, wider than most screens: scroll the picture sideways (a shade marks '
            f'the side with more), or pick “fit to width” above to see it whole. '
            f'<a href="#{root_id}">Show the root (split 1)</a>.</p>')


def html_page(items: Iterable[SentenceLike], title: str = "onlstm parse", max_eager: int = 200,
              max_sentences: int = 5000) -> str:
    """One self-contained HTML page drawing every input line: picture, then the tree in brackets as text.

    Items are NumberedSentence or (line, tokens, tree, distances). The first max_eager pictures are
    inline; later ones sit in <template> elements that the page's small inline script draws as they
    scroll into view. Beyond max_sentences, lines are counted but not drawn, and a note says how many
    were left out and how to get them all (one SVG file per line with --format svg --out-dir).
    No external scripts, styles, fonts or images.
    """
    from onlstm_cli.text.formats import to_bracket

    sections: list[str] = []
    shown = left_out = 0
    for item in map(as_item, items):
        if shown >= max_sentences:
            left_out += 1
            continue
        shown += 1
        heading = f'<section class="sentence" id="line-{item.line}"><h2>line {item.line}</h2>'
        if item.error or not item.tokens:  # a line not parsed says why, as on stderr
            note = f"not parsed: {item.error}" if item.error else "(empty line)"
            sections.append(f'{heading}<p class="note">{_text(note)}</p></section>')
            continue
        root_id = f"line-{item.line}-root"
        svg = sentence_svg(item.tokens, item.tree, item.distances, bars=item.bars, root_id=root_id)
        box = picture(svg, lazy=shown > max_eager, rtl=drawn_right_to_left(item.tokens))
        sections.append(f'{heading}{wide_note(svg, len(item.tokens), root_id)}{box}'
                        f'<p class="bracket">{_text(to_bracket(item.tree))}</p></section>')

    total = shown + left_out
    body = [f"<h1>{_text(title)}</h1>",
            f'<p class="meta">{total:,} line{"s" if total != 1 else ""}.</p>',
            '<p class="legend">Each picture: the words at the bottom; above each word a bar for its syntactic '
            "distance (hover for the value; the blue scale is right of the bars and the line under the words "
            "says what they measure; grey words were not read by the model and have none); above the bars, the "
            "tree the distances give, one row per depth. The circled numbers on the tree are the split order: "
            "1 is the first split (the root, at the largest distance), then row by row, left to right: the "
            "root's two parts, their parts, and so on. A sentence in a script written from right to left "
            "(Arabic, Hebrew) is drawn from right to left, its tree and numbers too. Under each picture, the "
            "same tree in brackets.</p>",
            ZOOM_BAR]
    if shown > max_eager:
        body.append(f'<noscript><p class="note">Pictures after the first {max_eager:,} are drawn by a '
                    "small script as you scroll; with scripts off only their brackets show.</p></noscript>")
    capped_note = ""
    if left_out:
        capped_note = (f'<p class="note capped">Only the first {max_sentences:,} of {total:,} lines are drawn '
                       f"here: {left_out:,} left out. To draw every line, write one SVG file per line with "
                       f"<code>onlstm parse --format svg --out-dir DIR</code>.</p>")
        body.append(capped_note)
    body.extend(sections)
    if capped_note:
        body.append(capped_note)
    return _page(title, body, LAZY_SCRIPT if shown > max_eager else "")
