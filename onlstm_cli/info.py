"""`onlstm info MODEL`: what a model file holds, from the file itself and its model card.

    from onlstm_cli.info import model_info, info_text
    report = model_info("en")      # a bundled name or a path: a dict of plain data (JSON as it is)
    print(info_text(report))       # the same as readable text

Every figure comes from the file (sizes, tokenizer, the training data and recipe its meta records, the
validation perplexity, the span parser) or from its model card, `<name>.md` beside it (models/en-ptb.md
for models/en-ptb.onlstm, written by scripts/model_card.py), whose evaluation tables give dev F1. The file
is read safely as `onlstm parse` reads it (model_archive.read_archive: no code run, every weight within the
file's bytes; every field checked), a language model's networks only as far as their sizes (read_model).
Paths the file records (its training text, a span parser's teachers) are shown as recorded, and those not
found here are marked: they name files of the machine the model was made on.
"""
from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path

from onlstm_cli.console import count, duration, printable
from onlstm_cli.modelfile import load_model, validation_history
from onlstm_cli.training.student.direction import no_branching_tree_text
from onlstm_cli.training.student.left_out import no_vote_text

NOT_HERE = "†"  # after a recorded path not found here; explained once, under the report


def model_info(model: str | Path) -> dict:
    """A report on a model file (a bundled name or a path); a bad name or file raises a one-line OnlstmError."""
    from onlstm_cli.induction.models import resolve_model
    path = resolve_model(str(model))
    loaded = read_model(path)
    meta = loaded.meta
    report = {"model": str(model), "path": str(path), "file_bytes": path.stat().st_size,
              "lang": loaded.lang, "tokenizer": loaded.tokenizer.to_dict(),
              "sizes": model_sizes(loaded), "parse_layer": loaded.parse_layer, "split": loaded.split,
              "punctuation": loaded.punctuation,
              "data": meta.get("data"), "recipe": meta.get("train"), "epochs": meta.get("epochs"),
              "training_seconds": meta.get("seconds"), "created": meta.get("created"),
              "onlstm_version": meta.get("onlstm_version"),
              "valid_ppl": None if meta.get("valid_ppl") is None else round(float(meta["valid_ppl"]), 2),
              "validation_history": validation_history(meta), "student_check": meta.get("student_check"),
              "self_training_recipe": meta.get("self_training_recipe")}  # a consensus parser's, from its student
    if loaded.members:
        report["ensemble"] = {"models": 1 + len(loaded.members), "combine": loaded.combine, "weights": loaded.weights,
                              "directions": ["right-to-left" if m.config.reverse else "left-to-right"
                                             for m in (loaded, *loaded.members)],
                              "valid_ppl": [m.meta.get("valid_ppl") for m in (loaded, *loaded.members)]}
    if loaded.span_parser is not None:
        report["span_parser"] = span_parser_info(loaded.span_parser)
    if loaded.pcfg is not None:
        report["pcfg"] = {"config": loaded.pcfg.config.to_dict(),
                          "parameters": sum(p.numel() for p in loaded.pcfg.parameters()),
                          "left_out": (meta.get("data") or {}).get("left_out"), "focus": meta.get("focus")}
    card = Path(path).with_suffix(".md")
    if card.is_file():
        report["model_card"] = card_figures(card)
    report["paths_not_found"] = [p for p in recorded_paths(report) if not os.path.exists(p)]  # False on any error
    return report


def read_model(path: Path):
    """The file as info needs it. A language model's file (ensembles and self-trained files included: the large
    ones) is checked field by field, each weight's shape against its configuration, as load_model checks it
    before it builds (modelfile.check_model_section), and its networks are built on the meta device (shapes
    without storage): its weights are neither converted nor copied, nor checked for NaN (parse does that). A
    span parser alone or a PCFG, small files, are read whole by their loaders."""
    import torch

    from onlstm_cli.errors import ModelFileError
    from onlstm_cli.model_meta import _NoInitialization
    from onlstm_cli.modelfile import MODEL_KINDS, check_model_section, ensemble_members, read_archive
    archive, where = read_archive(path), str(path)
    kind = archive.get("kind", "onlstm")
    if not (isinstance(kind, str) and kind == "onlstm"):  # (a kind this onlstm does not know: load_model says so)
        return MODEL_KINDS[kind](archive, where) if isinstance(kind, str) and kind in MODEL_KINDS else load_model(path)
    members = ensemble_members(archive, where)
    check_model_section(archive, where, 1 + len(members))
    for k, member in enumerate(members):
        check_model_section({**member, "parse_layer": archive["parse_layer"], "split": archive.get("split", "paper")},
                            f"{where} (member {k + 1})")
    try:
        with torch.device("meta"), _NoInitialization():  # (an initializer on meta imports torch._dynamo: seconds)
            loaded, *others = [sized_model(section, archive, where) for section in (archive, *members)]
    except (KeyError, TypeError, ValueError, RuntimeError, ArithmeticError, AttributeError) as e:
        reason = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise ModelFileError(f"{where} is damaged or incompatible: {reason[:160]}") from None
    loaded.members = others
    return loaded


def sized_model(section: dict, archive: dict, where: str):
    """One language model of a checked archive (with its span parser), built where torch builds (read_model: on
    the meta device), its weights not loaded."""
    from onlstm_cli.lm.model import ModelConfig, ONLSTMLanguageModel
    from onlstm_cli.modelfile import LoadedModel, normalized_weights
    from onlstm_cli.text.tokenizers import Tokenizer
    from onlstm_cli.text.vocab import Vocabulary
    weights = archive.get("weights")
    loaded = LoadedModel(ONLSTMLanguageModel(ModelConfig(**section["config"])), Vocabulary(section["vocab"][2:]),
                         Tokenizer(**section["tokenizer"]), archive.get("lang", ""), archive["parse_layer"],
                         dict(section.get("meta") or {}), where, archive.get("split", "paper"),
                         combine=archive.get("combine", "mean"),
                         weights=None if weights is None else normalized_weights(weights))
    if section.get("span_parser") is not None:
        from onlstm_cli.config import SpanParserConfig
        from onlstm_cli.span.model import SpanParser
        loaded.span_parser = SpanParser(SpanParserConfig(**section["span_parser"]["config"]))
        loaded.span_parser.meta = dict(section["span_parser"].get("meta") or {})
    return loaded


def recorded_paths(report: dict) -> list[str]:
    """The paths the file records, as recorded: its training text and validation, a span parser's (or a focused
    PCFG's) teachers and text (written where the model was made; relative ones from the folder `train` ran in)."""
    data, span = report.get("data") or {}, report.get("span_parser") or {}
    teachers = span.get("teachers") if isinstance(span.get("teachers"), list) else [span.get("teachers")]
    focus = (report.get("pcfg") or {}).get("focus") or {}  # a parse-focused PCFG's teachers
    paths = [data.get("corpus"), data.get("valid"), *teachers, span.get("corpus"), span.get("valid"),
             *(focus.get("teachers") if isinstance(focus.get("teachers"), list) else [])]
    return list(dict.fromkeys(p for p in paths if isinstance(p, str) and p))


def shown_path(path, not_found=()) -> str:
    """A recorded path as recorded, marked (NOT_HERE) where it is one of `not_found`."""
    return f"{path} {NOT_HERE}" if isinstance(path, str) and path in not_found else str(path)


def model_sizes(loaded) -> dict:
    if loaded.model is None:  # a span parser alone (a student no language model hosted)
        return {"vocabulary": len(loaded.vocab), **({"reads": loaded.pcfg.config.read_by()} if loaded.pcfg else {})}
    config = loaded.config
    return {"parameters": sum(p.numel() for p in loaded.model.parameters()), "layers": config.n_layers,
            "embedding": config.emb_size, "hidden": config.hidden_size, "chunk": config.chunk_size,
            "vocabulary": len(loaded.vocab), "direction": "right-to-left" if config.reverse else "left-to-right",
            "master_input": config.master_input,
            **({"word_rows": config.output_size, "ngram_rows": config.unit_buckets} if config.unit_buckets else {})}


def span_parser_info(parser) -> dict:
    meta = parser.meta
    train = meta.get("train")
    return {"config": parser.config.to_dict(), "parameters": sum(p.numel() for p in parser.parameters()),
            "teachers": meta.get("teacher"), "corpus": meta.get("corpus"), "valid": meta.get("valid"),
            "epochs": meta.get("epochs"), "training_seconds": meta.get("seconds"), "valid_loss": meta.get("valid_loss"),
            "teachers_parse_seconds": meta.get("parse_seconds"), "recipe": train,
            "self_training_recipe": meta.get("recipe"), "teacher_agreement": meta.get("teacher_agreement"),
            "right_branching": meta.get("right_branching", train.get("right_branching") if isinstance(train, dict)
                                        else None),  # before auto, the weight given was the weight used
            "left_branching": meta.get("left_branching", 0.0), "lexical_agreement": meta.get("lexical_agreement")}


_EVALUATION = re.compile(r"## `onlstm evaluate --gold ([^`]+)`(.*)")
_FIGURE = re.compile(r"\d+(\.\d+)?")  # a cell float() reads: "1.2.3" is text, not a figure


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
        if section is None or not line.startswith("|") or len(cells) < 4 or not _FIGURE.fullmatch(cells[1]):
            continue  # not a row of figures (the header, its rule, text)
        if not _FIGURE.fullmatch(cells[2]):
            continue
        section.update(system=cells[0], sentence_f1=float(cells[1]), corpus_f1=float(cells[2]),
                       f1_le_10_words=float(cells[3]) if _FIGURE.fullmatch(cells[3]) else None)
        evaluations.append(section)
        section = None  # the first row only
    return {"path": str(card), "title": title, "evaluations": evaluations}


def info_text(report: dict) -> str:
    """The report as a model card: a heading, then a section a subject (the model, how its language model
    was trained, its span parser, its card's figures), one row a fact. Every string from the file is shown
    printable (console.printable): a crafted file cannot act on the terminal."""
    sections = [("model", model_rows(report))]
    if "layers" in report["sizes"]:  # a span parser alone has no language model's training to show
        sections.append(("language model training" + (" (the first of the ensemble's models)" if "ensemble" in report
                                                      else ""), lm_training_rows(report)))
    elif "pcfg" in report:
        sections.append(("PCFG training", lm_training_rows(report)))
    if "span_parser" in report:
        sections.append(("span parser", span_parser_rows(report["span_parser"], report.get("paths_not_found", ()))))
    elif isinstance(report.get("student_check"), dict):  # the consensus parser a recipe shipped for its student
        recipe = report.get("self_training_recipe")
        sections.append(("recipe", (recipe_rows(recipe, recipe, checked=False) if isinstance(recipe, dict) else [])
                         + [("shipped", student_check_text(report["student_check"]))]))
    if "model_card" in report:
        sections.append((f"model card ({report['model_card']['path']})", card_rows(report["model_card"])))
    width = max(len(name) for _, rows in sections for name, _ in rows)
    heading = f"{report['model']}: {report['path']}, {report['file_bytes'] / 1e6:.1f} MB"
    title = (report.get("model_card") or {}).get("title")
    lines = [heading] + ([title] if title else [])
    for name, rows in sections:
        lines += ["", name[:1].upper() + name[1:]] + [f"  {row.ljust(width)}  {value}" for row, value in rows]
    if any(NOT_HERE in value for _, rows in sections for _, value in rows):
        lines += ["", f"{NOT_HERE} recorded where the model was made; not on this machine (a relative path: not "
                      "found from the current folder)"]
    return "\n".join(printable(line) for line in lines)


def report_json(report: dict) -> str:
    """The report as JSON: a number that is not finite (a NaN in a file's metadata) is null, as JSON has no
    NaN; anything else the report holds is plain data (model_meta.py checked the file's)."""
    def finite(value):
        if isinstance(value, float) and not math.isfinite(value):
            return None
        if isinstance(value, dict):
            return {key: finite(item) for key, item in value.items()}
        return [finite(item) for item in value] if isinstance(value, (list, tuple)) else value
    return json.dumps(finite(report), ensure_ascii=False, indent=2, allow_nan=False, default=str)


def ngram_text(sizes: dict) -> str:
    if "ngram_rows" not in sizes:
        return ""
    return (f" ({sizes['word_rows']:,} with their own row), each also read by its character n-grams "
            f"({sizes['ngram_rows']:,} rows), so that no word is unknown")


def model_rows(report: dict) -> list[tuple[str, str]]:
    sizes, tok = report["sizes"], report["tokenizer"]
    language = ("language", f"{report['lang'] or '-'}; tokenizer {tok.get('kind')}"
                            f"{''.join(f', {name}' for name, on in tokenizer_traits(tok) if on)}")
    if "pcfg" in report:
        c = report["pcfg"]["config"]
        return [language, ("sizes", f"a neural PCFG, {report['pcfg']['parameters'] / 1e6:.2f} M parameters: "
                                    f"{c['nonterminals']} nonterminals, {c['preterminals']} preterminals, binary "
                                    f"rules of rank {c['rank']}; vocabulary {sizes['vocabulary']:,} words{sizes['reads']}"),
                ("parsing", "its MBR trees (the largest sum of span marginals); -f json gives each sentence's "
                            "log-likelihood" + ("; cut at punctuation marks first"
                                                if report.get("punctuation") == "boundaries" else ""))] \
            + focus_rows(report["pcfg"].get("focus"), report.get("paths_not_found", ()))
    if "layers" not in sizes:
        return [language, ("sizes", f"a span parser without a language model; vocabulary {sizes['vocabulary']:,} "
                                    "words"),
                ("parsing", "the span parser's trees" + ("; cut at punctuation marks first"
                                                         if report.get("punctuation") == "boundaries" else ""))]
    rows = [language,
            ("sizes", f"{sizes['parameters'] / 1e6:.2f} M parameters{' per model' if 'ensemble' in report else ''}: "
                      f"{sizes['layers']} layers, embedding {sizes['embedding']}, hidden {sizes['hidden']}, chunk "
                      f"{sizes['chunk']}; vocabulary {sizes['vocabulary']:,} words{ngram_text(sizes)}; reads "
                      f"{sizes['direction']}"),
            ("parsing", f"layer {report['parse_layer']} of {sizes['layers']}, {report['split']} split"
                        + ("; the span parser parses unless a layer is asked for" if "span_parser" in report else "")
                        + ("; cut at punctuation marks first" if report.get("punctuation") == "boundaries" else ""))]
    if "ensemble" in report:
        ensemble = report["ensemble"]
        rows.append(("ensemble", f"{ensemble['models']} models ({', '.join(ensemble['directions'])}), distances "
                                 f"combined by {ensemble['combine']}"
                                 + (f", weights {ensemble['weights']}" if ensemble["weights"] else "")
                                 + "; validation perplexity of each: " + ", ".join(
                                     "-" if ppl is None else f"{ppl:.2f}" for ppl in ensemble.get("valid_ppl", []))))
    return rows


def lm_training_rows(report: dict) -> list[tuple[str, str]]:
    """Its data, its options as words, what the run did (epochs done, time) and its validation perplexity."""
    data, not_found = report["data"] or {}, report.get("paths_not_found", ())
    tokens = f" ({data['train_tokens']:,} tokens)" if isinstance(data.get("train_tokens"), int) else ""
    took = f" in {duration(report['training_seconds'])}" if isinstance(report.get("training_seconds"), (int, float)) \
        else ""
    done = [f"{count(report.get('epochs'), 'epoch')}{took}" if report.get("epochs") is not None else ""]
    done += [f"written {report['created']}" if report.get("created") else "",
             f"by onlstm {report['onlstm_version']}" if report.get("onlstm_version") else ""]
    return [("data", f"{shown_path(data.get('corpus') or '-', not_found)}{tokens}; validation "
                     f"{shown_path(data.get('valid') or 'none', not_found)}"),
            ("options", options_text(report.get("recipe"))),
            ("trained", ", ".join(part for part in done if part) or "-"),
            ("valid ppl", "-" if report["valid_ppl"] is None else f"{report['valid_ppl']:.2f}"
             + (f" (the training text's word frequencies alone: {data['unigram_ppl']:.2f})"
                if isinstance(data.get("unigram_ppl"), (int, float)) else ""))]


def focus_rows(focus, not_found) -> list[tuple[str, str]]:
    """A parse-focused PCFG's teachers and branching voter (training/student/focus.py), where it was one."""
    if not isinstance(focus, dict) or not isinstance(focus.get("teachers"), list):
        return []
    voters = [f"a {side}-branching tree of weight {focus[f'{side}_branching']:.3g}" for side in ("right", "left")
              if isinstance(focus.get(f"{side}_branching"), (int, float)) and focus[f"{side}_branching"] > 0
              and focus.get("voter_spans", True) is not False]  # a file from before the voter's tree left the focus
    cut = ", each cut at its line's punctuation marks" if focus.get("cut_at_marks") is True else ""
    whose = "the span parsers' trees of " if focus.get("span_parsers") is True else "the trees of "
    return [("focused", "each sentence's likelihood over " + whose
             + ", ".join([shown_path(str(t), not_found) for t in focus["teachers"]] + voters) + cut)]


def tokenizer_traits(tok: dict) -> list[tuple[str, bool]]:
    return [("lower-case", tok.get("lowercase")), ("numbers → N", tok.get("numbers_to_n")),
            ("NFKC", tok.get("nfkc")), ("CJK read a character at a time", tok.get("characters"))]


# A training run's options (TrainConfig, SelfTrainConfig) in words; a value False, None or empty is left out,
# True shows the words alone. Options not named here show as "name value".
OPTION_WORDS = {
    "epochs": "at most {} epochs", "time_budget": "a time budget of {}", "batch_size": "batches of {}",
    "global_batch_size": "a global batch of {}", "world_size": "{} processes", "bptt": "windows of about {} tokens",
    "optimizer": "optimizer {}", "lr": "learning rate {}", "weight_decay": "weight decay {}",
    "clip": "gradients clipped at norm {}", "nonmono": "NT-ASGD averaging after {} validations without a gain",
    "max_bad_steps": "stopped after {} steps in a row without a finite loss", "seed": "seed {}",
    "device": "device {}", "threads": "threads: {}", "eval_batch_size": "validation batches of {}",
    "checkpoint_every": "a checkpoint every {}", "loss_log": "losses logged to {}",
    "max_len": "sentences of at most {} words", "patience": "stopped after {} epochs without a better validation",
    "right_branching": "a right-branching voter of weight {}", "span_parser_teachers": "a second round",
    "teacher_layers": "teachers' layers {}", "layers_above": "{} layer(s) above each teacher's parse layer vote",
    "targets": "targets: {}", "units": "words read by: {}",
    "average_steps": "validated and kept as the moving average of its weights over about {} steps"}
DURATION_OPTIONS = ("time_budget", "checkpoint_every")


def options_text(options) -> str:
    if not isinstance(options, dict) or not options:
        return "-"
    left_out = {"world_size", "global_batch_size"} if options.get("world_size") in (None, 1) else set()
    if options.get("optimizer") != "ntasgd":
        left_out.add("nonmono")  # one process: its batch is the global one; only NT-ASGD averages
    if not options.get("average_steps"):
        left_out.add("average_steps")  # 0: the weights as trained
    options = {k: v for k, v in options.items() if k not in left_out}
    words = []
    for name, value in options.items():
        if value is None or value is False or value == [] or value == ():
            continue
        if name in DURATION_OPTIONS and isinstance(value, (int, float)):
            value = duration(value)
        elif isinstance(value, (list, tuple)):
            value = ", ".join(map(str, value))
        words.append(option_words(name, value))
    return "; ".join(words) or "-"


def option_words(name: str, value) -> str:
    """One option in words: its OPTION_WORDS form with the value in place of {} (the words alone for True).
    The name comes from the file, so it is never a format string: "{:>300000000}" stays those characters."""
    before, _, after = OPTION_WORDS.get(name, name.replace("_", " ") + " {}").partition("{}")
    return (before + after).strip() if value is True else f"{before}{value}{after}"


def span_parser_rows(span: dict, not_found=()) -> list[tuple[str, str]]:
    """Its network, teachers (their paths marked where `not_found`), options, training and recipe."""
    config = span["config"]
    rows = [("network", f"BiLSTM {config['n_layers']} layers × {config['hidden_size']} a direction, embedding "
                        f"{config['emb_size']}, span MLP {config['mlp_size']}: {span['parameters'] / 1e6:.2f} M "
                        "parameters"
                        + (f"; every word also read by its character n-grams ({config['unit_buckets']:,} rows)"
                           if config.get("unit_buckets") else ""))]
    if span.get("teachers"):
        teachers = span["teachers"] if isinstance(span["teachers"], list) else [span["teachers"]]
        text = f"self-trained on the trees of {', '.join(shown_path(t, not_found) for t in teachers)}"
        agreement = span.get("teacher_agreement")
        if isinstance(agreement, list) and agreement:
            text += f" (each one's agreement with the others, validation text: {', '.join(map(str, agreement))})"
        for direction in ("right", "left"):
            weight = span.get(f"{direction}_branching")
            if isinstance(weight, (int, float)) and weight > 0:
                text += f", and a {direction}-branching tree of weight {weight:g}"
        rows.append(("teachers", text + no_branching_tree_text(span.get("lexical_agreement"))))
    rows.append(("options", options_text(span.get("recipe"))))
    if span.get("epochs") is not None:
        took = f" in {span['training_seconds'] / 60:.1f} min" \
            if isinstance(span.get("training_seconds"), (int, float)) else ""  # the teachers' parse included
        loss = f", validation loss {span['valid_loss']}" if span.get("valid_loss") is not None else ""
        rows.append(("trained", f"{count(span['epochs'], 'epoch')}{took}{loss}"))
    recipe = span.get("self_training_recipe")
    if isinstance(recipe, dict):
        rows += recipe_rows(recipe, span)
    return rows


def recipe_rows(recipe: dict, span: dict, checked: bool = True) -> list[tuple[str, str]]:
    """What `train --seeds K` (recipe/runner.py) recorded: its teachers, votes, stage times (`span`: the span
    parser's times), the student check (`checked`) and the shipped parser's branching agreement."""
    if not recipe.get("teachers"):
        return []
    teachers = ", ".join(teacher_text(t) for t in recipe["teachers"] if isinstance(t, dict))
    seeds = recipe.get("seeds") if isinstance(recipe.get("seeds"), list) else recipe["teachers"]
    rows = [("made by", f"recipe (train --seeds {len(seeds)}): {teachers}"),
            ("votes", str(recipe.get("votes") or "-")), ("times", f"stage times: {stage_times(recipe, span)}")]
    first = recipe.get("first_round")  # the span parser whose trees taught a second round (recipe/second_round.py)
    if isinstance(first, dict):
        rows.insert(1, ("rounds", f"a second round, on the first span parser's trees ({first.get('path')}, "
                                  f"{count(first.get('epochs'), 'epoch')}, validation loss {first.get('valid_loss')})"))
    if checked and isinstance(recipe.get("student_check"), dict):
        rows.append(("checked", student_check_text(recipe["student_check"])))
    shapes = recipe.get("branching_agreement")
    if isinstance(shapes, dict) and shapes:
        rows.append(("branching", "its trees of the validation text agree " + ", ".join(
            f"{figure(value)} with {side}-branching trees" for side, value in shapes.items())))
    return rows


def figure(value) -> str:
    return f"{value:.1f}" if isinstance(value, (int, float)) else str(value)


def student_check_text(check: dict) -> str:
    """The recipe's check of its student against its teachers' consensus (training/student/check.py)."""
    from onlstm_cli.training.student.check import best_teacher_text  # the recipe's own words for it
    text = (f"on the validation text, the student agrees {figure(check.get('student'))} with its teachers' consensus, "
            f"the teachers {figure(check.get('teachers'))} (with each other {figure(check.get('mutual'))}){best_teacher_text(check)}")
    if check.get("consensus_parser") is not None:
        text += (f"; the consensus parser {figure(check.get('consensus_parser'))}: the recipe shipped the "
                 f"{check.get('shipped')}")
    return text


def teacher_text(teacher: dict) -> str:
    """One teacher of a recipe: its family (where not an ON-LSTM), seed, health and epochs."""
    family = str(teacher.get("family") or "onlstm")
    ppl = f"valid ppl {teacher.get('valid_ppl')}" if "valid_ppl" in teacher else f"health {teacher.get('health')}"
    health = ppl if family == "onlstm" else f"{family}, {ppl}"
    return (f"seed {teacher.get('seed')} ({health}, {count(teacher.get('epochs'), 'epoch')}"
            + ("" if teacher.get("votes") is not False else no_vote_text(teacher)) + ")")


def stage_times(recipe: dict, span: dict) -> str:
    """The recipe's stages, each with its time: its language models (the record), then the teachers' parse and
    the span parser's training (the span parser's own meta: the record is written before they run)."""
    def timed(seconds) -> str:
        return duration(seconds) if isinstance(seconds, (int, float)) else "not recorded"
    lms = (recipe.get("stage_seconds") or {}).get("language_models")
    total, parse = span.get("training_seconds"), span.get("teachers_parse_seconds")
    stages = [f"language models {timed(lms)}"]
    if isinstance(total, (int, float)) and isinstance(parse, (int, float)):
        stages += [f"the teachers' parse {timed(parse)}", f"the span parser {timed(total - parse)}"]
    else:  # a file from before the parse was timed apart
        stages.append(f"the teachers' parse and the span parser {timed(total)} together")
    return ", ".join(stages)


def card_rows(card: dict) -> list[tuple[str, str]]:
    """Each evaluation of the card (its title heads the report): the default parser's F1 on its gold file."""
    rows = []
    for figures in card["evaluations"]:
        short = "" if figures["f1_le_10_words"] is None else f", ≤10 words {figures['f1_le_10_words']:.2f}"
        rows.append(("F1", f"{figures['system']}: sentence {figures['sentence_f1']:.2f}, corpus "
                           f"{figures['corpus_f1']:.2f}{short} on {figures['gold']}"
                           + (f" ({figures['note']})" if figures["note"] else "")))
    return rows or [("F1", "-")]
