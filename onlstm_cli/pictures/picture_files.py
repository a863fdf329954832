"""Writing pictures and report pages (`parse -f svg|html`, `evaluate --html`) without harm, and the one
warning pictures need (no CJK font to draw Chinese with).

Files go through modelfile.atomic_file, the project's one atomic writer: a temporary file beside the
destination, renamed over it. The rename replaces a symbolic link at the destination instead of writing
through it, so a link planted among the pictures (`D/line-000001.svg -> ~/precious`) never redirects a
write; a full disk or a killed process leaves the old file, or none, never a half-written or empty one.
Only the standard library and draw.py are imported at import time; modelfile
(torch) is imported when a file is written.
"""
from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable, Iterable, Iterator, Optional, TextIO, Union

from onlstm_cli.errors import PictureFileError
from onlstm_cli.pictures.draw import sentence_svg
from onlstm_cli.pictures.page import WIDE_PICTURE, SentenceLike, _svg_size, as_item

PathLike = Union[str, Path]


def _why(e: OSError) -> str:
    return (e.strerror or str(e)).lower()


def write_text_atomic(path: PathLike, text: str, refuse_symlink: bool = False) -> None:
    """Write `text` (UTF-8) to `path` whole or not at all (modelfile.atomic_file). A link at `path` is
    replaced, or with refuse_symlink refused (a file name the user gave: they may have meant its target)."""
    from onlstm_cli.modelfile import atomic_file

    with atomic_file(path, "w", refuse_symlink=refuse_symlink) as f:
        f.write(text)


def check_destination(path: PathLike, option: str = "--html") -> None:
    """Before any work: `path` must be a file name (not a link) in an existing folder we can write to."""
    path = Path(path)
    if path.is_symlink():  # as write_text_atomic(refuse_symlink=True) will, but before the work
        raise PictureFileError(f"{option} {path} is a symbolic link; not writing through it (give the file it "
                               "points to, or another name)")
    if path.is_dir():
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

# Han ideographs, CJK punctuation and full-width forms: the characters a Latin font has no glyph for (a
# wider set than vocab.has_cjk's ideographs, which decide how text is read, not how it is drawn).
_NEEDS_CJK_FONT = re.compile("[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef\U00020000-\U0003134f]")
_warned = False


def needs_cjk_font(text: str) -> bool:
    return _NEEDS_CJK_FONT.search(text) is not None


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
    if _warned or not any(needs_cjk_font(word) for word in words):
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
    draw.sentence_svg's `bars`: "span" (a span parser's or PCFG's tree: split heights, unless --layer
    asked for a layer) or "onlstm" (a layer's d_f). The models are already in the api.Parser's cache."""
    def kind(model: str) -> Optional[str]:
        if not model:
            return None
        loaded = parser._cache.get(Path(model))
        return "span" if loaded.tree_parser is not None and parser.layer is None else "onlstm"
    return kind


# One <svg> document a line is what a program reading a pipe line by line wants, but a file of two or more is
# no SVG any viewer opens: said once, at the second picture, with the ways to a file that opens.
SEVERAL_SVGS = ("warning: --format svg writes one <svg> document a line, and a file of several opens in no "
                "viewer; for pictures to open, use --out-dir DIR (a file a line) or --format html (one page)")


def _is_pipe(out: TextIO) -> bool:
    """Whether `out` is a pipe or socket, read by a program as it comes (not a file a viewer opens)."""
    try:
        mode = os.fstat(out.fileno()).st_mode
    except (OSError, ValueError, AttributeError):  # no real file (a test's capture): as a file
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def write_pictures(batches: Iterable[list], parser, out: TextIO, html: bool = False,
                   out_dir: Optional[Path] = None) -> None:
    """`onlstm parse -f svg|html`: batches of parser.ParsedSentence (from `parser`, an api.Parser) drawn as
    one SVG a line on `out`, one file a sentence in out_dir, or (html) one page on `out`."""
    from itertools import chain

    from onlstm_cli.pictures.page import html_page, numbered

    bars = bars_kind(parser)
    batches = watched(batches)
    if out_dir is not None:
        written = write_svgs(numbered(chain.from_iterable(batches), bars=bars), out_dir)
        print(f"wrote {len(written)} pictures to {out_dir}", file=sys.stderr)
        return
    if html:
        page = html_page(numbered(chain.from_iterable(batches), bars=bars), title="onlstm parse")
        # in pieces: a single huge write into a pipe whose reader has gone ends short without an error
        for start in range(0, len(page), 1 << 16):
            out.write(page[start:start + (1 << 16)])
            out.flush()
        return
    drawn, into_a_pipe = 0, _is_pipe(out)
    for batch in batches:
        for sentence in batch:
            if sentence.tree is not None:
                drawn += 1
                if drawn == 2 and not into_a_pipe:
                    print(SEVERAL_SVGS, file=sys.stderr)
            out.write(("" if sentence.tree is None else standalone_svg(
                sentence.tokens, sentence.tree, sentence.distances, bars(sentence.model))) + "\n")
        out.flush()


def standalone_svg(tokens: list[str], tree, distances, bars: Optional[str], title: Optional[str] = None) -> str:
    """A sentence's picture to open by itself (`-f svg`): one wider than most screens says so at its top, where
    it opens, since a viewer shows its start and a browser's scroll bar is easily missed."""
    svg = sentence_svg(tokens, tree, distances, title=title, bars=bars)
    if float(_svg_size(svg, "width")) <= WIDE_PICTURE:
        return svg
    hint = f"{len(tokens)} words, wider than most screens: scroll sideways to see them all"
    return sentence_svg(tokens, tree, distances, title=title, bars=bars, hint=hint)


def svg_file_name(line: int) -> str:
    """The --out-dir file name of an input line: line-000001.svg."""
    return f"line-{line:06d}.svg"


def write_svgs(items: Iterable[SentenceLike], out_dir: Union[str, Path]) -> list[Path]:
    """Write one SVG file per sentence into out_dir (created if missing), named by line number.

    Items are NumberedSentence or (line, tokens, tree, distances); empty lines get no file.
    Each file is written whole or not at all, never through a link (picture_files.write_text_atomic).
    Returns the paths written, in input order.
    """
    out_dir = prepare_out_dir(out_dir)  # before the first sentence is parsed: items may be a lazy parse
    written = []
    for item in map(as_item, items):
        if not item.tokens:
            continue
        path = out_dir / svg_file_name(item.line)
        write_text_atomic(path, standalone_svg(item.tokens, item.tree, item.distances, item.bars,
                                               title=f"line {item.line}") + "\n")
        written.append(path)
    return written
