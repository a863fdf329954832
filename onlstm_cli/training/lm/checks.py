"""What a language model's run checks before it trains: that --out has room for its files, and that a checkpoint
it resumes from fits this command (the same global batch, model, data and optimizer). Each problem is one
line for the user (TrainingError)."""
from __future__ import annotations

import math
import shutil
from pathlib import Path

from onlstm_cli.errors import ModelFileError, TrainingError
from onlstm_cli.modelfile import read_archive
from onlstm_cli.training.run.identity import first_change


def check_global_batch(ckpt: dict, path: str | Path, global_batch: int) -> None:
    """A checkpoint's position is a row of the token columns, and the columns depend on the global batch
    alone (2 processes × batch 20 cut the stream as 1 × 40 does), so only another global batch is refused."""
    written = ckpt.get("meta", {}).get("train", {})
    world, batch = written.get("world_size", 1), written.get("batch_size")
    before = written.get("global_batch_size", world * batch if batch else None)
    if before is not None and before != global_batch:
        same = f"--nproc-per-node {world} --batch-size {batch}" if world > 1 else f"one process, --batch-size {batch}"
        raise TrainingError(f"{path} was written by a run of {world} process{'es' if world > 1 else ''} × batch "
                            f"{batch} (global batch {before}); resume it with the same global batch, processes × "
                            f"--batch-size = {before} (e.g. {same}), or start a new run")


# the CLI's name for each option a resumed run must repeat as it was (they change the model or the data stream)
RESUMED_OPTIONS = {"emb_size": "--emb-size", "hidden_size": "--hidden-size", "n_layers": "--layers",
                   "chunk_size": "--chunk-size", "dropout": "--dropout", "dropout_h": "--dropout-h",
                   "dropout_i": "--dropout-i", "dropout_e": "--dropout-e", "weight_drop": "--weight-drop",
                   "master_input": "--master-input", "reverse": "--reverse", "pretokenized": "--pretokenized",
                   "keep_punct": "--keep-punct", "max_vocab": "--max-vocab", "min_freq": "--min-freq"}


def check_resumed_options(ckpt: dict, path: str | Path, given: dict) -> None:
    """Refuse, in one line naming the option, to resume with an option that differs from the checkpoint's run
    (options not given, None, are not compared)."""
    data = ckpt.get("data", {})
    written = {**ckpt.get("config", {}), **{k: data.get(k) for k in ("pretokenized", "keep_punct", "max_vocab",
                                                                         "min_freq")}}
    change = first_change(written, given, lambda key: False if key == "reverse" else None)
    if change is not None:
        key, before, value = change
        option = RESUMED_OPTIONS[key]
        shown = (lambda v: "on" if v is True else "off" if v is False else v)
        raise TrainingError(f"{path} was trained with {option} {shown(before)}, this command has {shown(value)}: "
                            f"resume with the run's options as they were ({option} {shown(before)})")


def check_resumed_optimizer(ckpt: dict, path: str | Path, optimizer: str | None) -> None:
    """Adam's state is not SGD's: refuse to resume with the other one. SGD may become NT-ASGD (its state is
    SGD's until it averages), but a run that averages goes on averaging."""
    before = ckpt.get("meta", {}).get("train", {}).get("optimizer")
    if optimizer is None or before is None:
        return
    if ckpt.get("averaging") and optimizer != "ntasgd":
        raise TrainingError(f"{path} is averaging its weights (NT-ASGD): resume with --optimizer ntasgd")
    if (before == "adam") != (optimizer == "adam"):
        raise TrainingError(f"{path} was trained with --optimizer {before}, this command has {optimizer}: resume "
                            f"with --optimizer {before}")




def check_free_space(out: Path, model) -> None:
    """The model file (float16) and the checkpoint (float32 weights and an optimizer state up to twice their
    size, written beside the old one before it is replaced) must fit beside `out`."""
    params = sum(p.numel() for p in model.parameters())
    needed = params * (2 + 2 * 4 * 3)
    free = shutil.disk_usage(out.parent).free
    if free < needed:
        raise TrainingError(f"not enough free space for --out {out}: about {needed / 1e6:.0f} MB are needed for the "
                            f"model and its checkpoint, {free / 1e6:.0f} MB are free")


def reconcile_best(state, out: Path, reporter) -> None:
    """A run killed between writing the model file and the checkpoint leaves the model newer than the
    checkpoint: the resumed run must not replace it with a worse one."""
    try:
        meta = read_archive(out).get("meta", {})
    except ModelFileError:
        return
    ppl = meta.get("valid_ppl")
    if isinstance(ppl, (int, float)) and math.isfinite(ppl) and (state.best is None or ppl < state.best):
        reporter.message(f"{out} (valid ppl {ppl:.2f}) is newer than the checkpoint: it stays unless beaten")
        state.best = float(ppl)
