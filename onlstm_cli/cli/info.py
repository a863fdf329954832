"""`onlstm info`: what a model file holds, and its model card."""
from __future__ import annotations

import typer

from onlstm_cli.cli.app import friendly_errors


@friendly_errors
def info(
    model: str = typer.Argument(..., help="A .onlstm file or a bundled model (BUNDLED_MODELS)."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
):
    """What a model holds: sizes, training data and recipe, validation perplexity, span parser, and the
    figures of its model card (NAME.md beside the file), if it has one."""
    from onlstm_cli.console import printable_json
    from onlstm_cli.info import info_text, model_info, report_json
    report = model_info(model)  # info_text shows the file's strings printable; JSON escapes them (printable_json)
    typer.echo(printable_json(report_json(report)) if as_json else info_text(report))
