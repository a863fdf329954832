"""Writing pictures and report pages (`parse -f svg --out-dir`, `evaluate --html`) without harm, and the
one warning pictures need (no CJK font to draw Chinese with).

A page is written to a hidden temporary file beside its destination and renamed over it, as the model
files are (modelfile.atomic_save, which this cannot share: that one writes through torch.save, and drawing
must not import torch). The rename replaces a symbolic link at the destination instead of writing through
it, so a link planted there (`D/line-000001.svg -> ~/precious`) never redirects the write; a full disk
or a killed process leaves the old file, or none, never a half-written or empty one.
Only the standard library is imported here: `onlstm_cli.draw` uses it.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable, Iterable, Iterator, Optional, Union

from .errors import OnlstmError

PathLike = Union[str, Path]


class PictureFileError(OnlstmError):
    """A picture or page could not be written where asked."""


def _why(e: OSError) -> str:
    return (e.strerror or str(e)).lower()


def write_text_atomic(path: PathLike, text: str) -> None:
    """Write `text` (UTF-8) to `path` through a temporary file beside it and a rename.

    The folder must exist. The file gets the usual permissions (0666 less the umask), as `open` would give.
    """
    path = Path(path)
    tmp = None
    try:
        if path.is_dir() and not path.is_symlink():
            raise IsADirectoryError(21, "is a folder", str(path))
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "wb") as f:
            f.write(text.encode("utf-8"))
            f.flush()
            os.fsync(f.fileno())  # a full disk shows here at the latest, before the old file is replaced
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600 files; a picture is for sharing
        os.replace(tmp, path)
    except OSError as e:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
        raise PictureFileError(f"cannot write {path}: {_why(e)}") from None
    except BaseException:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
        raise


def check_destination(path: PathLike, option: str = "--html") -> None:
    """Before any work: `path` must be a file name in an existing folder that we can write to."""
    path = Path(path)
    if path.is_dir() and not path.is_symlink():
        raise PictureFileError(f"cannot write {option} {path}: it is a folder; give a file name, such as "
                               f"{path / 'report.html'}")
    _probe(path.parent, f"{option} {path}")


def _probe(folder: Path, what: str) -> None:
    """Make and remove a temporary file in `folder`: the one sure test that files can be written there."""
    try:
        fd, probe = tempfile.mkstemp(prefix=".onlstm-probe.", suffix=".tmp", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise PictureFileError(f"cannot write {what}: {_why(e)}") from None


def prepare_out_dir(out_dir: PathLike) -> Path:
    """The folder for one picture per sentence, made if missing; refused in one line if it is a file."""
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise PictureFileError(f"--out-dir {out_dir} is a file, not a folder: give a folder to write the pictures in")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise PictureFileError(f"cannot make --out-dir {out_dir}: {_why(e)}") from None
    _probe(out_dir, f"in --out-dir {out_dir}")
    return out_dir


# --- CJK fonts ------------------------------------------------------------------------------------

# Han ideographs, CJK punctuation and full-width forms: the characters a Latin font has no glyph for.
_CJK = re.compile("[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef\U00020000-\U0003134f]")
_warned = False


def has_cjk(text: str) -> bool:
    return _CJK.search(text) is not None


def cjk_font_missing() -> bool:
    """True when fontconfig says no installed font covers Chinese; False when it has one or cannot be asked."""
    fc_list = shutil.which("fc-list")
    if fc_list is None:
        return False
    try:
        found = subprocess.run([fc_list, ":lang=zh", "family"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return False
    return found.returncode == 0 and not found.stdout.strip()


def warn_once_about_cjk(words: Iterable[str], stream=None) -> bool:
    """Print one line to stderr (once a process) when the words have CJK characters and no font for them
    is installed: browsers then draw them as empty boxes. Returns whether it warned now."""
    global _warned
    if _warned or not any(has_cjk(word) for word in words):
        return False
    _warned = True  # asked once: fc-list takes a while, and one line is enough
    if not cjk_font_missing():
        return False
    print("warning: no CJK font is installed (fc-list :lang=zh finds none), so Chinese words will show as "
          "empty boxes; install one, e.g. apt-get install fonts-noto-cjk", file=stream or sys.stderr)
    return True


def watched(batches: Iterable[list]) -> Iterator[list]:
    """The batches of parser.ParsedSentence as they come, warning once about CJK fonts on the way."""
    for batch in batches:
        if not _warned:
            warn_once_about_cjk(word for sentence in batch for word in sentence.tokens)
        yield batch


def bars_kind(parser) -> Callable[[str], Optional[str]]:
    """For `onlstm parse`: what a sentence's distances are, by its model file (ParsedSentence.model), for
    draw.sentence_svg's `bars`: "span" (a self-trained file's span parser: split heights, unless --layer
    asked for a layer) or "onlstm" (a layer's d_f). The models are already in the api.Parser's cache."""
    def kind(model: str) -> Optional[str]:
        if not model:
            return None
        loaded = parser._cache.get(Path(model))
        return "span" if loaded.span_parser is not None and parser.layer is None else "onlstm"
    return kind
