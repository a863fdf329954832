"""Pictures: the SVG of one sentence, the HTML page of many, the evaluation report page.

Trees come from trees.build_tree with hand-written distances; no model is needed. The browser test
opens the pages in headless Chromium (skipped when none is installed) and checks the screenshot.
"""
from __future__ import annotations

import html
import random
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
import zlib
from html.parser import HTMLParser
from pathlib import Path

import pytest

from onlstm_cli.pictures.draw import BAR_COLOR, FONT_FAMILY, sentence_svg, split_order
from onlstm_cli.pictures.page import MIN_SCALE, MIN_TEXT_PX, NumberedSentence, html_page, numbered
from onlstm_cli.pictures.picture_files import write_svgs
from onlstm_cli.pictures.report_page import choose_examples, report_html, tree_from_spans
from onlstm_cli.text.treebanks import read_gold
from onlstm_cli.evaluation.metrics import evaluate
from onlstm_cli.trees import baseline_trees, build_tree, left_branching, right_branching, tree_spans

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SVG = "{http://www.w3.org/2000/svg}"

ENGLISH = ("The cat sat on the mat .".split(), [1.0, 0.5, 3.0, 2.0, 1.5, 0.3, None])
CHINESE = ("我 真的 爱 北京 天安门".split(), [0.8, 2.5, 1.9, 1.2, 0.4])
SPECIAL = (["a<b", "&", '"quoted"', "it's", ">", "</text>"], [2.0, 0.1, 1.4, 0.7, 0.2, 0.9])


def tree_of(tokens, distances):
    """The tree the parser would build: tokens the model did not read get distance 0 here."""
    return build_tree([0.0 if d is None else d for d in distances], tokens)


def by_class(root: ET.Element, tag: str, name: str) -> list[ET.Element]:
    return [e for e in root.iter(SVG + tag) if e.get("class") == name]


@pytest.mark.parametrize("tokens, distances", [ENGLISH, CHINESE, SPECIAL], ids=["english", "chinese", "special"])
def test_svg_has_one_text_per_word_a_bar_per_read_word_and_split_numbers(tokens, distances):
    svg = sentence_svg(tokens, tree_of(tokens, distances), distances, title="line 7")
    assert "\n" not in svg  # one SVG per output line for `--format svg` on stdout
    root = ET.fromstring(svg)
    assert root.tag == SVG + "svg"
    assert float(root.get("width")) > 0 and float(root.get("height")) > 0
    assert root.get("viewBox") == f"0 0 {root.get('width')} {root.get('height')}"
    assert "Noto Sans CJK SC" in root.get("font-family")
    assert [e.text for e in by_class(root, "text", "word")] == tokens
    assert len(by_class(root, "rect", "bar")) == sum(d is not None for d in distances)
    numbers = sorted(int(e.text) for e in by_class(root, "text", "order"))
    assert numbers == list(range(1, len(tokens)))
    # nothing else drawn as text repeats a word: the title, and the bars' scale (0 to the largest) and legend
    others = [e.text for e in root.iter(SVG + "text") if e.get("class") not in ("word", "order")]
    largest = max(d for d in distances if d is not None)
    assert others == ["line 7", f"{largest:.3g}", "0", "bars: syntactic distance of each word"]


def test_bars_scale_to_the_largest_distance_and_skip_unread_words():
    tokens, distances = ENGLISH
    root = ET.fromstring(sentence_svg(tokens, tree_of(tokens, distances), distances))
    bars = by_class(root, "rect", "bar")
    heights = [float(b.get("height")) for b in bars]
    assert max(heights) == heights[2]  # "sat", distance 3.0
    assert heights[0] == pytest.approx(heights[2] / 3, abs=0.1)
    assert bars[2].find(SVG + "title").text == "sat: distance 3.000"
    # the unread "." is grey, with a tooltip, and has no bar
    unread = [g for g in root.iter(SVG + "g") if g.get("class") == "unread"]
    assert [g.find(SVG + "text").text for g in unread] == ["."]


def test_wide_characters_get_wider_columns():
    def second_word_x(first):
        root = ET.fromstring(sentence_svg([first, "cd"], [first, "cd"], [1.0, 2.0]))
        return float(by_class(root, "text", "word")[1].get("x"))

    assert second_word_x("天安门广场") > second_word_x("ab") + 40


def test_letters_of_wide_scripts_get_wider_columns():
    """Malayalam, Sinhala, Myanmar and Tamil letters are drawn wider than Latin ones (see text_width)."""
    def second_word_x(first):
        root = ET.fromstring(sentence_svg([first, "cd"], [first, "cd"], [1.0, 2.0]))
        return float(by_class(root, "text", "word")[1].get("x"))

    assert second_word_x("ഞാൻ") > second_word_x("abc") + 3 and second_word_x("ဖတ်တယ်") > second_word_x("abcd") + 5


def test_a_right_to_left_sentence_is_drawn_from_the_right():
    """An Arabic-script sentence starts at the right, as its reader reads it: the same tree, mirrored."""
    from svg_geometry import svg_crossings
    tokens = "مەن كىتاب ئوقۇدۇم ۋە خەت يازدىم .".split()
    distances = [0.5, 2.0, 1.0, 3.0, 1.5, 0.2, None]
    tree = tree_of(tokens, distances)
    svg = sentence_svg(tokens, tree, distances)
    root = ET.fromstring(svg)
    words = by_class(root, "text", "word") + [g.find(SVG + "text") for g in by_class(root, "g", "unread")]
    x_of = {w.text: float(w.get("x")) for w in words}
    xs = [x_of[token] for token in tokens]
    assert xs == sorted(xs, reverse=True)  # the first word at the right, the last at the left
    assert not svg_crossings(svg)
    left_to_right = ET.fromstring(sentence_svg("the cat sat on a mat .".split(), tree, distances))
    assert [float(w.get("x")) for w in by_class(left_to_right, "text", "word")] == \
        sorted(float(w.get("x")) for w in by_class(left_to_right, "text", "word"))
    # the mirror image: each bar at the mirrored place, the picture as wide
    bars = [float(b.get("x")) for b in by_class(root, "rect", "bar")]
    ltr_bars = [float(b.get("x")) for b in by_class(left_to_right, "rect", "bar")]
    assert bars == sorted(bars, reverse=True) and len(bars) == len(ltr_bars) == 6
    assert by_class(root, "text", "word")[0].text == "مەن"  # the words keep their order in the document
    mixed = ET.fromstring(sentence_svg(["Ali", "dedi", "مەن"], build_tree([1.0, 2.0, 0.5], ["Ali", "dedi", "مەن"]),
                                       None))
    assert [float(w.get("x")) for w in by_class(mixed, "text", "word")] == \
        sorted(float(w.get("x")) for w in by_class(mixed, "text", "word"))  # mostly Latin: left to right


def test_split_numbers_go_top_down():
    tokens = "a b c d e f g h".split()
    tree = build_tree([0.1, 2.0, 0.5, 1.0, 3.0, 0.2, 1.5, 0.3], tokens)
    order = split_order(tree)
    assert [number for number, _, _ in order] == list(range(1, len(tokens)))
    assert order[0][1:] == (0, len(tokens))  # split 1 is the root
    spans = {(start, end): number for number, start, end in order}
    for (start, end), number in spans.items():
        for (inner_start, inner_end), inner in spans.items():
            if (inner_start, inner_end) != (start, end) and start <= inner_start and inner_end <= end:
                assert inner > number, "a node is numbered after the node it was split from"
    # level order: both children of the root come before any grandchild
    assert {spans[(0, 4)], spans[(4, 8)]} == {2, 3}


def test_one_word_and_empty_sentences():
    root = ET.fromstring(sentence_svg(["Hello"], "Hello", [0.7]))
    assert [e.text for e in by_class(root, "text", "word")] == ["Hello"]
    assert len(by_class(root, "rect", "bar")) == 1
    assert by_class(root, "text", "order") == []
    empty = ET.fromstring(sentence_svg([], None, [], title="line 3"))
    assert by_class(empty, "text", "word") == []
    assert "empty" in by_class(empty, "text", "note")[0].text


def test_gold_trees_are_drawn_without_bars_and_may_be_n_ary():
    words = "The cat sat on the mat".split()
    gold = tree_from_spans(words, {(0, 2), (2, 6), (3, 6), (4, 6)})
    assert gold == [["The", "cat"], ["sat", ["on", ["the", "mat"]]]]
    flat = tree_from_spans(words, set())
    assert flat == words  # one n-ary root
    for tree in (gold, flat):
        root = ET.fromstring(sentence_svg(words, tree, None, split_numbers=False))
        assert [e.text for e in by_class(root, "text", "word")] == words
        assert by_class(root, "rect", "bar") == [] and by_class(root, "text", "order") == []


def test_tree_from_spans_gives_back_the_gold_spans():
    for sentence in read_gold(FIXTURES / "draw_gold.trees"):
        assert tree_spans(tree_from_spans(sentence.words, sentence.spans)) == sentence.spans


def test_bad_input_is_refused():
    with pytest.raises(ValueError):
        sentence_svg(["a", "b"], ["a", ["b", "c"]], [1.0, 2.0])
    with pytest.raises(ValueError):
        sentence_svg(["a", "b"], ["a", "b"], [1.0])


def test_characters_xml_cannot_hold_are_replaced():
    root = ET.fromstring(sentence_svg(["a\x01b", "c"], ["a\x01b", "c"], [1.0, 0.5]))
    assert [e.text for e in by_class(root, "text", "word")] == ["a\ufffdb", "c"]


def test_a_very_deep_tree_draws():
    words = [f"w{i}" for i in range(2000)]
    root = ET.fromstring(sentence_svg(words, right_branching(words), [1.0] * len(words)))
    assert len(by_class(root, "text", "order")) == len(words) - 1


# --- the HTML page ------------------------------------------------------------------------------

class PageReader(HTMLParser):
    """Counts <svg> start tags outside and inside <template>, and checks tags are balanced."""

    VOID = {"meta", "br", "circle", "line", "rect", "polyline", "link", "img", "input"}

    def __init__(self):
        super().__init__()
        self.open: list[str] = []
        self.inline_svgs = self.template_svgs = self.templates = self.scripts = 0

    def handle_starttag(self, tag, attrs):
        if tag == "svg":
            if "template" in self.open:
                self.template_svgs += 1
            else:
                self.inline_svgs += 1
        self.templates += tag == "template"
        self.scripts += tag == "script"
        if tag not in self.VOID:
            self.open.append(tag)

    def handle_startendtag(self, tag, attrs):
        pass

    def handle_endtag(self, tag):
        if tag in self.VOID:
            return
        assert self.open and self.open[-1] == tag, f"</{tag}> closes <{self.open[-1] if self.open else None}>"
        self.open.pop()


def read_page(page: str) -> PageReader:
    reader = PageReader()
    reader.feed(page)
    reader.close()
    assert reader.open == ["html"] or reader.open == []
    return reader


def assert_self_contained(page: str) -> None:
    lowered = page.lower()
    for external in ('src="http', "src='http", 'href="http', "href='http", "@import", "url(http", "url(//",
                     'src="//', 'href="//'):
        assert external not in lowered, external
    assert "<link" not in lowered and "<img" not in lowered


def items(n: int) -> list[NumberedSentence]:
    rng = random.Random(0)
    result = []
    for line in range(1, n + 1):
        tokens = [f"w{k}" for k in range(rng.randint(2, 9))]
        distances = [rng.random() for _ in tokens]
        result.append(NumberedSentence(line, tokens, build_tree(distances, tokens), distances))
    return result


def test_html_page_draws_every_line_with_its_brackets():
    sentences = [ENGLISH, CHINESE, SPECIAL]
    page_items = [(k + 1, tokens, tree_of(tokens, distances), distances)
                  for k, (tokens, distances) in enumerate(sentences)]
    page_items.append((4, [], None, []))  # an empty input line
    page = html_page(page_items, title="my <sentences>")
    reader = read_page(page)
    assert reader.inline_svgs == 3 and reader.templates == 0
    assert reader.scripts == 0  # nothing to draw lazily; the zoom bar is radio buttons and CSS
    assert 'id="zoom-fit"' in page and 'id="zoom-readable" checked' in page
    assert_self_contained(page)
    assert "<title>my &lt;sentences&gt;</title>" in page
    assert "(S (S (X The) (X cat))" in page  # the bracket line, as text under the picture
    assert "(X &lt;/text&gt;)" in page
    assert 'id="line-4"' in page and "(empty line)" in page


def test_long_pages_draw_lazily_past_max_eager():
    page = html_page(items(300), max_eager=50)
    reader = read_page(page)
    assert reader.inline_svgs == 50
    assert reader.template_svgs == reader.templates == 250
    assert reader.scripts == 1 and "IntersectionObserver" in page
    assert "left out" not in page
    assert_self_contained(page)


def test_pages_past_the_cap_say_what_was_left_out():
    page = html_page(items(30), max_eager=5, max_sentences=20)
    reader = read_page(page)
    assert reader.inline_svgs + reader.template_svgs == 20
    assert "10 left out" in page and "--out-dir" in page
    assert 'id="line-20"' in page and 'id="line-21"' not in page


def test_numbered_reads_parsed_sentences():
    class Parsed:  # the shape of parser.ParsedSentence
        def __init__(self, tokens, tree, distances):
            self.tokens, self.tree, self.distances = tokens, tree, distances

    tokens, distances = ENGLISH
    got = list(numbered([Parsed([], None, []), Parsed(tokens, tree_of(tokens, distances), distances)]))
    assert [(item.line, item.tokens) for item in got] == [(1, []), (2, tokens)]


def test_write_svgs_writes_one_file_per_sentence(tmp_path):
    written = write_svgs([(1, *ENGLISH[:1], tree_of(*ENGLISH), ENGLISH[1]), (2, [], None, []),
                          (3, *CHINESE[:1], tree_of(*CHINESE), CHINESE[1])], tmp_path / "svgs")
    assert [p.name for p in written] == ["line-000001.svg", "line-000003.svg"]
    root = ET.parse(written[1]).getroot()
    assert [e.text for e in by_class(root, "text", "word")] == CHINESE[0]


# --- the evaluation report -----------------------------------------------------------------------

def cli_like_report():
    """The dict `onlstm evaluate --all-layers --json` prints, with made-up distances for 3 layers."""
    gold = read_gold(FIXTURES / "draw_gold.trees")
    rng = random.Random(1)
    per_layer = [[[rng.random() for _ in s.words] for _ in range(3)] for s in gold]

    def trees(k):
        return [build_tree(d[k - 1], s.words) for d, s in zip(per_layer, gold)]

    systems = {"onlstm (layer 2)": evaluate(gold, trees(2)),
               "onlstm (layer 1)": evaluate(gold, trees(1)),
               "onlstm (layer 3)": evaluate(gold, trees(3))}
    words = [s.words for s in gold]
    for name, label in (("right", "right-branching"), ("left", "left-branching"), ("balanced", "balanced"),
                        ("random", "random")):
        systems[label] = evaluate(gold, baseline_trees(words, name, 0))
    report = {"gold": "draw_gold.trees", "sentences": len(gold), "split": "paper", "systems": systems,
              "model": "en-ptb.onlstm", "layer": 2, "valid_ppl": 123.4,
              "upper_bound": systems["onlstm (layer 2)"]["upper_bound"]}
    examples = choose_examples(gold, trees(2), [d[1] for d in per_layer], system="onlstm (layer 2)")
    return report, examples


def test_report_page_has_the_table_charts_and_examples():
    report, examples = cli_like_report()
    assert len(examples) == 3 and examples[0].f1 >= examples[1].f1 >= examples[2].f1
    page = report_html(report, examples)
    reader = read_page(page)
    assert_self_contained(page)
    assert reader.scripts == 0 and 'id="zoom-fit"' in page
    for name in report["systems"]:
        assert f"<td>{name}</td>" in page
    assert "upper bound" in page and f"{report['upper_bound']['sentence_f1']:.2f}" in page
    charts = re.findall(r'<svg class="chart"', page)
    assert len(charts) == 3  # F1 by length, per layer, label recall
    assert "F1 by sentence length" in page and "each layer" in page and "by label" in page
    # each example: the gold tree (no bars) above the predicted one (bars)
    assert reader.inline_svgs == 3 + 2 * len(examples)
    assert page.count('<p class="caption">gold</p>') == len(examples)


def test_report_pairs_scale_alike_and_say_what_the_bars_are():
    report, examples = cli_like_report()
    page = report_html(report, examples)
    pairs = re.findall(r'<div class="picture pair" style="--w:([0-9.]+)px">(.*?)</div>', page)
    assert len(pairs) == len(examples)
    for width, pair in pairs:
        widths = re.findall(r'<svg xmlns="[^"]*" width="([0-9.]+)"', pair)
        assert widths == [width, width]  # gold as wide as predicted, in one box: they scale alike
    assert page.count("ON-LSTM syntactic distance d_f") == len(examples)  # system "onlstm (layer 2)"
    assert "parse layer: 2" in page and "split rule: paper" in page and "validation perplexity: 123.40" in page


def test_a_span_parser_report_names_no_split_rule_for_its_trees():
    report, examples = cli_like_report()
    systems = report["systems"]
    report["systems"] = {"span parser (self-trained)": systems["onlstm (layer 2)"], **systems}
    report.update(split="symmetric", layer=None, layer_split="paper", valid_ppl=115.79193019733425)
    for example in examples:
        example.system = "span parser (self-trained)"
    page = report_html(report, examples)
    meta = html.unescape(re.search(r'<p class="meta">(.*?)</p>', page).group(1)).split("<br>")
    assert "split rule: symmetric" not in meta and any("span parser's own" in fact for fact in meta)
    assert "layers' split rule: paper" in meta and "validation perplexity: 115.79" in meta
    assert page.count("bars: split height") == len(examples)


@pytest.mark.parametrize("bars, says", [("onlstm", "d_f"), ("span", "split height"), (None, "syntactic distance")])
def test_the_bars_have_a_scale_and_a_legend(bars, says):
    tokens, distances = ENGLISH
    root = ET.fromstring(sentence_svg(tokens, tree_of(tokens, distances), distances, bars=bars))
    assert says in by_class(root, "text", "legend")[0].text
    scale = [g for g in root.iter(SVG + "g") if g.get("class") == "scale"][0]
    assert [t.text for t in scale.iter(SVG + "text")] == ["3", "0"]  # the largest distance, and 0
    assert min(float(b.get("height")) for b in by_class(root, "rect", "bar")) >= 3  # visible when shrunk
    gold = ET.fromstring(sentence_svg(tokens, tree_of(tokens, distances), None))
    assert by_class(gold, "text", "legend") == []  # no bars, nothing to explain


def test_the_scale_starts_at_zero_below_zero_distances_are_pale_stubs():
    """Issue 41 item 18: in the Chinese report the bars' axis started at -1 (words that begin inside a unit
    the model read get a distance under every other: distances_of_words)."""
    tokens = "2008 年 该 工程 并 未 完工".split()
    distances = [0.0, 2.0, 6.0, 2.0, 4.0, -1.0, 2.0]
    root = ET.fromstring(sentence_svg(tokens, tree_of(tokens, distances), distances, bars="span"))
    scale = [g for g in root.iter(SVG + "g") if g.get("class") == "scale"][0]
    assert [t.text for t in scale.iter(SVG + "text")] == ["6", "0"]
    below = [e for e in root.iter(SVG + "rect") if e.get("class") == "bar below"]
    assert len(below) == 1 and below[0].find(SVG + "title").text == "未: distance -1.000 (below 0)"
    assert float(below[0].get("height")) == 3  # a stub at the 0 line, not a bar reaching under it
    heights = {e.find(SVG + "title").text.split(":")[0]: float(e.get("height")) for e in by_class(root, "rect", "bar")}
    assert heights["工程"] == pytest.approx(heights["该"] / 3, abs=0.1)  # measured from 0, not from -1


def test_split_numbers_do_not_look_like_the_scale():
    """Issue 41 item 20: "10" on a 0-10 scale and split 10 looked alike. The scale is the bars' blue and
    upright; the split numbers are black, bold and circled; no text of a picture is under 12 px."""
    words = [f"w{k}" for k in range(12)]
    distances = [float(k % 11) for k in range(12)]
    root = ET.fromstring(sentence_svg(words, right_branching(words), distances))
    scale = [g for g in root.iter(SVG + "g") if g.get("class") == "scale"][0]
    nodes = [g for g in root.iter(SVG + "g") if g.get("class") == "nodes"][0]
    assert scale.get("fill") == BAR_COLOR and [t.text for t in scale.iter(SVG + "text")] == ["10", "0"]
    assert nodes.get("font-weight") == "bold"
    orders = by_class(root, "text", "order")
    assert "10" in [t.text for t in orders] and {t.get("fill") for t in orders} != {BAR_COLOR}
    circles = {(c.get("cx"), c.get("cy")): float(c.get("r")) for c in nodes.iter(SVG + "circle")}
    for text in orders:  # each number inside its circle
        radius = circles[(text.get("x"), str(float(text.get("y")) - 4).removesuffix(".0"))]
        assert radius >= len(text.text) * 0.62 * 12 / 2 + 2
    sizes = [float(e.get("font-size")) for e in root.iter() if e.get("font-size")]
    assert min(sizes) >= 12


def test_report_page_without_layers_or_labels():
    gold = read_gold(FIXTURES / "draw_gold.trees")
    result = evaluate(gold, baseline_trees([s.words for s in gold], "right"))
    page = report_html(result)  # a bare metrics.evaluate() result is one system
    assert "<td>system</td>" in page and "each layer" not in page
    assert len(re.findall(r'<svg class="chart"', page)) == 2


def test_drawing_imports_nothing_heavy():
    code = ("import sys, onlstm_cli.pictures.draw, onlstm_cli.pictures.page; "
            "print(sorted(m for m in ('torch', 'rich', 'nltk', 'matplotlib', 'numpy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# --- in a browser --------------------------------------------------------------------------------

def png_rgb_pixels(data: bytes) -> list[bytes]:
    """The rows of an 8-bit, non-interlaced RGB or RGBA PNG as RGB bytes (standard library only)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    position, compressed = 8, []
    while position < len(data):
        length = int.from_bytes(data[position:position + 4], "big")
        kind = data[position + 4:position + 8]
        body = data[position + 8:position + 8 + length]
        position += 12 + length
        if kind == b"IHDR":
            width, height = int.from_bytes(body[:4], "big"), int.from_bytes(body[4:8], "big")
            depth, color, interlace = body[8], body[9], body[12]
        elif kind == b"IDAT":
            compressed.append(body)
        elif kind == b"IEND":
            break
    assert depth == 8 and interlace == 0 and color in (2, 6), (depth, color, interlace)
    channels = 3 if color == 2 else 4
    stride = width * channels
    raw = zlib.decompress(b"".join(compressed))
    rows, previous = [], bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, row = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        if kind == 1:  # Sub
            for i in range(channels, stride):
                row[i] = (row[i] + row[i - channels]) & 255
        elif kind == 2:  # Up
            row = bytearray((a + b) & 255 for a, b in zip(row, previous))
        elif kind == 3:  # Average
            for i in range(stride):
                left = row[i - channels] if i >= channels else 0
                row[i] = (row[i] + ((left + previous[i]) >> 1)) & 255
        elif kind == 4:  # Paeth
            for i in range(stride):
                a = row[i - channels] if i >= channels else 0
                b, c = previous[i], previous[i - channels] if i >= channels else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                row[i] = (row[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(row) if channels == 3 else bytes(v for k, v in enumerate(row) if k % 4 != 3))
        previous = row
    return rows


def find_chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def chromium_command(profile: Path, size: str = "1200,900") -> list[str]:
    browser = find_chromium()
    if browser is None:
        pytest.skip("no chromium installed: apt-get install chromium")
    return [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--hide-scrollbars", "--virtual-time-budget=10000", f"--user-data-dir={profile}", f"--window-size={size}",
            # every tile rastered before the capture: under load a screenshot could show a page half painted
            "--run-all-compositor-stages-before-draw"]


def screenshot(page_path: Path, png: Path, profile: Path, size: str = "1200,900") -> bytes:
    command = chromium_command(profile, size) + [f"--screenshot={png}", page_path.resolve().as_uri()]
    subprocess.run(command, capture_output=True, timeout=120, check=False)
    assert png.is_file() and png.stat().st_size > 0, "chromium wrote no screenshot"
    return png.read_bytes()


# Appended to a page: once its own scripts have run, what the browser laid out, as JSON in the DOM: each
# picture box, and in it each SVG with its smallest drawn text (px) and its words' centres (from the box).
PROBE = """<script>
var found = [];
document.querySelectorAll('.picture').forEach(function (box) {
  var boxRect = box.getBoundingClientRect(), svgs = [];
  box.querySelectorAll('svg').forEach(function (svg) {
    var scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width, smallest = 1e9;
    svg.querySelectorAll('text').forEach(function (text) {
      smallest = Math.min(smallest, parseFloat(getComputedStyle(text).fontSize) * scale);
    });
    var words = Array.prototype.map.call(svg.querySelectorAll('text.word'), function (word) {
      var r = word.getBoundingClientRect(); return r.left + r.width / 2 - boxRect.left;
    });
    svgs.push({drawn: svg.getBoundingClientRect().width, natural: svg.viewBox.baseVal.width,
               smallestText: smallest, words: words});
  });
  found.push({svgs: svgs, drawn: svgs[0].drawn, natural: svgs[0].natural, boxWidth: box.clientWidth,
              scrollLeft: box.scrollLeft, scrollWidth: box.scrollWidth,
              left: boxRect.left, top: boxRect.top, bottom: boxRect.bottom});
});
var out = document.createElement('pre'); out.id = 'probe'; out.textContent = JSON.stringify(found);
document.body.appendChild(out);
</script>"""


def laid_out(page: str, tmp_path: Path, size: str, zoom: str = "readable") -> list[dict]:
    """Each picture box of the page as a browser of the given window size lays it out (see PROBE), with
    the zoom bar's choice `zoom` (readable, fit, 100, 150, 200) checked."""
    import json

    page = page.replace('id="zoom-readable" checked', 'id="zoom-readable"').replace(f'id="zoom-{zoom}"',
                                                                                     f'id="zoom-{zoom}" checked')
    page_path = tmp_path / "probed.html"
    page_path.write_text(page.replace("</body>", PROBE + "</body>"), encoding="utf-8")
    command = chromium_command(tmp_path / f"profile-{size}", size) + ["--dump-dom", page_path.resolve().as_uri()]
    dom = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False).stdout
    match = re.search(r'<pre id="probe">(.*?)</pre>', dom, re.S)
    assert match, "chromium ran no script"
    return json.loads(html.unescape(match.group(1)))


def count_colors(rows: list[bytes]) -> tuple[int, int, int]:
    """(pixels not near white, near-black pixels, pixels of the distance bars' blue)."""
    ink = dark = blue = 0
    for row in rows:
        for k in range(0, len(row), 3):
            r, g, b = row[k], row[k + 1], row[k + 2]
            if r < 235 or g < 235 or b < 235:
                ink += 1
                dark += r < 90 and g < 90 and b < 90
                blue += abs(r - 0x4A) < 12 and abs(g - 0x7B) < 12 and abs(b - 0xD0) < 12
    return ink, dark, blue


@pytest.mark.parametrize("which", ["parse", "lazy", "report"])
def test_pages_render_in_a_browser(tmp_path, which):
    page_items = [(k + 1, tokens, tree_of(tokens, distances), distances)
                  for k, (tokens, distances) in enumerate([CHINESE, ENGLISH, SPECIAL] * 20)]
    if which == "parse":
        page = html_page(page_items[:3])
    elif which == "lazy":  # every picture in a <template>: only the page's script can draw them
        page = html_page(page_items, max_eager=0)
    else:
        page = report_html(*cli_like_report())
    page_path = tmp_path / f"{which}.html"
    page_path.write_text(page, encoding="utf-8")
    # Headless chromium may take its screenshot before an IntersectionObserver callback has run on a loaded
    # machine (the lazy page then shows no bars in about one CI run of three): up to three tries; a page
    # whose script never draws fails all three.
    for attempt in range(3):
        rows = png_rgb_pixels(screenshot(page_path, tmp_path / f"{which}-{attempt}.png", tmp_path / f"profile-{attempt}"))
        assert len(rows) == 900 and len(rows[0]) == 1200 * 3
        ink, dark, blue = count_colors(rows)
        if which == "report" or blue > 500:
            break
    assert ink > 0.01 * 1200 * 900, "the page looks blank"
    assert dark > 500, "no text or lines drawn"
    if which != "report":
        assert blue > 500, "no distance bars drawn"


def test_a_long_sentence_opens_at_its_start_readable_and_fits_when_asked(tmp_path):
    """Issue 41 item 17: a 55-word sentence opened scrolled to its middle, its words about 8 px, its split
    numbers illegible. Now: the box opens at the first word, no text is drawn under 11 px, and "fit to
    width" shows the whole picture in the box."""
    words = [f"word{k}" for k in range(55)]  # left-branching: the root is near the right end
    short = "a short one".split()
    page = html_page([(1, words, left_branching(words), [1.0] * 55),
                      (2, short, right_branching(short), [1.0, 2.0, 3.0])])
    wide, narrow = laid_out(page, tmp_path, "1400,900")
    assert wide["natural"] > 2 * 1400 and wide["scrollWidth"] > wide["boxWidth"]  # too wide: it scrolls
    assert wide["scrollLeft"] == 0 and 0 <= wide["svgs"][0]["words"][0] <= 100  # at its first word
    assert wide["svgs"][0]["smallestText"] >= MIN_TEXT_PX - 0.01
    assert MIN_SCALE * wide["natural"] - 1 <= wide["drawn"] < wide["natural"]  # shrunk only so far
    assert narrow["drawn"] == pytest.approx(narrow["natural"], abs=0.5)  # short ones are not blown up
    fitted = laid_out(page, tmp_path, "1400,900", zoom="fit")[0]
    assert fitted["drawn"] <= fitted["boxWidth"] and fitted["scrollWidth"] <= fitted["boxWidth"]
    doubled = laid_out(page, tmp_path, "1400,900", zoom="200")[1]
    assert doubled["drawn"] == pytest.approx(2 * doubled["natural"], abs=0.5)


def test_a_long_right_to_left_sentence_opens_at_its_first_word_at_the_right(tmp_path):
    words = [f"كلمة{k}" for k in range(55)]
    page = html_page([(1, words, left_branching(words), [1.0] * 55)])
    assert page.count('class="picture" dir="rtl"') == 1
    box = laid_out(page, tmp_path, "1400,900")[0]
    assert box["natural"] > 2 * 1400 and box["scrollWidth"] > box["boxWidth"]  # too wide: it scrolls
    first, last = box["svgs"][0]["words"][0], box["svgs"][0]["words"][-1]
    assert box["boxWidth"] - 100 <= first <= box["boxWidth"] and last < 0  # at its first word, at the right
    assert box["svgs"][0]["smallestText"] >= MIN_TEXT_PX - 0.01


def test_report_examples_are_drawn_word_over_word_in_one_box(tmp_path):
    """Issue 41 item 18: gold and predicted sat side by side at different scales, a 24-word example shrunk
    to 7 px text with two scrollbars. Now the gold tree stands above the predicted one in one box, each
    gold word over the same predicted word, no text under 11 px."""
    report, examples = cli_like_report()
    words = [f"w{k}" for k in range(24)]
    examples[0].words, examples[0].gold = words, tree_from_spans(words, [(0, 12), (12, 24), (3, 9)])
    examples[0].predicted, examples[0].distances = right_branching(words), [float(k % 7) for k in range(24)]
    page = report_html(report, examples)
    for size in ("1400,900", "700,900"):
        boxes = laid_out(page, tmp_path, size)
        assert len(boxes) == len(examples)
        for box in boxes:
            gold, predicted = box["svgs"]
            assert len(gold["words"]) == len(predicted["words"]) > 0
            assert gold["words"] == pytest.approx(predicted["words"], abs=0.5)
            assert min(gold["smallestText"], predicted["smallestText"]) >= MIN_TEXT_PX - 0.01
            assert box["scrollLeft"] == 0


def cjk_font_installed() -> bool:
    fc_list = shutil.which("fc-list")
    return fc_list is not None and bool(
        subprocess.run([fc_list, ":lang=zh", "family"], capture_output=True, text=True).stdout.strip())


def test_chinese_is_not_drawn_as_empty_boxes(tmp_path):
    """Two different characters in the pictures' font stack must not come out the same (tofu boxes all look
    alike), nor like a character no font has."""
    if not cjk_font_installed():
        pytest.skip("no CJK font installed (fc-list :lang=zh): apt-get install fonts-noto-cjk")
    cells = ["爱", "国", "\U0010fffd"]  # the last: a private-use character no font draws
    divs = "".join(f'<div style="left:{100 * k}px">{c}</div>' for k, c in enumerate(cells))
    page = (f'<!DOCTYPE html><html><head><meta charset="utf-8"><style>body {{ margin: 0; background: #fff; }} '
            f'div {{ position: absolute; top: 0; width: 100px; height: 100px; line-height: 100px; font-size: 64px; '
            f'text-align: center; color: #000; font-family: {FONT_FAMILY}; }}</style></head><body>{divs}</body></html>')
    page_path = tmp_path / "tofu.html"
    page_path.write_text(page, encoding="utf-8")
    rows = png_rgb_pixels(screenshot(page_path, tmp_path / "tofu.png", tmp_path / "profile", "400,120"))
    crops = [b"".join(row[300 * k:300 * (k + 1)] for row in rows[:100]) for k in range(3)]
    assert all(sum(v < 128 for v in crop) > 100 for crop in crops[:2]), "no ink drawn"
    same, like_missing = crops[0] == crops[1], crops[2] in crops[:2]  # (asserted apart: no pixel dumps)
    assert not same, "two different Chinese characters look the same: empty boxes"
    assert not like_missing, "Chinese is drawn like a missing glyph"


def fonts_for(*langs: str) -> bool:
    fc_list = shutil.which("fc-list")
    return fc_list is not None and all(
        subprocess.run([fc_list, f":lang={lang}", "family"], capture_output=True, text=True).stdout.strip()
        for lang in langs)


WORD_BOXES = """<script>
var boxes = Array.prototype.map.call(document.querySelectorAll('svg'), function (svg) {
  return Array.prototype.map.call(svg.querySelectorAll('text.word'), function (word) {
    var r = word.getBoundingClientRect(); return [word.textContent, r.left, r.right];
  });
});
var out = document.createElement('pre'); out.id = 'boxes'; out.textContent = JSON.stringify(boxes);
document.body.appendChild(out);
</script>"""


def test_words_of_many_scripts_are_drawn_apart_and_right_to_left_ones_from_the_right(tmp_path):
    """What a browser draws, measured: no word runs into the next (a letter of these scripts is wider than
    a Latin one), and an Arabic sentence's first word is its rightmost."""
    import json
    if not fonts_for("ta", "ml", "si", "my", "ar", "hi"):
        pytest.skip("no fonts for Tamil, Malayalam, Sinhala, Myanmar, Arabic and Hindi: apt-get install fonts-noto-core")
    lines = ["நான் புத்தகம் படிக்கிறேன் இன்று", "ഞാൻ പുസ്തകം വായിക്കുന്നു ഞാൻ", "මම පොතක් කියවමි ලංකාව",
             "ကျွန်တော် စာအုပ် ဖတ်တယ် မြန်မာ", "मैं हिन्दी में किताब पढ़ रहा हूँ", "مەن كىتاب ئوقۇدۇم ۋە خەت يازدىم"]
    svgs = "".join(sentence_svg(line.split(), right_branching(line.split()), None) for line in lines)
    page_path = tmp_path / "scripts.html"
    page_path.write_text(f'<!DOCTYPE html><html><head><meta charset="utf-8"></head><body>{svgs}{WORD_BOXES}'
                         '</body></html>', encoding="utf-8")
    command = chromium_command(tmp_path / "profile") + ["--dump-dom", page_path.resolve().as_uri()]
    dom = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False).stdout
    match = re.search(r'<pre id="boxes">(.*?)</pre>', dom, re.S)
    assert match, "chromium ran no script"
    for line, words in zip(lines, json.loads(html.unescape(match.group(1)))):
        assert [w[0] for w in words] == line.split()
        ordered = sorted(words, key=lambda w: w[1])
        gaps = [b[1] - a[2] for a, b in zip(ordered, ordered[1:])]
        assert min(gaps) >= 2, f"{line}: words touch or overlap ({gaps})"
        assert (ordered == words) != line.startswith("مەن"), "the Arabic line is drawn from the right"
