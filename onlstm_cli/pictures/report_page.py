"""The evaluation report as one self-contained HTML page (`onlstm evaluate --html`): the table of every
system, charts drawn as inline SVG (F1 by sentence length, per-layer F1, label recall) and example
sentences with the gold tree beside the predicted one, drawn by `draw.sentence_svg`."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Optional, Sequence

from onlstm_cli.evaluation.metrics import BASELINE_LABELS
from onlstm_cli.evaluation.report_text import baseline_note, perplexity_label
from onlstm_cli.pictures.draw import (MARGIN, _num, _svg_open, _text, drawn_right_to_left, sentence_svg,
                                      text_width)
from onlstm_cli.pictures.page import ZOOM_BAR, _page, _svg_size
from onlstm_cli.trees import Tree, tree_spans

PALETTE = ("#1f5fbf", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
           "#bcbd22", "#17becf")


# --- the evaluation report ----------------------------------------------------------------------

@dataclass
class ReportExample:
    """A sentence to show in the report: the gold tree beside the system's tree."""
    source: str                                  # "file:line" of the gold sentence
    words: list[str]
    gold: Tree
    predicted: Tree
    distances: Optional[list[Optional[float]]] = None  # of the predicted tree's words; None with --pred
    f1: Optional[float] = None                   # sentence F1 in percent
    system: str = ""


def tree_from_spans(words: Sequence[str], spans: Iterable[tuple[int, int]]) -> Tree:
    """The (n-ary) tree whose constituents are the given word spans, end exclusive, plus the root.

    Spans of fewer than 2 words and the whole sentence are ignored (gold.GoldSentence.spans leaves
    them out anyway); a span crossing an earlier one is dropped.
    """
    n = len(words)
    if n == 0:
        raise ValueError("cannot build a tree over zero words")
    if n == 1:
        return words[0]
    wanted = sorted({s for s in spans if s[1] - s[0] >= 2 and s != (0, n) and 0 <= s[0] and s[1] <= n},
                    key=lambda s: (s[0], -s[1]))
    root: list = []
    open_nodes: list[tuple[int, list]] = [(n, root)]  # (end, children) of each constituent still open

    def close() -> None:
        _end, children = open_nodes.pop()
        open_nodes[-1][1].append(children[0] if len(children) == 1 else children)

    next_span = 0
    for position, word in enumerate(words):
        while open_nodes[-1][0] <= position:
            close()
        while next_span < len(wanted) and wanted[next_span][0] == position:
            end = wanted[next_span][1]
            next_span += 1
            if end <= open_nodes[-1][0]:  # nested in the innermost open one; otherwise it crosses it
                open_nodes.append((end, []))
        open_nodes[-1][1].append(word)
    while len(open_nodes) > 1:
        close()
    return root


def choose_examples(gold: Sequence, trees: Sequence[Tree],
                    distances: Optional[Sequence[Optional[Sequence[Optional[float]]]]] = None,
                    system: str = "", count: int = 3, min_words: int = 5, max_words: int = 20,
                    ) -> list[ReportExample]:
    """A few sentences for the report: the best, the middle and the worst by sentence F1 (for count=3),
    among sentences of min_words..max_words words (all sentences if none are that long).

    gold: gold.GoldSentence list; trees: the system's trees over their words; distances: per
    sentence, the distances the trees were built from (None with --pred).
    """
    from onlstm_cli.evaluation.metrics import sentence_f1

    if len(trees) != len(gold):
        raise ValueError(f"{len(trees)} trees for {len(gold)} gold sentences")
    candidates = [k for k, s in enumerate(gold) if min_words <= len(s.words) <= max_words] \
        or list(range(len(gold)))
    scored = sorted(candidates, key=lambda k: (-sentence_f1(tree_spans(trees[k]), gold[k].spans), k))
    if count <= 0 or not scored:
        return []
    if count == 1 or len(scored) <= count:
        picked = scored[:count]
    else:  # evenly spaced ranks, first and last included
        picked = [scored[round(i * (len(scored) - 1) / (count - 1))] for i in range(count)]
    examples = []
    for k in picked:
        sentence = gold[k]
        examples.append(ReportExample(
            source=sentence.source, words=list(sentence.words),
            gold=tree_from_spans(sentence.words, sentence.spans), predicted=trees[k],
            distances=None if distances is None or distances[k] is None else list(distances[k]),
            f1=round(100 * sentence_f1(tree_spans(trees[k]), sentence.spans), 2), system=system))
    return examples


def _as_report(report: dict) -> dict:
    """The CLI's evaluate report ({"systems": {name: metrics.evaluate(...)}, ...}, the --json form),
    or one metrics.evaluate() result, which is shown as a single system called "system"."""
    if "systems" in report:
        return report
    return {"sentences": report.get("sentences"), "systems": {"system": report},
            "upper_bound": report.get("upper_bound")}


def _color(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def _dash(name: str) -> str:
    return ' stroke-dasharray="5 3"' if name in BASELINE_LABELS else ""


def _legend(names: Sequence[str], x: float, y: float, boxes: bool = False) -> str:
    """Swatch and name of each series: a (dashed for baselines) line, or a box for bar charts."""
    parts = []
    for k, name in enumerate(names):
        row = y + 18 * k
        if boxes:
            swatch = (f'<rect x="{_num(x + 6)}" y="{_num(row - 10)}" width="12" height="12" '
                      f'fill="{_color(k)}"/>')
        else:
            swatch = (f'<line x1="{_num(x)}" y1="{_num(row - 4)}" x2="{_num(x + 22)}" y2="{_num(row - 4)}" '
                      f'stroke="{_color(k)}" stroke-width="3"{_dash(name)}/>')
        parts.append(f'{swatch}<text x="{_num(x + 28)}" y="{_num(row)}" font-size="12">{_text(name)}</text>')
    return "".join(parts)


def _chart_frame(width: float, height: float, title: str, left: float, top: float, plot_w: float,
                 plot_h: float, y_max: float, y_label: str) -> list[str]:
    """An SVG with a title, a y axis from 0 to y_max with grid lines, and room for a plot."""
    parts = [_svg_open(width, height, title).replace("<svg ", '<svg class="chart" ', 1),
             f'<text x="{_num(left)}" y="18" font-size="14" font-weight="bold">{_text(title)}</text>',
             f'<text x="12" y="{_num(top + plot_h / 2)}" font-size="11" fill="#555" text-anchor="middle" '
             f'transform="rotate(-90 12 {_num(top + plot_h / 2)})">{_text(y_label)}</text>']
    for tick in range(0, int(y_max) + 1, 20):
        y = top + plot_h - tick / y_max * plot_h
        parts.append(f'<line x1="{_num(left)}" y1="{_num(y)}" x2="{_num(left + plot_w)}" y2="{_num(y)}" '
                     f'stroke="{"#999" if tick == 0 else "#eee"}"/>'
                     f'<text x="{_num(left - 6)}" y="{_num(y + 4)}" font-size="11" text-anchor="end" '
                     f'fill="#555">{tick}</text>')
    return parts


def line_chart(title: str, categories: Sequence[str], series: Sequence[tuple[str, Sequence[Optional[float]]]],
               y_label: str = "sentence F1 (%)") -> str:
    """An SVG line chart, one line per (name, values) series over the categories, y from 0 to 100.

    Baseline systems (the report's baseline rows, BASELINE_LABELS) are dashed. A None value leaves a gap.
    """
    left, top, plot_w, plot_h = 48.0, 34.0, max(260.0, 90.0 * len(categories)), 220.0
    legend_x = left + plot_w + 24
    width = legend_x + 30 + max([text_width(n, 12) for n, _ in series] or [0]) + MARGIN
    height = max(top + plot_h + 44, 34 + 18 * len(series) + MARGIN)
    parts = _chart_frame(width, height, title, left, top, plot_w, plot_h, 100, y_label)
    step = plot_w / max(1, len(categories))

    def x_of(k: int) -> float:
        return left + step * (k + 0.5)

    for k, category in enumerate(categories):
        parts.append(f'<text x="{_num(x_of(k))}" y="{_num(top + plot_h + 18)}" font-size="11" '
                     f'text-anchor="middle" fill="#555">{_text(category)}</text>')
    for s, (name, values) in enumerate(series):
        runs: list[list[str]] = [[]]
        dots = []
        for k, value in enumerate(values):
            if value is None:
                runs.append([])
                continue
            x, y = x_of(k), top + plot_h - min(100.0, max(0.0, value)) / 100 * plot_h
            runs[-1].append(f"{_num(x)},{_num(y)}")
            dots.append(f'<circle cx="{_num(x)}" cy="{_num(y)}" r="3"><title>{_text(name)}, '
                        f"{_text(categories[k])}: {value:.2f}</title></circle>")
        lines = "".join(f'<polyline points="{" ".join(run)}"/>' for run in runs if run)
        parts.append(f'<g class="series" stroke="{_color(s)}" stroke-width="2" fill="none"{_dash(name)}>{lines}</g>'
                     f'<g fill="{_color(s)}">{"".join(dots)}</g>')
    parts.append(_legend([name for name, _ in series], legend_x, top + 10))
    return "".join(parts) + "</svg>"


def bar_chart(title: str, categories: Sequence[str], series: Sequence[tuple[str, Sequence[Optional[float]]]],
              y_label: str) -> str:
    """An SVG bar chart: for each category a group of bars, one per (name, values) series, y 0 to 100."""
    n_series = max(1, len(series))
    bar_w = 14.0 if n_series > 3 else 22.0
    group_w = bar_w * n_series + 18
    left, top, plot_w, plot_h = 48.0, 34.0, max(200.0, group_w * len(categories)), 220.0
    legend_x = left + plot_w + 24
    width = legend_x + 30 + max([text_width(n, 12) for n, _ in series] or [0]) + MARGIN
    height = max(top + plot_h + 44, 34 + 18 * len(series) + MARGIN)
    parts = _chart_frame(width, height, title, left, top, plot_w, plot_h, 100, y_label)
    group_step = plot_w / max(1, len(categories))
    for k, category in enumerate(categories):
        center = left + group_step * (k + 0.5)
        parts.append(f'<text x="{_num(center)}" y="{_num(top + plot_h + 18)}" font-size="11" '
                     f'text-anchor="middle" fill="#555">{_text(category)}</text>')
        for s, (name, values) in enumerate(series):
            value = values[k]
            if value is None:
                continue
            h = min(100.0, max(0.0, value)) / 100 * plot_h
            x = center - bar_w * n_series / 2 + s * bar_w
            parts.append(f'<rect x="{_num(x)}" y="{_num(top + plot_h - h)}" width="{_num(bar_w - 2)}" '
                         f'height="{_num(h)}" fill="{_color(s)}"><title>{_text(name)}, {_text(category)}: '
                         f"{value:.2f}</title></rect>")
    if len(series) > 1:
        parts.append(_legend([name for name, _ in series], legend_x, top + 10, boxes=True))
    return "".join(parts) + "</svg>"


def _layer_number(name: str) -> Optional[int]:
    match = re.search(r"\blayer (\d+)\b", name)
    return int(match.group(1)) if match else None


def report_charts(report: dict) -> list[str]:
    """The report's charts as SVG strings: F1 by sentence length (every system), F1 per layer (when more
    than one layer was scored), and label recall (when the gold has labels)."""
    report = _as_report(report)
    systems: dict = report["systems"]
    charts = []
    buckets: list[str] = []
    for result in systems.values():
        buckets.extend(b for b in result.get("f1_by_length", {}) if b not in buckets)
    if buckets:
        first = next(iter(systems.values()))["f1_by_length"]
        categories = [f"{b} ({first[b]['sentences']})" if b in first else b for b in buckets]
        series = [(name, [r.get("f1_by_length", {}).get(b, {}).get("sentence_f1") for b in buckets])
                  for name, r in systems.items()]
        charts.append(line_chart("Sentence F1 by sentence length (words, sentences)", categories, series))

    layers = sorted((_layer_number(name), name) for name in systems if _layer_number(name) is not None)
    if len(layers) > 1:
        charts.append(bar_chart(
            "F1 of each layer's distances", [f"layer {k}" for k, _ in layers],
            [("sentence F1", [systems[name]["sentence_f1"] for _, name in layers]),
             ("corpus F1", [systems[name]["corpus_f1"] for _, name in layers])], "F1 (%)"))

    labels = [label for label in ("NP", "VP", "PP", "ADJP", "SBAR")
              if any(label in r.get("label_recall", {}) for r in systems.values())]
    labels += sorted({label for r in systems.values() for label in r.get("label_recall", {})} - set(labels))
    if labels:
        series = [(name, [r.get("label_recall", {}).get(label, {}).get("recall") for label in labels])
                  for name, r in systems.items()]
        charts.append(bar_chart("Recall of gold constituents by label", labels, series, "recall (%)"))
    return charts


def _score_table(report: dict) -> str:
    systems: dict = report["systems"]
    labels = [label for label in ("NP", "VP", "PP", "ADJP", "SBAR")
              if any(label in r.get("label_recall", {}) for r in systems.values())]
    head = "".join(f"<th>{_text(c)}</th>" for c in
                   ["system", "sentence F1", "corpus F1", "F1 ≤10 words"] + [f"{x} recall" for x in labels])
    rows = []
    for name, r in systems.items():
        short = f"{r['sentence_f1_len_le_10']:.2f}" if r.get("sentences_len_le_10") else "–"
        recalls = "".join(f"<td>{r['label_recall'][x]['recall']:.1f}</td>" if x in r.get("label_recall", {})
                          else "<td>–</td>" for x in labels)
        rows.append(f"<tr><td>{_text(name)}</td><td>{r['sentence_f1']:.2f}</td><td>{r['corpus_f1']:.2f}</td>"
                    f"<td>{short}</td>{recalls}</tr>")
    bound = report.get("upper_bound")
    if bound:
        rows.append(f'<tr class="bound"><td>best binary trees (upper bound)</td>'
                    f"<td>{bound['sentence_f1']:.2f}</td><td>{bound['corpus_f1']:.2f}</td><td></td>"
                    + "<td></td>" * len(labels) + "</tr>")
    return f'<table class="scores"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


SPAN_PARSER = "span parser"  # how the CLI's system name for a self-trained file's span parser begins
LAYER_ROWS = ("onlstm", "ensemble of")  # how its names of a language model's (or an ensemble's) layers begin


def _by_span_parser(report: dict) -> bool:
    return next(iter(report["systems"]), "").startswith(SPAN_PARSER)


def _figure(value: object) -> str:
    """Facts as people read them: 115.79, not 115.79193019733425."""
    return f"{value:.2f}" if isinstance(value, float) else str(value)


def _facts(report: dict) -> list[tuple[str, object]]:
    """What was evaluated, how; for a span parser the trees are its own, so no split rule is named for them."""
    if _by_span_parser(report):
        how = [("trees", "the self-trained span parser's own (CKY) trees, not a split of the ON-LSTM's distances"),
               ("layers' split rule", report.get("layer_split"))]
    else:
        how = [("parse layer", report.get("layer")), ("split rule", report.get("split"))]
    facts = [("gold", report.get("gold")), ("sentences", report.get("sentences")),
             ("model", report.get("model")), ("predicted trees", report.get("pred")), *how,
             ("validation perplexity", report.get("valid_ppl"))]
    ensemble = report.get("ensemble")
    if ensemble:  # no one model's perplexity is the file's
        facts.append((f"validation perplexity of each of its {ensemble['models']} models",
                      ", ".join("–" if ppl is None else _figure(float(ppl)) for ppl in ensemble["valid_ppl"])))
    facts += [(perplexity_label(report, path), ppl) for path, ppl in report.get("perplexity", {}).items()]
    return [(name, value) for name, value in facts if value is not None]


def _bars_of(system: str) -> Optional[str]:
    """What an example's distances are (draw.sentence_svg's `bars`), from the CLI's name of its system."""
    if system.startswith(SPAN_PARSER):
        return "span"
    return "onlstm" if system.startswith(LAYER_ROWS) else None


def _example(example: ReportExample) -> str:
    """The gold tree above the predicted one, in one box that scrolls both (PAGE_CSS's .pair)."""
    score = f" — sentence F1 {example.f1:.1f}" if example.f1 is not None else ""
    predicted = sentence_svg(example.words, example.predicted, example.distances, bars=_bars_of(example.system))
    width = _svg_size(predicted, "width")
    # as wide as the predicted one (which has the bars' scale and legend): the two scale alike, and as their
    # word columns are the same, each gold word stands over its predicted self
    gold = sentence_svg(example.words, example.gold, None, split_numbers=False, min_width=float(width))
    direction = ' dir="rtl"' if drawn_right_to_left(example.words) else ""  # opens where it starts
    return (f"<h3>{_text(example.source)}{score}</h3>"
            f'<div class="picture pair"{direction} style="--w:{width}px"><p class="caption">gold</p>{gold}'
            f'<p class="caption">{_text(example.system or "predicted")}</p>{predicted}</div>')


def _baseline_note(report: dict) -> list[str]:
    """The note that the model scores below a trivial baseline (report_text.baseline_note), boxed, or nothing."""
    note = baseline_note(report)
    return [f'<p class="note below-baseline" style="background:#fff4d6;border:1px solid #e6c36a;padding:.5em .8em">'
            f"{_text(note)}</p>"] if note else []


def report_html(report: dict, examples: Sequence[ReportExample] = (), title: Optional[str] = None) -> str:
    """The evaluation report as one self-contained HTML page, without scripts.

    report: what `onlstm evaluate --json` prints (gold, sentences, split, systems: {name: the dict of
    metrics.evaluate}, upper_bound, and model, layer, valid_ppl, pred, perplexity when present); a single
    metrics.evaluate() result works too. The page has the table of every system with the upper bound,
    the charts of report_charts, and each example's gold tree above the predicted one.
    """
    report = _as_report(report)
    title = title or f"onlstm evaluate: {report.get('gold', 'report')}"
    body = [f"<h1>{_text(title)}</h1>",
            '<p class="meta">' + "<br>".join(f"{_text(k)}: {_text(_figure(v))}" for k, v in _facts(report)) + "</p>",
            _score_table(report), *_baseline_note(report),
            '<p class="legend">F1 is unlabeled bracketing F1 in percent, as in the ON-LSTM and PRPN papers: '
            "punctuation and traces removed by POS tag, spans of at least 2 words except the whole sentence; "
            "sentence F1 is averaged over sentences, corpus F1 pools the spans. The upper bound is the best "
            "any binary tree can score against the (n-ary) gold trees."
            + (" The model's trees were cut at punctuation marks first (a constituent starts at an opening "
               "bracket or quote and right after any other mark, and a pair of marks encloses one), then "
               "scored without them; the rows \u201ccut at punctuation\u201d are the baselines cut the same way."
               if report.get("punctuation") == "boundaries" else "")
            + (" The model read the gold words alone, their punctuation removed before parsing."
               if report.get("punctuation") == "remove" else "") + "</p>",
            "<h2>Charts</h2>", '<div class="charts">' + "".join(report_charts(report)) + "</div>"]
    if examples:
        body.append("<h2>Examples</h2>")
        body.append('<p class="legend">The gold tree above the predicted one, word over word (circled numbers: '
                    "split order; bars: the distances it was built from, as the line under the words says).</p>")
        body.append(ZOOM_BAR)
    body.extend(_example(example) for example in examples)
    return _page(title, body)


def write_report_page(path, report: dict, sentences: Sequence, shown: tuple, count: int) -> None:
    """`evaluate --html`: the page of `report`, with `count` examples of the first system's trees (`shown`:
    its trees and the distances they were built from, None with --pred) beside the gold `sentences`."""
    from onlstm_cli.pictures.picture_files import warn_once_about_cjk, write_text_atomic
    warn_once_about_cjk(word for sentence in sentences for word in sentence.words)
    chosen = choose_examples(sentences, shown[0], shown[1], system=next(iter(report["systems"])), count=count)
    write_text_atomic(path, report_html(report, chosen), refuse_symlink=True)
