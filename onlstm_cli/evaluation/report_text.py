"""The evaluation report as a table on the terminal (`onlstm evaluate` without --json or --html)."""
from __future__ import annotations


def split_note(report: dict) -> str:
    """'paper split rule', or for a span parser beside its language model's layers both rules."""
    if "layer_split" in report:
        return f"span parser: its own trees (symmetric split of its heights); layers: {report['layer_split']} split rule"
    return f"{report['split']} split rule"


def baseline_note(report: dict) -> str | None:
    """The line that says the model's trees score below a trivial baseline's (metrics.below_baseline), or None."""
    below = report.get("below_baseline")
    if not below:
        return None
    what = "the trees of --pred score" if below["system"] == "pred" else f"{below['system']} scores"
    return (f"note: {what} {below['sentence_f1']:.2f} sentence F1, below {below['baseline']} "
            f"({below['baseline_sentence_f1']:.2f}), the best trivial baseline on these trees")


def perplexity_label(report: dict, path: str) -> str:
    """An ensemble's perplexity is its first model's (lm/perplexity.py reads one language model)."""
    models = (report.get("ensemble") or {}).get("models")
    return f"perplexity on {path}" + (f" (the first of its {models} models)" if models else "")


def print_report(report: dict) -> None:
    from rich.markup import escape
    from rich.table import Table

    from onlstm_cli.console import printable, stdout_console  # the console ends quietly when its reader goes away
    console = stdout_console()
    if not console.is_terminal:
        console = stdout_console(width=160)  # a table in a file or pipe should not wrap at 80 columns
    # Above the table, not as its title: rich wraps a title to the table's width, anywhere in a path
    # ("zh" / "-st.onlstm"); printed as is, a path breaks only where the terminal's edge falls, if at all.
    # paths and names are shown as they are (printable), never acted on
    console.print(printable(f"{report['gold']}: {report['sentences']} sentences"), markup=False, highlight=False,
                  soft_wrap=True)
    if "model" in report:
        console.print(printable(f"model: {report['model']}"), markup=False, highlight=False, soft_wrap=True)
    table = Table()
    labels = sorted({label for r in report["systems"].values() for label in r["label_recall"]},
                    key=["NP", "VP", "PP", "ADJP", "SBAR"].index)
    for column in ["system", "sentence F1", "corpus F1", "F1 ≤10 words"] + [f"{x} rec." for x in labels]:
        table.add_column(column, justify="left" if column == "system" else "right")
    for name, r in report["systems"].items():
        table.add_row(escape(printable(name)), f"{r['sentence_f1']:.2f}", f"{r['corpus_f1']:.2f}",
                      f"{r['sentence_f1_len_le_10']:.2f}" if r["sentences_len_le_10"] else "-",
                      *[f"{r['label_recall'][x]['recall']:.1f}" if x in r["label_recall"] else "-" for x in labels])
    ub = report["upper_bound"]
    table.add_row("best binary trees (upper bound)", f"{ub['sentence_f1']:.2f}", f"{ub['corpus_f1']:.2f}", "",
                  *["" for _ in labels], style="dim")
    console.print(table)
    note = baseline_note(report)
    if note:
        console.print(printable(note), markup=False, highlight=False, soft_wrap=True, style="bold")
    first = next(iter(report["systems"].items()))
    by_length = "  ".join(f"{k}: {v['sentence_f1']:.1f} ({v['sentences']})" for k, v in first[1]["f1_by_length"].items())
    console.print(f"{printable(first[0])} sentence F1 by length (sentences): {by_length}", markup=False)
    for path, ppl in report.get("perplexity", {}).items():
        console.print(printable(f"{perplexity_label(report, path)}: {ppl:.2f}"), markup=False)
    console.print("Protocol: punctuation and traces removed by POS tag; spans of ≥ 2 words except the whole "
                  f"sentence; F1 per sentence, averaged; {split_note(report)}"
                  + ("; the model's trees cut at punctuation marks first, then scored without them (--punctuation "
                     "ignore: the paper's protocol)" if report.get("punctuation") == "boundaries" else "")
                  + ("; the model read the gold words alone, their punctuation removed before parsing"
                     if report.get("punctuation") == "remove" else "") + ".",
                  style="dim")
