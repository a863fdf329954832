"""`onlstm info MODEL`: what a model file holds, from the file itself and its model card.

    from onlstm_cli.info import model_info, info_text
    report = model_info("en")      # a bundled name or a path: a dict of plain data (JSON as it is)
    print(info_text(report))       # the same as readable text

Every figure comes from the file (sizes, tokenizer, the training data and recipe its meta records, the
validation perplexity, the span parser) or from its model card, `<name>.md` beside it (models/en-ptb.md
for models/en-ptb.onlstm, written by scripts/model_card.py), whose evaluation tables give dev F1. The file
is read as `onlstm parse` reads it (modelfile.load_model: checked, no code run).
"""
from __future__ import annotations

import re
from pathlib import Path

from onlstm_cli.modelfile import load_model, validation_history


def model_info(model: str | Path) -> dict:
    """A report on a model file (a bundled name or a path); a bad name or file raises a one-line OnlstmError."""
    from onlstm_cli.induction.models import resolve_model
    path = resolve_model(str(model))
    loaded = load_model(path)
    meta = loaded.meta
    report = {"model": str(model), "path": str(path), "file_bytes": path.stat().st_size,
              "lang": loaded.lang, "tokenizer": loaded.tokenizer.to_dict(),
              "sizes": model_sizes(loaded), "parse_layer": loaded.parse_layer, "split": loaded.split,
              "data": meta.get("data"), "recipe": meta.get("train"), "epochs": meta.get("epochs"),
              "training_seconds": meta.get("seconds"), "created": meta.get("created"),
              "onlstm_version": meta.get("onlstm_version"),
              "valid_ppl": None if meta.get("valid_ppl") is None else round(float(meta["valid_ppl"]), 2),
              "validation_history": validation_history(meta)}
    if loaded.members:
        report["ensemble"] = {"models": 1 + len(loaded.members), "combine": loaded.combine,
                              "weights": loaded.weights,
                              "directions": ["right-to-left" if m.config.reverse else "left-to-right"
                                             for m in (loaded, *loaded.members)]}
    if loaded.span_parser is not None:
        report["span_parser"] = span_parser_info(loaded.span_parser)
    card = Path(path).with_suffix(".md")
    if card.is_file():
        report["model_card"] = card_figures(card)
    return report


def model_sizes(loaded) -> dict:
    config = loaded.config
    return {"parameters": sum(p.numel() for p in loaded.model.parameters()), "layers": config.n_layers,
            "embedding": config.emb_size, "hidden": config.hidden_size, "chunk": config.chunk_size,
            "vocabulary": len(loaded.vocab), "direction": "right-to-left" if config.reverse else "left-to-right",
            "master_input": config.master_input}


def span_parser_info(parser) -> dict:
    meta = parser.meta
    train = meta.get("train")
    return {"config": parser.config.to_dict(), "parameters": sum(p.numel() for p in parser.parameters()),
            "teachers": meta.get("teacher"), "corpus": meta.get("corpus"), "valid": meta.get("valid"),
            "epochs": meta.get("epochs"), "training_seconds": meta.get("seconds"), "valid_loss": meta.get("valid_loss"),
            "recipe": train,
            "self_training_recipe": meta.get("recipe"), "teacher_agreement": meta.get("teacher_agreement"),
            "right_branching": meta.get("right_branching", train.get("right_branching") if isinstance(train, dict)
                                        else None),  # before auto, the weight given was the weight used
            "left_branching": meta.get("left_branching", 0.0)}


_EVALUATION = re.compile(r"## `onlstm evaluate --gold ([^`]+)`(.*)")


def card_figures(card: Path) -> dict:
    """A model card's title and, for each of its `onlstm evaluate` sections, the first row of the table (the
    system that parses by default): sentence F1, corpus F1, F1 on sentences of ≤ 10 words."""
    lines = card.read_text(encoding="utf-8", errors="replace").splitlines()
    title = next((line[2:].strip() for line in lines if line.startswith("# ")), None)
    evaluations, section = [], None
    for line in lines:
        if line.startswith("## "):
            match = _EVALUATION.match(line)
            section = {"gold": match.group(1), "note": match.group(2).strip(" ()")} if match else None
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if section is None or not line.startswith("|") or len(cells) < 4 or not re.fullmatch(r"[\d.]+", cells[1]):
            continue  # not a row of figures (the header, its rule, text)
        section.update(system=cells[0], sentence_f1=float(cells[1]), corpus_f1=float(cells[2]),
                       f1_le_10_words=float(cells[3]) if re.fullmatch(r"[\d.]+", cells[3]) else None)
        evaluations.append(section)
        section = None  # the first row only
    return {"path": str(card), "title": title, "evaluations": evaluations}


def info_text(report: dict) -> str:
    """The report as readable lines, one subject a line."""
    sizes, tok = report["sizes"], report["tokenizer"]
    rows = [("model", f"{report['model']} ({report['path']}, {report['file_bytes'] / 1e6:.1f} MB)"),
            ("language", f"{report['lang'] or '-'}; tokenizer {tok.get('kind')}"
                         f"{''.join(f', {name}' for name, on in tokenizer_traits(tok) if on)}"),
            ("sizes", f"{sizes['parameters'] / 1e6:.2f} M parameters{' per model' if 'ensemble' in report else ''}: "
                      f"{sizes['layers']} layers, embedding {sizes['embedding']}, hidden {sizes['hidden']}, chunk "
                      f"{sizes['chunk']}; vocabulary {sizes['vocabulary']:,} words; reads {sizes['direction']}"),
            ("parsing", f"layer {report['parse_layer']} of {sizes['layers']}, {report['split']} split"
                        + ("; the span parser parses unless a layer is asked for" if "span_parser" in report else ""))]
    if "ensemble" in report:
        ensemble = report["ensemble"]
        rows.append(("ensemble", f"{ensemble['models']} models ({', '.join(ensemble['directions'])}), distances "
                                 f"combined by {ensemble['combine']}"
                                 + (f", weights {ensemble['weights']}" if ensemble["weights"] else "")))
    data = report["data"] or {}
    if data:
        tokens = f" ({data['train_tokens']:,} tokens)" if isinstance(data.get("train_tokens"), int) else ""
        rows.append(("trained on", f"{data.get('corpus')}{tokens}; validation {data.get('valid') or 'none'}"))
    rows += [("recipe", recipe_text(report.get("recipe"))),
             ("training", training_text(report)),
             ("valid ppl", "-" if report["valid_ppl"] is None else f"{report['valid_ppl']:.2f}")]
    if "span_parser" in report:
        rows.append(("span parser", span_parser_text(report["span_parser"])))
    if "model_card" in report:
        rows += card_rows(report["model_card"])
    width = max(len(name) for name, _ in rows)
    return "\n".join(f"{name.ljust(width)}  {value}" for name, value in rows)


def tokenizer_traits(tok: dict) -> list[tuple[str, bool]]:
    return [("lower-case", tok.get("lowercase")), ("numbers → N", tok.get("numbers_to_n")),
            ("NFKC", tok.get("nfkc")), ("CJK read a character at a time", tok.get("characters"))]


def recipe_text(recipe) -> str:
    if not isinstance(recipe, dict) or not recipe:
        return "-"
    return ", ".join(f"{name} {value}" for name, value in recipe.items() if value is not None)


def training_text(report: dict) -> str:
    parts = []
    if report.get("epochs") is not None:
        parts.append(f"{report['epochs']:g} epochs" if isinstance(report["epochs"], (int, float)) else
                     f"{report['epochs']} epochs")
    if isinstance(report.get("training_seconds"), (int, float)):
        parts.append(f"{report['training_seconds'] / 60:.0f} min")
    if report.get("created"):
        parts.append(f"written {report['created']}")
    if report.get("onlstm_version"):
        parts.append(f"onlstm {report['onlstm_version']}")
    return ", ".join(parts) or "-"


def span_parser_text(span: dict) -> str:
    config = span["config"]
    text = (f"BiLSTM {config['n_layers']} layers × {config['hidden_size']} a direction, embedding "
            f"{config['emb_size']}, span MLP {config['mlp_size']}: {span['parameters'] / 1e6:.2f} M parameters")
    if span.get("teachers"):
        teachers = span["teachers"] if isinstance(span["teachers"], list) else [span["teachers"]]
        text += f"; self-trained on the trees of {', '.join(map(str, teachers))}"
    agreement = span.get("teacher_agreement")
    if isinstance(agreement, list) and agreement:
        text += f" (each one's agreement with the others, validation text: {', '.join(map(str, agreement))})"
    for direction in ("right", "left"):
        weight = span.get(f"{direction}_branching")
        if isinstance(weight, (int, float)) and weight > 0:
            text += f", and a {direction}-branching tree of weight {weight:g}"
    if span.get("epochs") is not None:
        text += f", {span['epochs']} epoch{'' if span['epochs'] == 1 else 's'}"
        if isinstance(span.get("training_seconds"), (int, float)):  # the teachers' parse included
            text += f" in {span['training_seconds'] / 60:.1f} min"
    if span.get("valid_loss") is not None:
        text += f", validation loss {span['valid_loss']}"
    recipe = span.get("self_training_recipe")
    if isinstance(recipe, dict) and recipe.get("teachers"):  # made by `train --seeds K` (recipe.py)
        teachers = ", ".join(f"seed {t.get('seed')} (valid ppl {t.get('valid_ppl')}, {t.get('epochs')} epochs"
                             + ("; no vote: a failed run" if t.get("votes") is False else "") + ")"
                             for t in recipe["teachers"] if isinstance(t, dict))
        stages = ", ".join(f"{name.replace('_', ' ')} {seconds / 60:.1f} min"
                           for name, seconds in (recipe.get("stage_seconds") or {}).items()
                           if isinstance(seconds, (int, float)))
        text += f"\n             recipe (train --seeds {len(recipe['teachers'])}): {teachers}; votes: {recipe.get('votes')}"
        text += f"\n             stage times: {stages or '-'}"
    return text


def card_rows(card: dict) -> list[tuple[str, str]]:
    rows = [("model card", f"{card['path']}" + (f": {card['title']}" if card["title"] else ""))]
    for figures in card["evaluations"]:
        short = "" if figures["f1_le_10_words"] is None else f", ≤10 words {figures['f1_le_10_words']:.2f}"
        rows.append(("  F1", f"{figures['system']}: sentence {figures['sentence_f1']:.2f}, corpus "
                             f"{figures['corpus_f1']:.2f}{short} on {figures['gold']}"
                             + (f" ({figures['note']})" if figures["note"] else "")))
    return rows
