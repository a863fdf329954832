"""A model file's meta: the record of how it was made (data, options, validations, timings), shown by
`onlstm info` and read back by perplexity and by resumed runs. It comes from a file, so it is checked before
use: small enough to walk (check_meta_size), and every field read back of the type it is read as
(check_meta); a damaged or crafted file is a one-line "is damaged", never an error where a field is read."""
from __future__ import annotations

from onlstm_cli.errors import ModelFileError

MAX_META_VALUES = 200_000    # values in a meta dict, counted along every path through it
MAX_META_CHARS = 16 << 20    # characters of its strings, counted the same way


def check_meta_size(meta, where: str) -> None:
    """Meta is shown, copied and written out as JSON, so it must stay small when walked. Every path through it
    counts (a part the pickle shares is counted each time it is reached): a few kilobytes of nested references
    to one list cannot stand for 2^40 values, nor a list that contains itself for infinitely many."""
    values, chars, stack = 0, 0, [meta]
    while stack:
        value = stack.pop()
        values += 1
        if isinstance(value, (str, bytes)):
            chars += len(value)
        elif isinstance(value, dict):
            stack.extend(value.keys())
            stack.extend(value.values())
        elif isinstance(value, (list, tuple, set, frozenset)):
            stack.extend(value)
        if values > MAX_META_VALUES or chars > MAX_META_CHARS:
            raise ModelFileError(f"{where} is damaged: its metadata is larger than the {MAX_META_VALUES:,} values "
                                 f"and {MAX_META_CHARS:,} characters this onlstm reads")


# The meta fields onlstm reads back (info.py, perplexity, resuming), each None or of its type: a dict is a
# table of fields, [spec] a list of such items, {...: spec} a table whose every value is one. Meta of other
# types comes from a damaged or crafted file, and is refused as such rather than failing where it is read.
NUMBER = (int, float)
TRAIN_META = {"batch_size": int, "eval_batch_size": int, "world_size": int, "global_batch_size": int,
              "optimizer": str, "time_budget": NUMBER, "epochs": NUMBER}
LM_META = {"data": {"corpus": str, "valid": str, "train_tokens": int}, "train": TRAIN_META, "epochs": NUMBER,
           "valid_ppl": NUMBER, "seconds": NUMBER, "created": str, "onlstm_version": str,
           "history": [{"epoch": NUMBER, "valid_ppl": NUMBER, "seconds": NUMBER}]}
RECIPE_META = {"teachers": [{"seed": int, "valid_ppl": NUMBER, "epochs": NUMBER, "seconds": NUMBER}],
               "seeds": list, "votes": str, "time_budget": NUMBER, "lm_share": NUMBER,
               "stage_seconds": {...: NUMBER}}
SPAN_PARSER_META = {"teacher": (str, list), "corpus": str, "valid": str, "train": dict, "onlstm_version": str,
                    "teacher_agreement": [NUMBER], "right_branching": NUMBER, "left_branching": NUMBER,
                    "epochs": NUMBER,
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
            check_meta(item, spec[...], where, f"{name}.{key}")
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
