"""What every training run writes beside its --out (the model, its checkpoint, the corpus as ids, the lock held while
it runs), and the check before any training that --out can take them."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from onlstm_cli.errors import ModelFileError, TrainingError
from onlstm_cli.files import lock_path
from onlstm_cli.modelfile import stale_temp_files, write_failure

def checkpoint_path(out: str | Path) -> Path:
    return Path(str(out) + ".ckpt")

def token_file_path(out: str | Path) -> Path:
    """The training corpus as ids (corpus.py), kept beside the model for a resumed run; safe to delete."""
    return Path(str(out) + ".tokens")

def run_outputs(out: str | Path, name: str = "--out") -> list[tuple[str, Path]]:
    """Every file a training run writes (or a rerun replaces) for `out`, each as (what the user calls it, path),
    for files.check_outputs: the model, its checkpoint, the corpus as ids and the lock held while it runs."""
    out = Path(out)
    return [(name, out), (f"{name}'s checkpoint", checkpoint_path(out)), (f"{name}'s token file", token_file_path(out)),
            (f"{name}'s lock file", lock_path(out))]

def check_destination(out: Path) -> None:
    """Before any training: `out` must be a file name in a directory we can write to. Hidden temporary files
    that a save killed mid-write left beside it are removed."""
    if out.is_dir():
        raise TrainingError(f"--out {out} is a directory; give a file name, such as {out / 'model.onlstm'}")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise TrainingError(f"cannot write --out {out}: {write_failure(e)}") from None
    for path in (out, checkpoint_path(out), token_file_path(out)):
        for stale in stale_temp_files(path):
            stale.unlink(missing_ok=True)


class Saves:
    """A run's saves of its model and checkpoint, each atomic. One that fails (a full disk, a file system gone
    read-only) is said in one line and tried again at the next; training goes on, and a run whose last save failed
    ends with an error (`unsaved`)."""

    def __init__(self, say):
        self.say = say
        self.unsaved: str | None = None  # why the latest save failed, until a save succeeds

    def __call__(self, write) -> bool:
        """`write()`, True where it succeeded."""
        try:
            write()
        except ModelFileError as e:  # a full disk, a file system gone read-only, weights float16 cannot hold
            self.unsaved = str(e)
            self.say(f"warning: {e}; training goes on, and the next save tries again")
            return False
        self.unsaved = None
        return True
