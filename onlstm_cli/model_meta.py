"""A model file's fields beside its weights, each checked by type and range in this one place before anything
uses them: its meta, the record of how it was made (data, options, validations, timings), shown by
`onlstm info` and read back by perplexity and by resumed runs: small enough to walk and plain data
(check_meta_size), every field read back of the type it is read as (check_meta); its configuration and
tokenizer (check_fields), vocabulary (check_vocab), and how it parses: parse layer, split rule, language,
ensemble combination and weights (check_header), and the sizes its header declares against the weights it holds
(check_declared_sizes). A damaged or crafted file is a one-line "is damaged", never an error where a field is read."""
from __future__ import annotations

import dataclasses
import math
import re

import torch
from torch.overrides import TorchFunctionMode

from onlstm_cli.config import COMBINE_RULES
from onlstm_cli.errors import ModelFileError
from onlstm_cli.trees import SPLIT_RULES

MAX_META_VALUES = 200_000    # values in a meta dict, counted along every path through it
MAX_META_CHARS = 16 << 20    # characters of its strings, counted the same way
MAX_META_DEPTH = 32          # lists and tables within each other (shown and written as JSON, recursively)
MAX_META_INT = 2 ** 63       # a whole number beyond it is no count, and a float could not hold it
PLAIN = (str, int, float, bool, type(None), list, tuple, dict)  # JSON's data (a tuple as a list)


def shown(value, limit: int = 40) -> str:
    """A value from a file as a message quotes it: a string cut to `limit` characters (a crafted name can be
    megabytes), anything else by its type."""
    if isinstance(value, str):
        return repr(value[:limit]) + ("…" if len(value) > limit else "")
    return type(value).__name__


def not_plain(value) -> str | None:
    """Why one value of meta is not JSON's data (its items apart), or None."""
    if not isinstance(value, PLAIN):
        return f"a {type(value).__name__}, not plain data"
    if isinstance(value, int) and abs(value) > MAX_META_INT:
        return "a whole number out of range (beyond 2^63)"
    if isinstance(value, dict) and not all(isinstance(key, str) for key in value):
        return "a table keyed by other than text"
    return None


def check_meta_size(meta, where: str) -> None:
    """Meta is shown, copied and written out as JSON, so it must stay small when walked, and be JSON's data:
    tables keyed by strings, lists, strings, numbers (whole ones a float can hold), nested at most
    MAX_META_DEPTH deep. Every path through it counts (a part the pickle shares is counted each time it is
    reached): a few kilobytes of nested references to one list cannot stand for 2^40 values, nor a list that
    contains itself for infinitely many."""
    values, chars, stack = 0, 0, [(meta, 0)]
    while stack:
        value, depth = stack.pop()
        values += 1
        if (why := not_plain(value)) is not None:
            raise ModelFileError(f"{where} is damaged: its metadata holds {why}")
        if isinstance(value, str):
            chars += len(value)
        elif isinstance(value, dict):
            stack.extend((item, depth + 1) for item in (*value.keys(), *value.values()))
        elif isinstance(value, (list, tuple)):
            stack.extend((item, depth + 1) for item in value)
        if values > MAX_META_VALUES or chars > MAX_META_CHARS or depth > MAX_META_DEPTH:
            raise ModelFileError(f"{where} is damaged: its metadata is larger than the {MAX_META_VALUES:,} values, "
                                 f"{MAX_META_CHARS:,} characters and {MAX_META_DEPTH} levels this onlstm reads")


# The meta fields onlstm reads back (info.py, perplexity, resuming), each None or of its type: a dict is a
# table of fields, [spec] a list of such items, {...: spec} a table whose every value is one. Meta of other
# types comes from a damaged or crafted file, and is refused as such rather than failing where it is read.
NUMBER = (int, float)
TRAIN_META = {"batch_size": int, "eval_batch_size": int, "world_size": int, "global_batch_size": int,
              "optimizer": str, "time_budget": NUMBER, "epochs": NUMBER}
LM_META = {"data": {"corpus": str, "valid": str, "train_tokens": int}, "train": TRAIN_META, "epochs": NUMBER,
           "valid_ppl": NUMBER, "seconds": NUMBER, "created": str, "onlstm_version": str,
           "history": [{"epoch": NUMBER, "valid_ppl": NUMBER, "seconds": NUMBER}]}
RECIPE_META = {"teachers": [{"family": str, "seed": int, "valid_ppl": NUMBER, "health": NUMBER, "epochs": NUMBER,
                             "seconds": NUMBER}],
               "seeds": list, "votes": str, "time_budget": NUMBER, "lm_share": NUMBER,
               "stage_seconds": {...: NUMBER}}
SPAN_PARSER_META = {"teacher": (str, list), "corpus": str, "valid": str, "train": dict, "onlstm_version": str,
                    "teacher_agreement": [NUMBER], "right_branching": NUMBER, "left_branching": NUMBER,
                    "lexical_agreement": NUMBER, "epochs": NUMBER,
                    "valid_loss": NUMBER, "seconds": NUMBER, "parse_seconds": NUMBER, "history": [dict],
                    "recipe": RECIPE_META}


def check_meta(value, spec, where: str, name: str = "metadata") -> None:
    """`value` against `spec` (see LM_META); a field of another type is a one-line "is damaged"."""
    if value is None:
        return
    kind = dict if isinstance(spec, dict) else list if isinstance(spec, list) else spec
    if not isinstance(value, kind):
        raise ModelFileError(f"{where} is damaged: its {name} is {type(value).__name__}, not "
                             f"{' or '.join(t.__name__ for t in (kind if isinstance(kind, tuple) else (kind,)))}")
    if isinstance(spec, list):
        for k, item in enumerate(value):
            check_meta(item, spec[0], where, f"{name}[{k}]")
    elif isinstance(spec, dict) and ... in spec:
        for key, item in value.items():
            check_meta(item, spec[...], where, f"{name}.{str(key)[:40]}")
    elif isinstance(spec, dict):
        for key, item_spec in spec.items():
            check_meta(value.get(key), item_spec, where, key if name == "metadata" else f"{name}.{key}")


def validation_history(meta: dict) -> list[dict]:
    """A model file's validations, {"epoch", "valid_ppl"} each, its own last: the file is written before its
    own validation joins the run's history."""
    history = [h for h in meta.get("history") or [] if h.get("valid_ppl") is not None]
    if meta.get("valid_ppl") is not None and (not history or history[-1].get("epoch") != meta.get("epochs")):
        history.append({"epoch": meta.get("epochs"), "valid_ppl": round(meta["valid_ppl"], 2)})
    return history


# A configuration's or tokenizer's field, by the type its dataclass declares: bool is no number here, a whole
# number is within ±2^63, and a float field takes a whole number (0 for 0.0) but neither NaN nor an infinity.
def whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and abs(value) <= MAX_META_INT


FIELD_TYPES = {"bool": lambda v: isinstance(v, bool), "str": lambda v: isinstance(v, str), "int": whole,
               "float": lambda v: whole(v) or isinstance(v, float) and math.isfinite(v)}


def check_fields(values, cls, where: str, what: str) -> None:
    """A dataclass as a file stores it (ModelConfig, SpanParserConfig, Tokenizer): a table of its fields' names,
    each value of its field's type. A tensor as a flag, say, would fail only where it is first used."""
    if not isinstance(values, dict):
        raise ModelFileError(f"{where} is damaged: its {what} is {type(values).__name__}, not a table")
    types = {field.name: str(field.type) for field in dataclasses.fields(cls)}
    for name, value in values.items():
        if not isinstance(name, str) or name not in types:
            raise ModelFileError(f"{where} is damaged or newer than this onlstm: its {what} has a field "
                                 f"{shown(name)} it does not know")
        if not FIELD_TYPES.get(types[name], lambda v: True)(value):
            raise ModelFileError(f"{where} is damaged: its {what}'s {name} is {shown(value)}, not {types[name]}"
                                 + (" (finite)" if types[name] == "float" else ""))


def check_vocab(vocab, size: int, where: str) -> None:
    """A list of `size` words, each a string (<unk> and <eos> first, as Vocabulary keeps them)."""
    if not isinstance(vocab, list) or len(vocab) != size:
        raise ModelFileError(f"{where} is damaged: vocabulary size does not match the weights")
    if not all(isinstance(word, str) for word in vocab):
        other = next(word for word in vocab if not isinstance(word, str))
        raise ModelFileError(f"{where} is damaged: its vocabulary holds a {type(other).__name__}, not only words")


def check_header(archive: dict, n_layers: int, n_models: int, where: str) -> None:
    """How the file parses: its parse layer (1-based, one of its n_layers), split rule, language (a short
    name), and, for an ensemble of n_models, how the models' distances are combined and weighed."""
    layer = archive.get("parse_layer")
    if not isinstance(layer, int) or isinstance(layer, bool) or not 1 <= layer <= n_layers:
        raise ModelFileError(f"{where} is damaged: parse layer {layer if isinstance(layer, int) else shown(layer)} "
                             f"out of range (it has layers 1 to {n_layers})")
    for name, rules, what in (("split", SPLIT_RULES, "split rule"), ("combine", COMBINE_RULES, "ensemble combination")):
        value = archive.get(name, rules[0])
        if not isinstance(value, str) or value not in rules:
            raise ModelFileError(f"{where} is damaged: unknown {what} {shown(value)}")
    lang = archive.get("lang", "")
    if not isinstance(lang, str) or len(lang) > 64:
        raise ModelFileError(f"{where} is damaged: its language is {shown(lang)}, not a language's name")
    weights = archive.get("weights")
    if weights is not None and not (isinstance(weights, list) and len(weights) == n_models
                                    and all(FIELD_TYPES["float"](w) and w >= 0 for w in weights) and max(weights) > 0):
        raise ModelFileError(f"{where} is damaged: its ensemble weights do not fit its {n_models} model(s) "
                             "(one finite, non-negative number a model, not all 0)")


def normalized_weights(weights) -> list[float]:
    """Ensemble weights divided by the largest: the same weighted average, and a sum that cannot overflow
    (1e308 and 1e308 would make every distance inf / inf, NaN)."""
    top = max(weights)
    return [float(w) / top for w in weights]


class _NoInitialization(TorchFunctionMode):
    """Skips torch.nn.init while a module is built for its shapes: on the meta device an initializer runs
    through torch._refs, whose first call imports torch._dynamo, more than a second of every start."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if getattr(func, "__module__", None) == "torch.nn.init":
            return args[0] if args else None
        return func(*args, **(kwargs or {}))


SIZE_FIELDS = ("vocab_size", "emb_size", "hidden_size", "n_layers", "chunk_size")


def check_declared_sizes(section: dict, where: str, layer_weight: str, config_class, build,
                         fields=SIZE_FIELDS) -> None:
    """The sizes a header declares against the tensors present, before any weight is allocated: the number
    of layers against the layers whose weights are there (`layer_weight`: a pattern naming one weight of
    layer k), then every weight's shape against those of the module `build(config)` would make, built on
    the meta device (shapes without storage). A header declaring 10^8 words or 10^6 layers over a small
    file is refused here instead of being allocated or built."""
    config, state = section.get("config"), section.get("state_dict")
    if not isinstance(config, dict) or not isinstance(state, dict) \
            or not all(isinstance(name, str) and isinstance(t, torch.Tensor) for name, t in state.items()):
        raise ModelFileError(f"{where} is damaged: it has no configuration or no weights")
    check_fields(config, config_class, where, "configuration")
    for name in fields:
        value = config.get(name)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ModelFileError(f"{where} is damaged: its {name} is {str(value)[:40]!r}, not a positive whole number")
    present = {m.group(1) for name in state if layer_weight and (m := re.fullmatch(layer_weight, name))}
    if layer_weight and config["n_layers"] != len(present):  # (None: a model without layers, the PCFG)
        raise ModelFileError(f"{where} is damaged: it declares {config['n_layers']} layers but holds the weights "
                             f"of {len(present)}")
    try:
        with torch.device("meta"), _NoInitialization():
            declared = {name: (tuple(t.shape), t.dtype) for name, t in build(config).state_dict().items()}
    except (TypeError, ValueError, ArithmeticError, AttributeError, RuntimeError) as e:
        reason = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise ModelFileError(f"{where} is damaged or incompatible: {reason[:160]}") from None
    for name in sorted(set(declared) | set(state)):
        if name not in state or name not in declared:
            how = "lacks the weight" if name not in state else "has a weight its configuration does not declare:"
            raise ModelFileError(f"{where} is damaged: it {how} {name[:60]!r}")
        shape, dtype = declared[name]
        if tuple(state[name].shape) != shape:
            shown_shape = " × ".join(map(str, state[name].shape))
            raise ModelFileError(f"{where} is damaged: its {name[:60]} is {shown_shape or 'a scalar'} but its "
                                 f"configuration ({', '.join(f'{k} {config[k]}' for k in fields)}) makes it "
                                 f"{' × '.join(map(str, shape))}")
        if state[name].is_complex() or state[name].is_floating_point() != dtype.is_floating_point:
            raise ModelFileError(f"{where} is damaged: its {name[:60]} holds {str(state[name].dtype)[6:]} values, "
                                 f"not {'real numbers' if dtype.is_floating_point else str(dtype)[6:]}")
