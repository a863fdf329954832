"""Language models as one ensemble file (`onlstm ensemble A B … -o OUT`): the first model's file, with the others
as members whose distances are combined per word when it parses (induction/distances.py). The members must read
text as the first does: the same vocabulary and tokenizer (other seeds, or right-to-left models of --reverse)."""
from __future__ import annotations

import math
from pathlib import Path

from onlstm_cli.config import COMBINE_RULES, EnsembleConfig
from onlstm_cli.errors import UserError
from onlstm_cli.modelfile import (LoadedModel, atomic_save, load_model, model_archive, model_from_archive,
                                  normalized_weights)
from onlstm_cli.trees import SPLIT_RULES


def with_members(archive: dict, members: list[dict], combine: str = "mean",
                 weights: list[float] | None = None) -> dict:
    """An ensemble archive: `archive` plus other model archives as members (see the module docstring)."""
    combined = dict(archive, combine=combine)
    if weights is not None:
        combined["weights"] = [float(w) for w in weights]
    combined["members"] = [{k: v for k, v in m.items() if k not in ("format", "version", "members")}
                           for m in members]
    return combined


def check_ensemble(models: list[LoadedModel], config: EnsembleConfig) -> None:
    """Each problem a one-line UserError, before anything is written."""
    if config.combine not in COMBINE_RULES:
        raise UserError(f"--combine {config.combine!r}: expected one of {', '.join(COMBINE_RULES)}")
    if config.split is not None and config.split not in SPLIT_RULES:
        raise UserError(f"--split {config.split!r}: expected one of {', '.join(SPLIT_RULES)}")
    if config.weights and (len(config.weights) != len(models) or not all(map(math.isfinite, config.weights))
                           or min(config.weights) < 0 or max(config.weights) <= 0):
        raise UserError(f"--weights: give one finite, non-negative weight per model ({len(models)}), not all 0")
    for model in models:  # an ensemble combines language models' distances layer by layer
        if model.model is None or model.span_parser is not None or model.members:
            what = "a PCFG" if model.pcfg is not None else "a span parser" if model.tree_parser else "an ensemble"
            raise UserError(f"{model.path} is {what}, not a language model: an ensemble combines language models")
    first = models[0]
    if config.parse_layer is not None and not 1 <= config.parse_layer <= first.config.n_layers:
        raise UserError(f"--parse-layer {config.parse_layer}: {first.path} has layers 1 to {first.config.n_layers}")
    for model in models:
        if model.vocab.itos != first.vocab.itos or model.tokenizer.to_dict() != first.tokenizer.to_dict():
            raise UserError(f"{model.path} reads text otherwise than {first.path} (another vocabulary or "
                            "tokenizer): an ensemble's models must read the same words")
        sizes = (model.config.layer_sizes(), model.config.chunk_size)
        if sizes != (first.config.layer_sizes(), first.config.chunk_size):
            raise UserError(f"{model.path} has other layer sizes than {first.path} (layers, embedding, hidden or "
                            "chunk size): an ensemble's distances are combined layer by layer")


def make_ensemble(paths: list[str | Path], out: str | Path, config: EnsembleConfig = EnsembleConfig()) -> LoadedModel:
    """Write the ensemble of the models at `paths` to `out` and return it as it loads. Everything that can
    fail is checked before `out` is touched (the archive is loaded from memory first), and the write is atomic:
    a failure leaves an existing `out` as it was."""
    if len(paths) < 2:
        raise UserError("an ensemble needs at least two models")
    models = [load_model(path) for path in paths]
    check_ensemble(models, config)
    first = models[0]
    archives = [model_archive(m.model, m.vocab, m.tokenizer, m.lang, m.parse_layer, dict(m.meta), split=m.split)
                for m in models]
    archives[0] = model_archive(first.model, first.vocab, first.tokenizer, first.lang,
                                config.parse_layer or first.parse_layer, dict(first.meta),
                                split=config.split or first.split)
    weights = normalized_weights(config.weights) if config.weights else None
    archive = with_members(archives[0], archives[1:], config.combine, weights)
    written = model_from_archive(archive, str(out))  # whatever the loader refuses is refused before OUT is touched
    atomic_save(archive, out)
    return written
