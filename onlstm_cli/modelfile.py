"""Model files by their kind: MODEL_KINDS, a file's kind → the loader that builds its models (a language model, a span
parser beside it or alone, a neural PCFG), and `load_model`, which reads any of them. The archive itself (its
layout, its safe reading, atomic writes) is model_archive.py's; its names are offered here too, as callers have
always imported them from here.

An ensemble file carries further language models of the same shape as "members" (trained the same way,
with other seeds, or reading right to left); parsing combines the distances of all of them. Perplexity is the first model's.
A self-trained file (student/train.py) carries a span parser trained on its language model's trees; the span
parser then parses, and the language model gives perplexity and the distances of `--layer`.
"""
from __future__ import annotations

from pathlib import Path

import torch

from onlstm_cli.errors import ModelFileError
from onlstm_cli.lm.model import ModelConfig, ONLSTMLanguageModel
from onlstm_cli.model_archive import (CHECKPOINT_FORMAT, FORMAT_VERSION, MAX_PICKLE_BYTES, MODEL_FORMAT,  # noqa: F401
                                      LoadedModel, atomic_file, atomic_save, check_entries, check_weights_present,
                                      check_reading_fields, ensemble_members, glob_escape,
                                      read_archive, stale_temp_files, stored_weights, write_failure)
from onlstm_cli.model_meta import (LM_META, SPAN_PARSER_META, check_declared_sizes, check_fields,  # noqa: F401
                                   check_header, check_meta, check_meta_size, check_vocab, normalized_weights, shown,
                                   validation_history)
from onlstm_cli.pcfg_file import pcfg_from_archive
from onlstm_cli.text.tokenizers import Tokenizer
from onlstm_cli.text.vocab import Vocabulary


def model_archive(model: ONLSTMLanguageModel, vocab: Vocabulary, tokenizer: Tokenizer, lang: str,
                  parse_layer: int, meta: dict, dtype: torch.dtype = torch.float16, split: str = "paper") -> dict:
    """Weights are stored as float16 by default (half the size; distances change by ~1e-3) and read back
    as float32; training checkpoints keep float32 so that resuming is exact. Weights that are not finite
    (a diverged run), or that float16 cannot hold, are refused: such a file would give meaningless trees."""
    return {
        "format": MODEL_FORMAT,
        "version": FORMAT_VERSION,
        "kind": "onlstm",
        "config": model.config.to_dict(),
        "state_dict": stored_weights(model, dtype),
        "vocab": list(vocab.itos),
        "tokenizer": tokenizer.to_dict(),
        "lang": lang,
        "parse_layer": int(parse_layer),
        "split": split,
        "meta": dict(meta),
    }


def all_finite(model: ONLSTMLanguageModel) -> bool:
    return all(bool(torch.isfinite(p).all()) for p in model.state_dict().values() if p.is_floating_point())


def save_model(path: str | Path, model: ONLSTMLanguageModel, vocab: Vocabulary, tokenizer: Tokenizer,
               lang: str, parse_layer: int, meta: dict, split: str = "paper") -> None:
    atomic_save(model_archive(model, vocab, tokenizer, lang, parse_layer, meta, split=split), path)


def check_model_section(archive: dict, where: str, n_models: int = 1) -> None:
    """A language model's header against its weights and vocabulary (see check_declared_sizes), and every
    other field it has, by type and range (model_meta.py)."""
    check_declared_sizes(archive, where, r"layers\.(\d+)\.ih\.weight", ModelConfig,
                         lambda config: ONLSTMLanguageModel(ModelConfig(**config)))
    vocab = archive.get("vocab")
    check_vocab(vocab, archive["config"]["vocab_size"], where)
    check_fields(archive.get("tokenizer"), Tokenizer, where, "tokenizer")
    check_header(archive, archive["config"]["n_layers"], n_models, where)
    check_meta_size(archive.get("meta", {}), where)
    check_meta(archive.get("meta"), LM_META, where)
    if archive.get("span_parser") is not None:
        check_span_parser_section(archive["span_parser"], len(vocab), where)


def check_span_parser_section(section, vocab_size: int, where: str) -> None:
    from onlstm_cli.config import SpanParserConfig
    from onlstm_cli.span import model as span_parser
    if not isinstance(section, dict):
        raise ModelFileError(f"{where}: its span parser is damaged: not a section of the file")
    check_declared_sizes(section, f"{where} (span parser)", r"lstm\.weight_ih_l(\d+)", SpanParserConfig,
                         lambda config: span_parser.SpanParser(SpanParserConfig(**config)),
                         ("vocab_size", "emb_size", "hidden_size", "n_layers", "mlp_size"))
    if section["config"]["vocab_size"] != vocab_size:
        raise ModelFileError(f"{where} is damaged: the span parser's vocabulary does not match the model's")
    check_meta_size(section.get("meta", {}), f"{where} (span parser)")
    check_meta(section.get("meta"), SPAN_PARSER_META, f"{where} (span parser)")


def model_from_archive(archive: dict, path: str = "") -> LoadedModel:
    where = path or "model file"
    members = ensemble_members(archive, where)
    check_model_section(archive, where, 1 + len(members))  # every field by type and range, before building
    try:
        config = ModelConfig(**archive["config"])
        vocab = Vocabulary(archive["vocab"][2:])
        model = ONLSTMLanguageModel(config, vocab.itos)
        model.load_state_dict(archive["state_dict"])
        tokenizer = Tokenizer(**archive["tokenizer"])
    except (KeyError, TypeError, ValueError, RuntimeError, ArithmeticError, AttributeError) as e:
        reason = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise ModelFileError(f"{where} is damaged or incompatible: {reason[:160]}") from None
    if len(vocab) != config.vocab_size:
        raise ModelFileError(f"{path} is damaged: vocabulary size does not match the weights")
    if not all_finite(model):
        raise ModelFileError(f"{path} has weights that are not finite numbers (NaN or inf): its training "
                             "diverged; retrain it with a lower --lr")
    weights = archive.get("weights")
    loaded = LoadedModel(model.eval(), vocab, tokenizer, archive.get("lang", ""), archive["parse_layer"],
                         dict(archive.get("meta") or {}), str(path), archive.get("split", "paper"),
                         combine=archive.get("combine", "mean"),
                         weights=None if weights is None else normalized_weights(weights))
    if archive.get("span_parser") is not None:
        loaded.span_parser = span_parser_from_archive(archive["span_parser"], vocab, path)
    for k, member in enumerate(members):
        part = model_from_archive({**member, "parse_layer": loaded.parse_layer, "split": loaded.split},
                                  f"{path} (member {k + 1})")
        if part.config.layer_sizes() != config.layer_sizes() or part.config.chunk_size != config.chunk_size:
            raise ModelFileError(f"{path}: ensemble member {k + 1} has other layer sizes than the first model")
        if part.tokenizer.to_dict() != tokenizer.to_dict():
            raise ModelFileError(f"{path}: ensemble member {k + 1} tokenizes differently from the first model")
        loaded.members.append(part)
    return loaded


def span_parser_from_archive(section, vocab: Vocabulary, path: str):
    from onlstm_cli.config import SpanParserConfig
    from onlstm_cli.span.model import SpanParser
    try:
        config = SpanParserConfig(**section["config"])
        parser = SpanParser(config, vocab.itos)
        parser.load_state_dict(section["state_dict"])
    except (KeyError, TypeError, ValueError, RuntimeError, AttributeError) as e:
        reason = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise ModelFileError(f"{path or 'model file'}: its span parser is damaged or incompatible: {reason[:160]}") from None
    if config.vocab_size != len(vocab):
        raise ModelFileError(f"{path} is damaged: the span parser's vocabulary does not match the model's")
    if not all(bool(torch.isfinite(p).all()) for p in parser.state_dict().values()):
        raise ModelFileError(f"{path} has span parser weights that are not finite numbers (NaN or inf)")
    parser.meta = dict(section.get("meta", {}))
    return parser.eval()


def span_archive(parser, vocab: Vocabulary, tokenizer: Tokenizer, lang: str, data: dict, meta: dict) -> dict:
    """A self-trained span parser written without a language model (kind "span"): its vocabulary, tokenizer and
    language, how its text was read (`data`: pretokenized, keep_punct, punctuation), and the span parser."""
    return {"format": MODEL_FORMAT, "version": FORMAT_VERSION, "kind": "span", "vocab": list(vocab.itos),
            "tokenizer": tokenizer.to_dict(), "lang": lang, "split": "symmetric", "meta": {"data": dict(data)},
            "span_parser": {"config": parser.config.to_dict(), "meta": meta, "state_dict": stored_weights(parser)}}


def span_from_archive(archive: dict, path: str = "") -> LoadedModel:
    """A span parser without a language model (span_archive), every field checked before anything is built."""
    where = path or "model file"
    section = archive.get("span_parser")
    if not isinstance(section, dict) or not isinstance(section.get("config"), dict):
        raise ModelFileError(f"{where} is damaged: a span parser's file without its span parser")
    check_vocab(archive.get("vocab"), section["config"].get("vocab_size"), where)
    check_reading_fields(archive, where)
    check_span_parser_section(section, len(archive["vocab"]), where)
    try:
        vocab, tokenizer = Vocabulary(archive["vocab"][2:]), Tokenizer(**archive["tokenizer"])
    except (TypeError, ValueError) as e:
        raise ModelFileError(f"{where} is damaged or incompatible: {str(e)[:160]}") from None
    loaded = LoadedModel(None, vocab, tokenizer, archive.get("lang", ""), 0, dict(archive.get("meta") or {}), str(path),
                         "symmetric", kind="span")
    loaded.span_parser = span_parser_from_archive(section, vocab, path)
    return loaded


# a model file's kind (its family) → the function that builds the loaded model from its archive, as supar keeps a
# registry of parser classes. A new family is a module with its model and loader, and one line here.
MODEL_KINDS = {"onlstm": model_from_archive, "span": span_from_archive, "pcfg": pcfg_from_archive}


def load_model(path: str | Path) -> LoadedModel:
    """Read a model file (or the model inside a training checkpoint) by the loader of its kind."""
    archive = read_archive(path)
    kind = archive.get("kind", "onlstm")
    if not isinstance(kind, str) or kind not in MODEL_KINDS:
        raise ModelFileError(f"{path} holds a model of kind {shown(kind)}, which this onlstm cannot read "
                             f"(it reads {', '.join(MODEL_KINDS)}): a newer onlstm may")
    return MODEL_KINDS[kind](archive, str(path))
