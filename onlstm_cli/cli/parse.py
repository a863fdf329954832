"""`onlstm parse`: sentences (one a line) into unlabeled binary trees, written as they come."""
from __future__ import annotations

import contextlib
import sys
from enum import Enum
from pathlib import Path
from typing import List, Optional

import typer

from onlstm_cli.cli import parse_progress
from onlstm_cli.cli.options import ENSEMBLE_HELP, PUNCTUATION_HELP, PunctuationRule, SplitRule
from onlstm_cli.cli.app import friendly_errors, with_denormals_flushed
from onlstm_cli.console import printable
from onlstm_cli.errors import OnlstmError, UserError
from onlstm_cli.files import STDIN, check_outputs
from onlstm_cli.text.input_lines import read_input_batches
from onlstm_cli.writers import WRITERS, Output, formats_help


# --format's choices: the names of writers.py's table
OutputFormat = Enum("OutputFormat", {name: name for name in WRITERS}, type=str)


@friendly_errors
@with_denormals_flushed
def parse(
    files: Optional[List[Path]] = typer.Argument(None, help="Text files, one sentence a line; - or none: stdin."),
    model: Optional[str] = typer.Option(None, "--model", "-m", help="A .onlstm file or a bundled model (BUNDLED_MODELS); default: zh for lines with CJK characters, else en."),
    output_format: Optional[OutputFormat] = typer.Option(None, "--format", "-f", help=f"{formats_help()}; default: tree on a terminal, else bracket."),
    out_dir: Optional[Path] = typer.Option(None, "--out-dir", help="With --format svg: write line-000001.svg … into this folder instead of stdout."),
    distances: bool = typer.Option(False, "--distances", "-d", help="Show each word's distance."),
    layer: Optional[int] = typer.Option(None, "--layer", help="Layer (1-based) whose distances parse; default: the model's (a self-trained file: its span parser, whose trees --split does not change)."),
    split: Optional[SplitRule] = typer.Option(None, "--split", help="paper: the ON-LSTM rule (the largest-distance word k opens the right part and is split off first); symmetric: distance k is the boundary before word k, the left and right parts treated alike. Default: the model's."),
    punctuation: Optional[PunctuationRule] = typer.Option(None, "--punctuation", help=PUNCTUATION_HELP),
    pretokenized: bool = typer.Option(False, "--pretokenized", help="Split lines on spaces only (normalization still applies)."),
    batch_size: int = typer.Option(64, "--batch-size", help="Sentences per forward pass."),
    device: str = typer.Option("cpu", "--device", help="cpu, cuda or auto."),
    ensemble: bool = typer.Option(True, "--ensemble/--no-ensemble", help=ENSEMBLE_HELP),
    jobs: Optional[int] = typer.Option(None, "--jobs", "-j", help="Worker processes, each with its own copy of the model; the output is the same, in input order. Default: 1 on a machine of up to 2 cores (its threads already share the work), else one per 2 cores."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write the output to this file instead of stdout: whole, when parsing is done (a failed or interrupted run leaves the file as it was); a symbolic link is refused, not written through."),
):
    """Parse sentences (one a line) into unlabeled binary trees.

    Output line N answers input line N; from a pipe, each line is answered as soon as it has come. Control
    characters in the input (NUL, ESC, DEL, …) are read as spaces.

    Pictures: --format svg (one SVG a line, or with --out-dir DIR one file a sentence), --format html (one
    page for all lines, to open in a browser); `onlstm evaluate --html report.html` draws the model's trees
    beside the gold ones.
    """
    from onlstm_cli.fast import PARSE_KERNEL_CACHE, size_kernel_cache
    from onlstm_cli.induction.line_parser import BLOCK, LineParser
    from onlstm_cli.induction.parallel import check_jobs, default_jobs, parse_in_workers

    size_kernel_cache(PARSE_KERNEL_CACHE)
    if batch_size < 1:
        raise UserError("--batch-size must be at least 1")
    jobs = default_jobs() if jobs is None else check_jobs(jobs)
    if layer is not None and layer < 1:
        raise UserError("--layer must be at least 1")
    check_streams(files, output, out_dir, model)
    fmt = output_format.value if output_format else ("tree" if output is None and sys.stdout.isatty() else "bracket")
    if out_dir is not None and fmt != "svg":
        raise UserError("--out-dir goes with --format svg")
    # a bad --model fails before any input is read
    parser = LineParser.load(model, device=device, batch_size=batch_size, layer=layer,
                             split=split.value if split else None, pretokenized=pretokenized, ensemble=ensemble,
                             punctuation=punctuation.value if punctuation else None,
                             warn=False)  # warned below, in this process, whichever processes parse
    # each batch is answered (written and flushed) before the next is read: from a pipe, a batch is what
    # has arrived, so output keeps up with input line by line (see read_input_batches)
    lines = read_input_batches(files or [], BLOCK)
    batches = parser.parse_batches(lines) if jobs == 1 else parse_in_workers(parser, lines, jobs)
    if parse_progress.wanted(output is not None):
        batches = parse_progress.with_progress(batches)
    batches = parser.unreadable_warnings(batches, lambda message: typer.echo(f"warning: {printable(message)}",
                                                                             err=True))
    with parse_output(output) as out:
        write, _ = WRITERS[fmt]
        refused = write(batches, Output(out, parser, lambda line: typer.echo(line, err=True), distances, out_dir))
    if refused:
        raise UserError(f"{refused} input line{'s' if refused > 1 else ''} not parsed (see above); every other "
                        "line was answered")


def check_streams(files: Optional[List[Path]], output: Optional[Path], out_dir: Optional[Path],
                  model: Optional[str]) -> None:
    """Refuse, before the model is loaded, an input that cannot be read or an output that cannot be written, or
    that is one of the inputs (the model file included, a bundled one too)."""
    from onlstm_cli.induction.models import model_inputs
    check_outputs([*(("input file", path) for path in files or []), *model_inputs(model)], [("--output", output)])
    reads_stdin = files is None or STDIN in map(str, files)  # "-" is stdin, as for cat or grep
    if reads_stdin and sys.stdin is None:  # started with stdin closed (`onlstm parse <&-`)
        raise UserError("no input: stdin is closed; pipe sentences into 'onlstm parse' or give file names")
    if output is None and sys.stdout is None:
        raise UserError("stdout is closed; give --output FILE")
    if output is not None and out_dir is not None:
        raise UserError("--output and --out-dir: give one (--out-dir writes a file per sentence)")
    if files is None and sys.stdin.isatty():
        raise UserError("no input: pipe sentences into 'onlstm parse' or give file names")


@contextlib.contextmanager
def parse_output(path: Path | None):
    """stdout, or for --output a file written whole when the block ends (modelfile.atomic_file): a failed or
    interrupted parse leaves the old file, not half of a new one."""
    if path is None:
        yield sys.stdout
        return
    from onlstm_cli.modelfile import atomic_file
    with atomic_file(path, "w", refuse_symlink=True) as f:
        try:
            yield f
        except OnlstmError as error:  # the user is told where their answers are not
            raise type(error)(f"{error}; nothing written to {path} (--output is written whole only when every "
                              "line is answered)") from None

