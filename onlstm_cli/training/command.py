"""What every mode of `onlstm train` does around its run (a language model, the recipe, a span parser on
teachers' trees): the files it reads checked against those it writes, --out held while it runs, and a line said
before the run's first."""
from __future__ import annotations

import contextlib
import sys
from pathlib import Path

from onlstm_cli.errors import UserError
from onlstm_cli.files import check_outputs, check_readable_file, output_lock, same_file


def check_run_files(corpus: Path, out: Path, valid: Path | None, resume: Path | None, loss_log: Path | None,
                    teachers: list[str]) -> None:
    """The files `train` reads can be read, and none of them is a file it writes (files.check_outputs), before
    anything is read or written. `resume` is None for the recipe, which may name its own --out."""
    check_readable_file(corpus, "corpus")
    for path, what in ((valid, "validation file"), (resume, "checkpoint")):
        if path is not None:
            check_readable_file(path, what)
    if loss_log is not None and loss_log.is_symlink():
        raise UserError(f"--loss-log {loss_log} is a symbolic link; not writing through it (give the file it "
                        "points to)")
    from onlstm_cli.induction.models import model_inputs
    from onlstm_cli.training.run.files import checkpoint_path, run_outputs
    teacher_files = [(f"--teacher {name}", path) for name in teachers for _, path in model_inputs(name)]
    outputs = [(name, path) for name, path in run_outputs(out)  # a resumed run rewrites the checkpoint it reads
               if resume is None or path != checkpoint_path(out) or not same_file(path, resume)]
    check_outputs([("the corpus", corpus), ("--valid", valid), ("--resume", resume), *teacher_files],
                  [*outputs, ("--loss-log", loss_log)])  # the recipe checks its own files (run_recipe)


def holding(out: Path, make_folder: bool):
    """The run holds --out until it ends (files.output_lock): a second run on the same --out is refused, not left
    to replace it. Under torchrun the first process holds it. A language model's run makes --out's folder, as
    training does (run/files.py's check_destination); the recipe refuses a folder that is not there."""
    from onlstm_cli.training.run.distributed import launched_rank
    if launched_rank() != 0:
        return contextlib.nullcontext()
    if make_folder:
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise UserError(f"cannot make the folder of --out {out}: {(e.strerror or type(e).__name__).lower()}")
    return output_lock(out)


def run_reporter(first: "FirstLine"):
    """A language model's reporter (a live display on a terminal, else lines), `first`'s line said before its own
    first; under torchrun nothing on the other processes (the first speaks for the run)."""
    from onlstm_cli.training.run.distributed import launched_rank
    from onlstm_cli.training.lm.report import LineReporter, NullReporter, RichReporter
    if launched_rank() != 0:
        return NullReporter()
    return SaysFirst(RichReporter() if sys.stderr.isatty() else LineReporter(), first)


def self_train_summary(result) -> str:
    """How a span parser's run (student/train.py's result) ended, in a line."""
    how = ("interrupted" if result.interrupted else "stopped: validation no longer improving"
           if result.stopped_early else "time budget reached" if result.stopped_by_time else "done")
    best = f"best validation loss {result.best_valid_loss:.4f}; model: {result.out}" if result.out.exists() \
        else "no epoch validated yet, so no model"
    return f"{how}: {result.epochs_done} epochs in {result.seconds / 60:.1f} min; {best}; checkpoint: {result.checkpoint}"


def validation_note(valid: Path | None) -> str | None:
    """What a run of one model (a language model, a PCFG) without validation text keeps, said at its start: the
    end line says it too, but a user who expected the recipe's held-out lines should not learn it only then."""
    if valid is not None:
        return None
    return ("no --valid: nothing is validated on, so --out gets the model as training left it, not the best by "
            "validation (give --valid FILE; the recipe, --seeds K, holds out every 20th line itself)")


class FirstLine:
    """Lines said once, before the first thing a run says: after the checks that refuse a run in one line (None
    among them: nothing to say)."""

    def __init__(self, lines: list[str | None], say):
        self.lines, self.say = [line for line in lines if line], say

    def __call__(self, text: str) -> None:
        self.flush()
        self.say(text)

    def flush(self) -> None:
        lines, self.lines = self.lines, []
        for line in lines:
            self.say(line)


class SaysFirst:
    """A training reporter whose first line is preceded by `first`'s."""

    def __init__(self, reporter, first: FirstLine):
        self.reporter, self.first = reporter, first

    def __getattr__(self, name):
        return getattr(self.reporter, name)

    def __enter__(self):
        self.reporter.__enter__()
        return self

    def __exit__(self, *exc):
        return self.reporter.__exit__(*exc)

    def message(self, text: str) -> None:
        self.first.flush()
        self.reporter.message(text)

    def start_epoch(self, epoch: int, n_tokens: int) -> None:
        self.first.flush()
        self.reporter.start_epoch(epoch, n_tokens)
