"""Pictures of long sentences (issue 53 item 3.10): a 60-word sentence's tree was 800 px tall, mostly vertical
lines, its words under the fold at 1400x900, and its root and last 25 words past the right edge with nothing
but a line running off it to say so.

Now a deep tree's rows are closer (no node circle touching another or lying on an edge), a wide picture says
over it how to see it all and links to its root, its box is shaded on the side with more, and a wide picture
opened by itself (-f svg) says so at its top. The browser tests measure what Chromium lays out at 1400x900.
"""
from __future__ import annotations

import html
import json
import re
import subprocess
import xml.etree.ElementTree as ET

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from onlstm_cli.pictures.draw import MAX_LEVEL_STEP, MIN_LEVEL_STEP, sentence_svg, text_width
from onlstm_cli.pictures.page import NumberedSentence, html_page
from onlstm_cli.pictures.picture_files import standalone_svg, write_svgs
from onlstm_cli.trees import build_tree, left_branching, right_branching
from svg_geometry import SVG, marks_in_the_way, node_circles, svg_crossings
from test_draw import chromium_command, png_rgb_pixels, screenshot

SHORT = "The cat sat on the mat .".split()
# 60 words, written for this test; the bundled English model parses it 31 levels deep, its root over the
# last word (the full stop), about 1,480 px from the left
LONG = ("When the committee met on Tuesday after weeks of delays , the chairman , who had spent most of the year "
        "arguing with the board about the budget , told reporters that the company would sell two of its factories "
        "in the north , close a third one near the coast and move its offices to a smaller building .").split()


@pytest.fixture(scope="module")
def long_parse():
    from onlstm_cli.api import Parser
    assert len(LONG) == 60
    return next(iter(Parser.load("en", pretokenized=True).parse_lines([" ".join(LONG)])))


def rows(svg: str) -> list[float]:
    """The distinct heights of the node circles, top down: one per depth of the tree."""
    return sorted({cy for _, cy, _ in node_circles(svg)})


def view_box(svg: str) -> list[float]:
    return [float(v) for v in ET.fromstring(svg).get("viewBox").split()]


# --- the drawing ------------------------------------------------------------------------------------

def test_a_long_sentences_tree_is_compact_and_everything_is_inside_the_picture(long_parse):
    svg = sentence_svg(long_parse.tokens, long_parse.tree, long_parse.distances)
    root = ET.fromstring(svg)
    _, _, width, height = view_box(svg)
    heights = rows(svg)
    depth = len(heights)  # circles are drawn only at the inner rows, the leaves hang one row lower
    step = heights[1] - heights[0]
    assert depth > 20
    assert step <= 14  # rows closer than two circles: were 22 px apart, the tree 680 px tall (840 with the words)
    assert heights[-1] - heights[0] <= 400
    assert height < 600  # the tree, bars and words fit a 900 px window under the page's heading
    words = [e for e in root.iter(SVG + "text") if e.get("class") == "word"]
    assert [w.text for w in words] == LONG
    for word in words:  # every word's box (its estimated width) is inside the picture
        x, half = float(word.get("x")), text_width(word.text) / 2
        assert 0 <= x - half and x + half <= width and float(word.get("y")) <= height
    (x, y, r), = [c for c in node_circles(svg) if c[1] == heights[0]]
    assert 0 <= x - r and x + r <= width and 0 <= y - r  # the root's circle too
    assert not svg_crossings(svg)
    assert not marks_in_the_way(svg, gap=2)


def test_short_sentences_keep_their_rows():
    svg = sentence_svg(SHORT, right_branching(SHORT), [1.0] * len(SHORT))
    heights = rows(svg)
    assert [b - a for a, b in zip(heights, heights[1:])] == [MAX_LEVEL_STEP] * (len(heights) - 1)


@pytest.mark.parametrize("shape", [left_branching, right_branching])
def test_chains_get_rows_as_close_as_their_circles_allow(shape):
    words = [f"word{k}" for k in range(60)]
    svg = sentence_svg(words, shape(words), [1.0] * 60)
    heights = rows(svg)
    assert len(heights) == 59
    assert heights[1] - heights[0] == pytest.approx(MIN_LEVEL_STEP, abs=0.1)  # 360 px over 59 rows is too close
    assert not marks_in_the_way(svg, gap=2) and not svg_crossings(svg)


def test_a_circle_right_over_a_middle_child_keeps_its_distance():
    """Three children, the middle one a subtree straight under its parent: rows must be two circles apart
    there, however deep the tree (the smallest step alone would put one circle on the other)."""
    tree = "middle"
    for _ in range(50):
        tree = ["left", tree, "right"]
    svg = sentence_svg(["left"] * 50 + ["middle"] + ["right"] * 50, tree, None)
    assert not marks_in_the_way(svg, gap=2)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.floats(0, 10, allow_nan=False), min_size=2, max_size=90), st.sampled_from(["paper", "symmetric"]))
def test_no_node_mark_touches_another_or_sits_on_an_edge(distances, split):
    """Trees as parsed (binary, numbered), up to 90 words: rows closer than two circles never put one on another
    or on an edge. (A gold tree's wide fan can run an edge by a sibling's dot: not checked here.)"""
    words = [f"w{k}" for k in range(len(distances))]
    svg = sentence_svg(words, build_tree(distances, words, split), distances)
    assert not marks_in_the_way(svg, gap=2)


# --- how to see all of a wide one -------------------------------------------------------------------

def test_a_wide_picture_on_the_page_says_how_to_see_it_and_links_its_root():
    words = [f"word{k}" for k in range(60)]
    page = html_page([NumberedSentence(1, SHORT, right_branching(SHORT), [1.0] * len(SHORT)),
                      NumberedSentence(2, words, left_branching(words), [1.0] * 60)])
    notes = re.findall(r'<p class="wide">(.*?)</p>', page)
    assert len(notes) == 1 and "60 words" in notes[0] and "scroll" in notes[0] and "fit to width" in notes[0]
    assert '<a href="#line-2-root">' in notes[0]
    assert page.count('id="line-2-root" class="root"') == 1 and page.count('id="line-1-root" class="root"') == 1
    assert page.index('<p class="wide">') > page.index('id="line-2"')  # over its own picture


def test_a_wide_picture_opened_by_itself_says_so_at_its_top(tmp_path):
    words = [f"word{k}" for k in range(60)]
    wide = standalone_svg(words, left_branching(words), [1.0] * 60, "onlstm")
    hints = [e.text for e in ET.fromstring(wide).iter(SVG + "text") if e.get("class") == "hint"]
    assert hints == ["60 words, wider than most screens: scroll sideways to see them all"]
    narrow = standalone_svg(SHORT, right_branching(SHORT), [1.0] * len(SHORT), "onlstm")
    assert narrow == sentence_svg(SHORT, right_branching(SHORT), [1.0] * len(SHORT), bars="onlstm")
    written, = write_svgs([(1, words, left_branching(words), [1.0] * 60)], tmp_path)
    root = ET.fromstring(written.read_text(encoding="utf-8"))
    texts = {e.get("class"): e for e in root.iter(SVG + "text") if e.get("class") in ("title", "hint")}
    assert texts["title"].text == "line 1" and "scroll sideways" in texts["hint"].text
    assert float(texts["hint"].get("x")) > float(texts["title"].get("x")) + 30  # after the title, not over it


# --- in a browser, at 1400x900 ----------------------------------------------------------------------

# What the browser lays out, as JSON in the DOM: each picture box at first view, then after following each
# note's link to its root; and the sticky zoom bar's bottom.
PROBE = """<script>
window.addEventListener('load', function () {
  function rect(e) { var q = e.getBoundingClientRect(); return [q.left, q.top, q.right, q.bottom]; }
  function measure() {
    return Array.prototype.map.call(document.querySelectorAll('.picture'), function (box) {
      var svg = box.querySelector('svg'), root = svg.querySelector('.root'), note = box.previousElementSibling;
      var wide = note && note.classList.contains('wide');
      return {box: rect(box), svg: rect(svg), scrollLeft: box.scrollLeft, scrollWidth: box.scrollWidth,
              words: Array.prototype.map.call(svg.querySelectorAll('text.word'), rect),
              root: rect(root), rootFill: getComputedStyle(root.querySelector('circle')).fill,
              note: wide ? rect(note) : null, link: wide ? note.querySelector('a').getAttribute('href') : null};
    });
  }
  var result = {first: measure(), followed: [], zoomBars: []};
  var links = document.querySelectorAll('.wide a'), k = 0;
  function next() {
    if (k > 0) { result.followed.push(measure()); result.zoomBars.push(rect(document.querySelector('.zoom'))); }
    if (k < links.length) { links[k++].click(); setTimeout(next, 50); return; }
    var out = document.createElement('pre'); out.id = 'probe'; out.textContent = JSON.stringify(result);
    document.body.appendChild(out);
  }
  next();
});
</script>"""


def inside(inner, outer, slack=1.0) -> bool:
    return (inner[0] >= outer[0] - slack and inner[1] >= outer[1] - slack and inner[2] <= outer[2] + slack
            and inner[3] <= outer[3] + slack)


def test_a_long_sentence_at_1400x900_shows_its_words_and_reaches_its_root(long_parse, tmp_path):
    chain = [f"word{k}" for k in range(60)]
    page = html_page([NumberedSentence(1, long_parse.tokens, long_parse.tree, long_parse.distances, "onlstm"),
                      NumberedSentence(2, chain, left_branching(chain), [1.0] * 60)])
    probed = tmp_path / "probed.html"
    probed.write_text(page.replace("</body>", PROBE + "</body>"), encoding="utf-8")
    command = chromium_command(tmp_path / "profile", "1400,900") + ["--dump-dom", probed.resolve().as_uri()]
    dom = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False).stdout
    match = re.search(r'<pre id="probe">(.*?)</pre>', dom, re.S)
    assert match, "chromium ran no script"
    found = json.loads(html.unescape(match.group(1)))
    screen = [0, 0, 1400, 900]
    for box in found["first"]:
        left = box["box"][0] - box["scrollLeft"]  # where the box's scrollable area starts
        area = [left, box["box"][1], left + box["scrollWidth"], box["box"][3]]
        assert inside(box["svg"], area)  # the whole drawing can be scrolled to
        assert all(inside(word, box["svg"]) for word in box["words"]) and inside(box["root"], box["svg"])
        assert box["svg"][2] - box["svg"][0] > box["box"][2] - box["box"][0]  # wider than the box: it scrolls
        assert box["link"] == f"#line-{found['first'].index(box) + 1}-root"
    first = found["first"][0]
    assert inside(first["note"], screen)  # the note and its link are seen at first view
    assert all(word[3] <= 900 for word in first["words"])  # so are the words, under the whole tree's height
    assert first["words"][0][0] >= first["box"][0]  # the box opens at the first word
    assert len(found["followed"]) == 2
    for k, (box, zoom_bar) in enumerate(zip(found["followed"], found["zoomBars"])):  # after picture k + 1's link
        root = box[k]["root"]
        assert inside(root, screen) and inside(root, box[k]["box"]) and root[1] >= zoom_bar[3] - 1  # not under it
        assert box[k]["rootFill"] == "rgb(255, 226, 122)"  # marked

    # the cue for more to the right: the box's right edge is shaded, its left edge (an end reached) is not
    page_path = tmp_path / "long.html"
    page_path.write_text(page, encoding="utf-8")
    left, top, right, bottom = (round(v) for v in first["box"])
    band = range(max(top, 0) + 2, min(bottom, 900) - 2)

    def shaded(rows, x: int) -> float:
        return sum(1 for y in band if max(rows[y][3 * x:3 * x + 3]) < 235) / len(band)
    # under load Chromium can capture a page half painted (seen: the box's lower rows still blank, shade and words
    # alike), so a capture whose right edge is not shaded is taken again, up to three times
    for attempt in range(3):
        rows = png_rgb_pixels(screenshot(page_path, tmp_path / f"long{attempt}.png", tmp_path / "profile-shot",
                                         "1400,900"))
        if shaded(rows, right - 2) > 0.9:
            break
    assert shaded(rows, right - 2) > 0.9 and shaded(rows, left + 1) < 0.2
