"""A neural PCFG's model file (kind "pcfg"): model_archive.py's archive, its network under "pcfg".

    {"format": "onlstm-model", "version": 1, "kind": "pcfg", "vocab": [...], "tokenizer": {...}, "lang": "en",
     "split": "symmetric", "meta": {"data": ..., "train": ..., "epochs": ..., "valid_ppl": ..., ...},
     "pcfg": {"config": {...PcfgConfig}, "state_dict": {...}}}

It loads as a LoadedModel with no language model and the PCFG as its tree parser (`LoadedModel.pcfg`): parse,
evaluate and info read it as they read a span parser written alone, and its trees teach (induction/teachers.py).
Every field is checked by type and size before anything is built from it (model_meta.py).
"""
from __future__ import annotations

import torch

from onlstm_cli.config import MAX_ENDING_CHARS, PcfgConfig
from onlstm_cli.errors import ModelFileError
from onlstm_cli.model_meta import check_declared_sizes, check_vocab
from onlstm_cli.model_archive import FORMAT_VERSION, MODEL_FORMAT, LoadedModel, check_reading_fields, stored_weights
from onlstm_cli.pcfg.model import NeuralPCFG
from onlstm_cli.text.tokenizers import Tokenizer
from onlstm_cli.text.vocab import Vocabulary

SIZE_FIELDS = ("vocab_size", "nonterminals", "preterminals", "rank", "symbol_size")


def pcfg_archive(model: NeuralPCFG, vocab: Vocabulary, tokenizer: Tokenizer, lang: str, meta: dict,
                 dtype: torch.dtype = torch.float16) -> dict:
    """The file of a trained PCFG (float16 weights, as a language model's), or with float32 its checkpoint's model."""
    return {"format": MODEL_FORMAT, "version": FORMAT_VERSION, "kind": "pcfg", "vocab": list(vocab.itos),
            "tokenizer": tokenizer.to_dict(), "lang": lang, "split": "symmetric", "meta": dict(meta),
            "pcfg": {"config": model.config.to_dict(), "state_dict": stored_weights(model, dtype)}}


def pcfg_from_archive(archive: dict, path: str = "") -> LoadedModel:
    where = path or "model file"
    section = archive.get("pcfg")
    if not isinstance(section, dict):
        raise ModelFileError(f"{where} is damaged: a PCFG's file without its PCFG")
    check_declared_sizes(section, where, None, PcfgConfig, lambda config: NeuralPCFG(PcfgConfig(**config)),
                         SIZE_FIELDS)
    check_vocab(archive.get("vocab"), section["config"]["vocab_size"], where)
    check_reading_fields(archive, where)
    endings = section["config"].get("endings", 0)  # an int (check_fields); 0 in files written before it
    if not 0 <= endings <= MAX_ENDING_CHARS:
        raise ModelFileError(f"{where} is damaged: it reads a rare word by its last {endings} characters, not 0 to "
                             f"{MAX_ENDING_CHARS}")
    try:
        vocab, tokenizer = Vocabulary(archive["vocab"][2:], endings), Tokenizer(**archive["tokenizer"])
        pcfg = NeuralPCFG(PcfgConfig(**section["config"]))
        pcfg.load_state_dict({k: v.float() for k, v in section["state_dict"].items()})
    except (TypeError, ValueError, RuntimeError) as e:
        raise ModelFileError(f"{where} is damaged or incompatible: {str(e).splitlines()[0][:160]}") from None
    if len(vocab) != pcfg.config.vocab_size:
        raise ModelFileError(f"{where} is damaged: its vocabulary holds a word twice")
    if not all(bool(torch.isfinite(p).all()) for p in pcfg.state_dict().values()):
        raise ModelFileError(f"{where} has PCFG weights that are not finite numbers (NaN or inf): its training "
                             "diverged; retrain it with a lower --lr")
    loaded = LoadedModel(None, vocab, tokenizer, archive.get("lang", ""), 0, dict(archive.get("meta") or {}), str(path),
                         "symmetric",
                         kind="pcfg")
    loaded.pcfg = pcfg.eval()
    return loaded
