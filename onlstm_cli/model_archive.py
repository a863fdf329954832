"""The model file: one `torch.save` archive of plain data, read back with `weights_only=True` (modelfile.py builds
models from it, by their kind).

Nothing in it is a pickled object of ours, so loading a file never runs code from it. Layout (version 1):

    {"format": "onlstm-model", "version": 1, "kind": "onlstm" (the model family, MODEL_KINDS; optional,
     "onlstm" when absent), "config": {...ModelConfig}, "state_dict": {name: tensor},
     "vocab": [word, ...], "tokenizer": {...Tokenizer}, "lang": "en", "parse_layer": 2 (1-based),
     "split": "paper" (the split rule trees are built with; optional, "paper" when absent),
     "combine": "mean" (how an ensemble's distances are combined, see parser.sentence_distances; optional),
     "weights": [1.0, ...] (one per model, the first included: the weighted average's weights; optional),
     "meta": {"data": ..., "epochs": ..., "valid_ppl": ..., "onlstm_version": ..., ...},
     "members": [{"config", "state_dict", "vocab", "tokenizer", "meta", ...}, ...] (optional; no "members" in them),
     "span_parser": {"config": {...SpanParserConfig}, "state_dict": {...}, "meta": {...}} (optional)}

An ensemble file carries further language models of the same shape as "members" (trained the same way,
with other seeds, or reading right to left); parsing combines the distances of all of them. Perplexity is the first model's.
A self-trained file (student/train.py) carries a span parser trained on its language model's trees; the span
parser then parses, and the language model gives perplexity and the distances of `--layer`.

Training checkpoints use the same archive with `"format": "onlstm-checkpoint"` and the optimizer state,
position in the data and best validation perplexity added.
"""
from __future__ import annotations

import contextlib
import os
import warnings
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import torch

from onlstm_cli.errors import ModelFileError
from onlstm_cli.files import check_readable_file, check_writable_kind
from onlstm_cli.model_meta import LM_META, check_fields, check_meta, check_meta_size, shown
from onlstm_cli.lm.model import ModelConfig, ONLSTMLanguageModel
from onlstm_cli.text.tokenizers import Tokenizer
from onlstm_cli.text.vocab import Vocabulary

MODEL_FORMAT = "onlstm-model"
CHECKPOINT_FORMAT = "onlstm-checkpoint"
FORMAT_VERSION = 1


# What a file may claim before anything is built from it. A file is never trusted to size its own reading:
# memory follows the bytes really present (check_entries), and every size its header declares is checked
# against the tensors it holds before a model is allocated (check_declared_sizes); its meta, model_meta.py.
MAX_PICKLE_BYTES = 64 << 20  # the pickled structure (vocabulary, meta, ...; 177 KB in the bundled English model)


@dataclass
class LoadedModel:
    model: ONLSTMLanguageModel | None  # None: a span parser written without a language model (kind "span")
    vocab: Vocabulary
    tokenizer: Tokenizer
    lang: str
    parse_layer: int  # 1-based
    meta: dict = field(default_factory=dict)
    path: str = ""
    split: str = "paper"  # the split rule this model's trees are built with by default
    members: list["LoadedModel"] = field(default_factory=list)  # further models whose distances are combined
    combine: str = "mean"  # how: "mean", "zscore" or "rank" (parser.sentence_distances)
    weights: list[float] | None = None  # one per model (this one first); None: equal
    span_parser: object = None  # a self-trained SpanParser (span_parser.py): when present, it parses
    kind: str = "onlstm"  # the model family (MODEL_KINDS), which also says how it teaches (induction/teachers.py)
    pcfg: object = None  # a neural PCFG (kind "pcfg", pcfg_file.py): it parses

    @property
    def tree_parser(self):
        """What parses whole sentences where no layer is asked for: a span parser or a PCFG (None: the layers)."""
        return self.span_parser if self.pcfg is None else self.pcfg

    @property
    def config(self) -> ModelConfig:
        if self.model is None:
            what = "a PCFG" if self.pcfg is not None else "a span parser without a language model"
            raise ModelFileError(f"{self.path} is {what}: it has no layers, layer distances or language-model "
                                 "perplexity of its own")
        return self.model.config

    @property
    def unit_buckets(self) -> int:
        """Rows of character n-grams its language model reads words by (0: words alone, or no language model)."""
        return 0 if self.model is None else self.model.config.unit_buckets

    def word_vectors(self) -> tuple | None:
        """What its language model has learned of each word, for a student to start from: (its word rows, its
        n-gram rows or None); None without a language model."""
        if self.model is None:
            return None
        return self.model.embedding.weight.data, getattr(self.model.unit_embedding, "weight", None)

    def to(self, device) -> "LoadedModel":
        """Every network it holds onto `device`."""
        for part in (self, *self.members):
            if part.model is not None:
                part.model.to(device)
        if self.tree_parser is not None:
            self.tree_parser.to(device)
        return self

    def first_model_only(self) -> None:
        """An ensemble file read as its first model alone (less work a sentence)."""
        self.members, self.weights = [], None

    @property
    def punctuation(self) -> str:
        """How its trees treat punctuation marks (trees.PUNCTUATION_RULES): "boundaries" where `train` wrote it
        (files trained since issue 40), "ignore" for files written before, the bundled ones included."""
        return "boundaries" if self.meta.get("data", {}).get("punctuation") == "boundaries" else "ignore"

    def cuts_at_marks(self, punctuation: str | None = None) -> bool:
        """Whether its trees are cut at punctuation marks first: `punctuation` where given, else its own rule."""
        return (punctuation or self.punctuation) == "boundaries"


def atomic_save(obj, path: str | Path) -> None:
    """Write to a temporary file beside `path`, then rename: a crash never leaves a half-written file."""
    with atomic_file(path) as f:
        try:
            torch.save(obj, f)
        except RuntimeError as e:  # torch.save reports a full disk as a RuntimeError
            raise ModelFileError(f"could not write {path}: {write_failure(e)}") from None


@contextlib.contextmanager
def atomic_file(path: str | Path, mode: str = "wb", refuse_symlink: bool = False):
    """A file object writing to a temporary file beside `path`, renamed onto `path` when the block ends
    without an error (removed when it raises): readers see the old file or the whole new one.

    refuse_symlink: a `path` that is a symbolic link is refused rather than replaced (the rename would
    replace the link itself, never write through it, but a user who named a link meant its target)."""
    path = Path(path)
    if refuse_symlink and path.is_symlink():
        raise ModelFileError(f"{path} is a symbolic link; not writing through it (give the file it points to)")
    if path.is_dir():
        raise ModelFileError(f"could not write {path}: it is a directory")
    check_writable_kind(path, "the output", ModelFileError)  # the rename would replace a device or a FIFO
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600 files; a model file is for sharing
        os.replace(tmp, path)
    except BaseException as e:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(e, OSError):
            raise ModelFileError(f"could not write {path}: {write_failure(e)}") from None
        raise


def write_failure(e: BaseException) -> str:
    """Why a write failed, in a few words (torch.save's own messages name its internal file and position)."""
    if isinstance(e, OSError) and e.strerror:
        return e.strerror.lower()
    return "the disk is full or the file system refused the write"


def stale_temp_files(path: str | Path) -> list[Path]:
    """Hidden temporary files that atomic_save left beside `path` when its process was killed mid-write."""
    path = Path(path)
    return sorted(path.parent.glob(f".{glob_escape(path.name)}.*.tmp"))


def glob_escape(name: str) -> str:
    return "".join(f"[{c}]" if c in "*?[" else c for c in name)


def stored_weights(module: torch.nn.Module, dtype: torch.dtype = torch.float16) -> dict:
    """A module's weights as a file stores them: floats in `dtype`, on the CPU, row by row whatever the layout
    in memory (the recurrent weights are column-major there). Weights that are not finite in `dtype` are
    refused."""
    state = {k: v.detach().cpu().to(dtype if v.is_floating_point() else v.dtype)
             .clone(memory_format=torch.contiguous_format) for k, v in module.state_dict().items()}
    for name, tensor in state.items():
        if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
            raise ModelFileError(f"not saving a model whose weights are not finite ({name} has NaN or inf"
                                 f"{' in float16' if dtype == torch.float16 else ''}): training diverged; "
                                 "try a lower --lr")
    return state


def read_archive(path: str | Path, expected_format: str = MODEL_FORMAT) -> dict:
    """Load and check an archive; every problem becomes a one-line ModelFileError."""
    path = Path(path)
    check_readable_file(path, "model file", ModelFileError)  # missing, a directory, a symbolic-link loop
    check_entries(path)
    try:
        with warnings.catch_warnings():  # torch warns about foreign pickles before refusing them: one line is ours
            warnings.simplefilter("ignore")
            archive = torch.load(path, map_location="cpu", weights_only=True)
    except (zipfile.BadZipFile, RuntimeError, EOFError, OSError, ValueError, KeyError) as e:
        raise ModelFileError(f"{path} is not a readable onlstm model file: it is truncated, damaged or of "
                             f"another format ({type(e).__name__})") from None
    except Exception as e:  # weights_only refuses anything but plain data: a foreign pickle lands here
        raise ModelFileError(f"{path} is not an onlstm model file ({type(e).__name__})") from None
    if not isinstance(archive, dict) or archive.get("format") not in (MODEL_FORMAT, CHECKPOINT_FORMAT):
        raise ModelFileError(f"{path} is not an onlstm model file")
    if archive["format"] != expected_format and expected_format == CHECKPOINT_FORMAT:
        raise ModelFileError(f"{path} is a model file, not a training checkpoint (those end in .ckpt)")
    version = archive.get("version")
    if type(version) is not int or version != FORMAT_VERSION:  # (a tensor's != would be a tensor)
        shown_version = version if type(version) is int and abs(version) < 10 ** 9 else shown(version)
        raise ModelFileError(f"{path} has model format version {shown_version}; this onlstm reads version "
                             f"{FORMAT_VERSION} (retrain or use a matching onlstm release)")
    check_weights_present(archive, path)
    check_meta_size(archive.get("meta"), str(path))  # a checkpoint's too: a resumed run reads it
    check_meta(archive.get("meta"), LM_META, str(path))
    return archive


def check_weights_present(archive: dict, path: Path) -> None:
    """The weights the file declares must be bytes it holds. A pickle can make a tensor a view of a few bytes
    repeated (stride 0: a 10^8-row embedding from one row), or refer to one member's tensors a thousand
    times; either would be allocated in full. Every model's tensors (members and span parser included) are
    counted as often as the loader would build them, and together they must fit in the file."""
    budget = path.stat().st_size
    models = [archive, *ensemble_members(archive, str(path))]
    sections = [*models, *(model.get("span_parser") for model in models)]
    total = 0
    for section in sections:
        state = section.get("state_dict") if isinstance(section, dict) else None
        for tensor in state.values() if isinstance(state, dict) else ():
            if isinstance(tensor, torch.Tensor):
                total += tensor.numel() * tensor.element_size()
            if total > budget:
                raise ModelFileError(f"{path} is damaged: its weights claim more bytes than the file holds "
                                     "(tensors repeating a few stored values, or models sharing one's weights)")


def ensemble_members(archive: dict, where: str) -> list[dict]:
    """An ensemble's members, each a model without members of its own (ensemble.with_members writes none): members
    within members would let a small file nest models without bound, each level built in full."""
    members = archive.get("members")
    if members is None:
        return []
    if not isinstance(members, list):
        raise ModelFileError(f"{where} is damaged: its ensemble members are {shown(members)}, not a list of models")
    for k, member in enumerate(members):
        if not isinstance(member, dict):
            raise ModelFileError(f"{where} is damaged: ensemble member {k + 1} is not a model")
        nested = member.get("members")
        if nested is not None and not (isinstance(nested, list) and not nested):
            raise ModelFileError(f"{where} is damaged: ensemble member {k + 1} has members of its own "
                                 "(an ensemble's members are language models)")
    return members


def unreadable(path: Path, why: str) -> ModelFileError:
    return ModelFileError(f"{path} is not a readable onlstm model file: it is truncated, damaged or of "
                          f"another format ({why})")


def check_entries(path: Path) -> None:
    """Before torch.load: the file must be a zip archive as torch.save writes it, every entry stored as it is.

    torch.load inflates a compressed entry whatever its size, so a few megabytes of deflated padding would
    be gigabytes in memory before any check ran; stored entries hold at most the file's own bytes. The
    pickled structure is bounded too: it becomes Python objects (the weights are separate entries)."""
    try:
        with zipfile.ZipFile(path) as archive:
            entries = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError):
        raise unreadable(path, "not a zip archive") from None
    except OSError as e:
        raise ModelFileError(f"cannot read {path}: {write_failure(e)}") from None
    for entry in entries:
        if entry.compress_type != zipfile.ZIP_STORED:
            raise ModelFileError(f"{path} is not an onlstm model file: its entry {entry.filename[-60:]!r} is "
                                 "compressed (torch.save never compresses; an entry that inflates could be any size)")
        if entry.filename.endswith("data.pkl") and entry.file_size > MAX_PICKLE_BYTES:
            raise ModelFileError(f"{path} is not an onlstm model file: its pickled part is {entry.file_size:,} "
                                 f"bytes, more than the {MAX_PICKLE_BYTES:,} this onlstm reads")
    if sum(entry.file_size for entry in entries) > path.stat().st_size:
        raise unreadable(path, "its entries claim more bytes than the file holds")


def check_reading_fields(archive: dict, where: str) -> None:
    """What a model file says of how it reads text, beside its network: its tokenizer, its language and its meta,
    each by type and size (a file without a language model checks these itself: a span parser's, a PCFG's)."""
    check_fields(archive.get("tokenizer"), Tokenizer, where, "tokenizer")
    lang = archive.get("lang", "")
    if not isinstance(lang, str) or len(lang) > 64:
        raise ModelFileError(f"{where} is damaged: its language is {shown(lang)}, not a short name")
    check_meta_size(archive.get("meta", {}), where)
    check_meta(archive.get("meta"), LM_META, where)
