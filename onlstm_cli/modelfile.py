"""The model file: one `torch.save` archive of plain data, read back with `weights_only=True`.

Nothing in it is a pickled object of ours, so loading a file never runs code from it. Layout (version 1):

    {"format": "onlstm-model", "version": 1, "config": {...ModelConfig}, "state_dict": {name: tensor},
     "vocab": [word, ...], "tokenizer": {...Tokenizer}, "lang": "en", "parse_layer": 2 (1-based),
     "split": "paper" (the split rule trees are built with; optional, "paper" when absent),
     "combine": "mean" (how an ensemble's distances are combined, see parser.sentence_distances; optional),
     "weights": [1.0, ...] (one per model, the first included: the weighted average's weights; optional),
     "meta": {"data": ..., "epochs": ..., "valid_ppl": ..., "onlstm_version": ..., ...},
     "members": [{"config", "state_dict", "vocab", "tokenizer", "meta", ...}, ...] (optional),
     "span_parser": {"config": {...SpanParserConfig}, "state_dict": {...}, "meta": {...}} (optional)}

An ensemble file carries further language models of the same shape as "members" (trained the same way,
with other seeds, or reading right to left); parsing combines the distances of all of them. Perplexity is the first model's.
A self-trained file (self_training.py) carries a span parser trained on its language model's trees; the span
parser then parses, and the language model gives perplexity and the distances of `--layer`.

Training checkpoints use the same archive with `"format": "onlstm-checkpoint"` and the optimizer state,
position in the data and best validation perplexity added.
"""
from __future__ import annotations

import os
import warnings
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import torch

from .errors import OnlstmError
from .model import ModelConfig, ONLSTMLanguageModel
from .vocab import Tokenizer, Vocabulary

MODEL_FORMAT = "onlstm-model"
CHECKPOINT_FORMAT = "onlstm-checkpoint"
FORMAT_VERSION = 1


class ModelFileError(OnlstmError):
    """A model or checkpoint file that cannot be used; the message is one line for the user."""


@dataclass
class LoadedModel:
    model: ONLSTMLanguageModel
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

    @property
    def config(self) -> ModelConfig:
        return self.model.config


def atomic_save(obj, path: str | Path) -> None:
    """Write to a temporary file beside `path`, then rename: a crash never leaves a half-written file."""
    path = Path(path)
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "wb") as f:
            torch.save(obj, f)
            f.flush()
            os.fsync(f.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600 files; a model file is for sharing
        os.replace(tmp, path)
    except BaseException as e:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(e, (OSError, RuntimeError)):  # torch.save reports a full disk as a RuntimeError
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


def model_archive(model: ONLSTMLanguageModel, vocab: Vocabulary, tokenizer: Tokenizer, lang: str,
                  parse_layer: int, meta: dict, dtype: torch.dtype = torch.float16, split: str = "paper") -> dict:
    """Weights are stored as float16 by default (half the size; distances change by ~1e-3) and read back
    as float32; training checkpoints keep float32 so that resuming is exact. Weights that are not finite
    (a diverged run), or that float16 cannot hold, are refused: such a file would give meaningless trees."""
    return {
        "format": MODEL_FORMAT,
        "version": FORMAT_VERSION,
        "config": model.config.to_dict(),
        "state_dict": stored_weights(model, dtype),
        "vocab": list(vocab.itos),
        "tokenizer": tokenizer.to_dict(),
        "lang": lang,
        "parse_layer": int(parse_layer),
        "split": split,
        "meta": dict(meta),
    }


def validation_history(meta: dict) -> list[dict]:
    """A model file's validations, {"epoch", "valid_ppl"} each, its own last: the file is written before its
    own validation joins the run's history."""
    history = [h for h in meta.get("history") or [] if h.get("valid_ppl") is not None]
    if meta.get("valid_ppl") is not None and (not history or history[-1]["epoch"] != meta.get("epochs")):
        history.append({"epoch": meta["epochs"], "valid_ppl": round(meta["valid_ppl"], 2)})
    return history


def all_finite(model: ONLSTMLanguageModel) -> bool:
    return all(bool(torch.isfinite(p).all()) for p in model.state_dict().values() if p.is_floating_point())


def with_members(archive: dict, members: list[dict], combine: str = "mean",
                 weights: list[float] | None = None) -> dict:
    """An ensemble archive: `archive` plus other model archives as members (see the module docstring)."""
    combined = dict(archive, combine=combine)
    if weights is not None:
        combined["weights"] = [float(w) for w in weights]
    combined["members"] = [{k: v for k, v in m.items() if k not in ("format", "version", "members")}
                           for m in members]
    return combined


def save_model(path: str | Path, model: ONLSTMLanguageModel, vocab: Vocabulary, tokenizer: Tokenizer,
               lang: str, parse_layer: int, meta: dict, split: str = "paper") -> None:
    atomic_save(model_archive(model, vocab, tokenizer, lang, parse_layer, meta, split=split), path)


def read_archive(path: str | Path, expected_format: str = MODEL_FORMAT) -> dict:
    """Load and check an archive; every problem becomes a one-line ModelFileError."""
    path = Path(path)
    if not path.exists():
        raise ModelFileError(f"model file not found: {path}")
    if path.is_dir():
        raise ModelFileError(f"{path} is a directory, not a model file")
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
    if version != FORMAT_VERSION:
        raise ModelFileError(f"{path} has model format version {version}; this onlstm reads version "
                             f"{FORMAT_VERSION} (retrain or use a matching onlstm release)")
    return archive


def model_from_archive(archive: dict, path: str = "") -> LoadedModel:
    try:
        config = ModelConfig(**archive["config"])
        model = ONLSTMLanguageModel(config)
        model.load_state_dict(archive["state_dict"])
        vocab = Vocabulary(archive["vocab"][2:])
        tokenizer = Tokenizer(**archive["tokenizer"])
        layer = int(archive["parse_layer"])
        meta = dict(archive.get("meta", {}))
        split = str(archive.get("split", "paper"))
        combine = str(archive.get("combine", "mean"))
        weights = archive.get("weights")
        weights = None if weights is None else [float(w) for w in weights]
    except (KeyError, TypeError, ValueError, RuntimeError, ArithmeticError, AttributeError) as e:
        reason = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise ModelFileError(f"{path or 'model file'} is damaged or incompatible: {reason[:160]}") from None
    if len(vocab) != config.vocab_size:
        raise ModelFileError(f"{path} is damaged: vocabulary size does not match the weights")
    if not all_finite(model):
        raise ModelFileError(f"{path} has weights that are not finite numbers (NaN or inf): its training "
                             "diverged; retrain it with a lower --lr")
    if not 1 <= layer <= config.n_layers:
        raise ModelFileError(f"{path} is damaged: parse layer {layer} out of range")
    model.eval()
    if split not in ("paper", "symmetric"):
        raise ModelFileError(f"{path} is damaged: unknown split rule {split!r}")
    if combine not in ("mean", "zscore", "rank"):
        raise ModelFileError(f"{path} is damaged: unknown ensemble combination {combine!r}")
    members = archive.get("members") or []
    if weights is not None and (len(weights) != 1 + len(members) or min(weights) < 0 or sum(weights) <= 0):
        raise ModelFileError(f"{path} is damaged: its ensemble weights do not fit its {1 + len(members)} model(s)")
    loaded = LoadedModel(model, vocab, tokenizer, archive.get("lang", ""), layer, meta, str(path), split,
                         combine=combine, weights=weights)
    if archive.get("span_parser") is not None:
        loaded.span_parser = span_parser_from_archive(archive["span_parser"], len(vocab), path)
    for k, member in enumerate(members):
        if not isinstance(member, dict):
            raise ModelFileError(f"{path} is damaged: ensemble member {k + 1} is not a model")
        part = model_from_archive({**member, "parse_layer": layer, "split": split}, f"{path} (member {k + 1})")
        if part.config.layer_sizes() != config.layer_sizes() or part.config.chunk_size != config.chunk_size:
            raise ModelFileError(f"{path}: ensemble member {k + 1} has other layer sizes than the first model")
        if part.tokenizer.to_dict() != tokenizer.to_dict():
            raise ModelFileError(f"{path}: ensemble member {k + 1} tokenizes differently from the first model")
        loaded.members.append(part)
    return loaded


def span_parser_from_archive(section, vocab_size: int, path: str):
    from .config import SpanParserConfig
    from .span_parser import SpanParser
    try:
        config = SpanParserConfig(**section["config"])
        parser = SpanParser(config)
        parser.load_state_dict(section["state_dict"])
    except (KeyError, TypeError, ValueError, RuntimeError, AttributeError) as e:
        reason = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise ModelFileError(f"{path or 'model file'}: its span parser is damaged or incompatible: {reason[:160]}") from None
    if config.vocab_size != vocab_size:
        raise ModelFileError(f"{path} is damaged: the span parser's vocabulary does not match the model's")
    if not all(bool(torch.isfinite(p).all()) for p in parser.state_dict().values()):
        raise ModelFileError(f"{path} has span parser weights that are not finite numbers (NaN or inf)")
    parser.meta = dict(section.get("meta", {}))
    return parser.eval()


def load_model(path: str | Path) -> LoadedModel:
    """Read a model file (or the model inside a training checkpoint)."""
    return model_from_archive(read_archive(path), str(path))
