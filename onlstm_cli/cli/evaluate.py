"""`onlstm evaluate`: unlabeled F1 against gold trees, beside right/left-branching, balanced and random trees."""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from onlstm_cli.cli.app import friendly_errors, with_denormals_flushed
from onlstm_cli.cli.options import ENSEMBLE_HELP, PUNCTUATION_HELP, ScoringPunctuation, SplitRule


@friendly_errors
@with_denormals_flushed
def evaluate(
    gold: Path = typer.Option(..., "--gold", "-g", help="Gold trees: bracketed trees (one a line or .mrg files, or a folder of them) or CoNLL-U."),
    model: Optional[str] = typer.Option(None, "--model", "-m", help="A .onlstm file or a bundled model (BUNDLED_MODELS); default: by the gold text's script."),
    pred: Optional[Path] = typer.Option(None, "--pred", help="Score these trees (one bracketed tree a line) instead of a model's."),
    layer: Optional[int] = typer.Option(None, "--layer", help="Layer (1-based) whose distances parse; default: the model's (a self-trained file: its span parser, whose trees --split does not change)."),
    all_layers: bool = typer.Option(False, "--all-layers", help="Also score every layer of the model."),
    split: Optional[SplitRule] = typer.Option(None, "--split", help="paper: the ON-LSTM rule (the largest-distance word k opens the right part and is split off first); symmetric: distance k is the boundary before word k, the left and right parts treated alike. Default: the model's (paper with --pred)."),
    punctuation: Optional[ScoringPunctuation] = typer.Option(None, "--punctuation", help=PUNCTUATION_HELP + " With boundaries the report adds right- and left-branching trees cut the same way. remove: the model reads the gold words alone, the punctuation dropped before parsing (the literature's protocol, as `parse --pretokenized` over the kept words; ignore feeds a model the marks it was trained on)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the random-tree baseline."),
    device: str = typer.Option("cpu", "--device", help="cpu, cuda or auto."),
    text: Optional[List[Path]] = typer.Option(None, "--text", help="Also report the model's perplexity on this text (one sentence a line, read as in training); may be repeated."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
    ensemble: bool = typer.Option(True, "--ensemble/--no-ensemble", help=ENSEMBLE_HELP),
    html: Optional[Path] = typer.Option(None, "--html", help="Also write the report as one self-contained page: the table, charts (F1 by length, per layer, label recall) and example trees beside the gold ones."),
    examples: int = typer.Option(3, "--examples", help="With --html: how many example sentences to draw beside their gold trees (the best, the worst and evenly between by sentence F1)."),
):
    """Unlabeled F1 against gold trees, beside right/left-branching, balanced and random trees."""
    import json

    from onlstm_cli.text.treebanks import read_gold, read_predicted
    from onlstm_cli.evaluation.metrics import below_baseline, evaluate as score
    from onlstm_cli.console import printable, printable_json
    from onlstm_cli.files import check_outputs
    from onlstm_cli.induction.models import model_inputs
    from onlstm_cli.pictures.picture_files import check_destination
    from onlstm_cli.evaluation.model_scores import baseline_scores

    model_file = model_inputs(model)  # bundled names too: no output onto a model being read
    check_outputs([("--gold", gold), ("--pred", pred), *(("--text", path) for path in text or []), *model_file],
                  [("--html", html)])
    if html is not None:
        check_destination(html)  # before the evaluation, which may take minutes
    sentences = read_gold(gold)
    report = {"gold": str(gold), "sentences": len(sentences), "split": split.value if split else "paper",
              "systems": {}}
    systems = report["systems"]
    shown = None  # (trees, distances) of the first system, for the examples of --html
    if pred is not None:
        shown = (read_predicted(pred, sentences), None)
        systems["pred"] = score(sentences, shown[0])
        report["pred"] = str(pred)
    else:
        from onlstm_cli.evaluation.model_scores import score_model
        fields, model_systems, shown = score_model(sentences, model, layer=layer, split=split.value if split else None,
                                                   all_layers=all_layers, device=device, ensemble=ensemble, text=text,
                                                   punctuation=punctuation.value if punctuation else None)
        report.update(fields)
        systems.update(model_systems)
    systems.update(baseline_scores(sentences, seed, cut_at_marks=report.get("punctuation") == "boundaries"))
    report["upper_bound"] = next(iter(systems.values()))["upper_bound"]
    report["below_baseline"] = below_baseline(systems)
    if html is not None:
        from onlstm_cli.pictures.report_page import write_report_page
        write_report_page(html, report, sentences, shown, examples)
        typer.echo(printable(f"wrote the report to {html}"), err=True)
    if as_json:
        typer.echo(printable_json(json.dumps(report, ensure_ascii=False, indent=2)))
    else:
        from onlstm_cli.evaluation.report_text import print_report
        print_report(report)
