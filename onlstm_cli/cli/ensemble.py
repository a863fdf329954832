"""`onlstm ensemble A B … -o OUT`: language models of the same vocabulary as one file that parses with all of them."""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from onlstm_cli.cli.app import friendly_errors
from onlstm_cli.cli.options import ENSEMBLE_DEFAULTS, CombineRule, SplitRule


@friendly_errors
def ensemble(
    models: List[Path] = typer.Argument(..., help="Two or more .onlstm language models that read the same words (other seeds, or --reverse models); the first gives the vocabulary, the perplexity and, by default, the parse layer and split rule."),
    out: Path = typer.Option(..., "--out", "-o", help="The ensemble file to write (whole, or not at all; a symbolic link is replaced, not written through)."),
    combine: CombineRule = typer.Option(CombineRule(ENSEMBLE_DEFAULTS["combine"]), "--combine", help="How each word's distances are combined: mean of the distances as they are, or of their standard scores (zscore) or ranks (rank) within the sentence."),
    weights: Optional[str] = typer.Option(None, "--weights", metavar="<W,W,…>", help="One weight per model, the first included (e.g. 1,0.5); default: equal."),
    parse_layer: Optional[int] = typer.Option(ENSEMBLE_DEFAULTS["parse_layer"], "--parse-layer", help="Layer (1-based) whose distances parse; default: the first model's."),
    split: Optional[SplitRule] = typer.Option(ENSEMBLE_DEFAULTS["split"], "--split", help="The split rule it parses with by default; default: the first model's."),
):
    """Combine language models into one file whose distances are their combination (parse --no-ensemble reads
    the first alone)."""
    from onlstm_cli.config import EnsembleConfig
    from onlstm_cli.ensemble import make_ensemble
    from onlstm_cli.errors import UserError
    from onlstm_cli.files import check_outputs

    check_outputs([("model", path) for path in models], [("--out", out)])

    try:
        weight_values = tuple(float(w) for w in weights.split(",")) if weights else ()
    except ValueError:
        raise UserError(f"--weights {weights!r}: expected numbers separated by commas, e.g. 1,0.5") from None
    config = EnsembleConfig(combine=combine.value, weights=weight_values, parse_layer=parse_layer,
                            split=split.value if split else None)
    written = make_ensemble(models, out, config)
    typer.echo(f"{out}: {out.stat().st_size / 1e6:.1f} MB, {1 + len(written.members)} models combined by "
               f"{written.combine}, parse layer {written.parse_layer}, split {written.split}", err=True)
