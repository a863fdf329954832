"""Write a model card (markdown) from a model file's metadata and `onlstm evaluate --json` reports.

    python scripts/model_card.py models/en-ptb.onlstm --title "English (PTB)" \
        --eval runs/en.dev.json --sample "The cat sat on the mat." > models/en-ptb.md

Every figure in the card comes from the model file or from the evaluation JSON given here.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from onlstm_cli.text.formats import to_bracket
from onlstm_cli.modelfile import load_model, validation_history
from onlstm_cli.induction.distances import parse_lines


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--title", required=True)
    ap.add_argument("--eval", action="append", default=[], help="onlstm evaluate --json output")
    ap.add_argument("--sample", action="append", default=[], help="sentences to show parsed")
    ap.add_argument("--note", action="append", default=[], help="extra lines for the card")
    args = ap.parse_args()

    loaded = load_model(args.model)
    meta, cfg = loaded.meta, loaded.config
    train = meta.get("train", {})
    data = meta.get("data", {})
    n_params = sum(p.numel() for p in loaded.model.parameters())
    size_mb = Path(args.model).stat().st_size / 1e6
    out = [f"# {args.title} — `{Path(args.model).name}`", ""]
    out += ["| | |", "|---|---|",
            f"| training data | `{data.get('corpus')}` ({data.get('train_tokens'):,} tokens with `<eos>`) |",
            f"| validation data | `{data.get('valid')}` |",
            f"| tokenizer | {loaded.tokenizer.kind}, lower-case {loaded.tokenizer.lowercase}, numbers → N "
            f"{loaded.tokenizer.numbers_to_n}, punctuation {'kept' if data.get('keep_punct') else 'dropped'}"
            f"{', CJK words read a character at a time' if loaded.tokenizer.characters else ''} |",
            f"| vocabulary | {len(loaded.vocab):,} (max {data.get('max_vocab')}, min freq {data.get('min_freq')}) |",
            f"| sizes | emb {cfg.emb_size}, hidden {cfg.hidden_size}, {cfg.n_layers} layers, chunk {cfg.chunk_size}, "
            f"{n_params / 1e6:.2f} M parameters{' per model' if loaded.members else ''}, file {size_mb:.1f} MB (float16) |",
            f"| regularisation | dropout {cfg.dropout}, dropout-h {cfg.dropout_h}, dropout-i {cfg.dropout_i}, "
            f"dropout-e {cfg.dropout_e}, weight-drop {cfg.weight_drop}; master input gate: {cfg.master_input} |",
            f"| optimiser | {train.get('optimizer')} lr {train.get('lr')}, batch {train.get('batch_size')}, "
            f"bptt {train.get('bptt')}, clip {train.get('clip')}, seed {train.get('seed')}, "
            f"{train.get('threads')} thread(s) |",
            f"| training | {meta.get('epochs')} epochs in {meta.get('seconds', 0) / 60:.0f} min (CPU) |",
            f"| validation perplexity | {meta.get('valid_ppl'):.2f} (the checkpoint with the best one is shipped) |",
            f"| parse layer, split rule | layer {loaded.parse_layer} of {cfg.n_layers}, {loaded.split} split |"]
    if loaded.members:
        parts = [loaded, *loaded.members]
        rule = {"mean": "averages their distances", "zscore": "averages their distances as standard scores "
                "per sentence", "rank": "averages their distances as ranks per sentence"}[loaded.combine]
        out.append(f"| ensemble | {len(parts)} models of these sizes, trained the same way with different seeds "
                   f"or directions; parsing {rule}: " + "; ".join(
                       f"{'right-to-left' if m.config.reverse else 'left-to-right'}, seed "
                       f"{m.meta.get('train', {}).get('seed')}, {m.meta.get('epochs')} epochs, valid ppl "
                       f"{m.meta.get('valid_ppl'):.2f}" for m in parts) +
                   " (perplexity figures are the first model's) |")
    elif cfg.reverse:
        out.append("| direction | right to left (trained on reversed sentences) |")
    if loaded.span_parser is not None:
        out += span_parser_rows(loaded.span_parser)
    out.append("")
    history = validation_history(meta)
    if history:
        out += ["Validation perplexity by epoch: " + ", ".join(f"{h['epoch']:g}: {h['valid_ppl']}" for h in history), ""]
    for path in args.eval:
        report = json.loads(Path(path).read_text())
        out += [f"## `onlstm evaluate --gold {report['gold']}` ({report['sentences']} sentences, "
                f"{report['split']} split{' for the span parser, ' + report['layer_split'] + ' for the layers' if 'layer_split' in report else ''})", "",
                "| system | sentence F1 | corpus F1 | F1 ≤10 words | NP | VP | PP | ADJP | SBAR |",
                "|---|---|---|---|---|---|---|---|---|"]
        for name, r in report["systems"].items():
            rec = [f"{r['label_recall'][x]['recall']:.1f}" if x in r["label_recall"] else "-"
                   for x in ("NP", "VP", "PP", "ADJP", "SBAR")]
            short = f"{r['sentence_f1_len_le_10']:.2f}" if r["sentences_len_le_10"] else "-"
            out.append(f"| {name} | {r['sentence_f1']:.2f} | {r['corpus_f1']:.2f} | {short} | " + " | ".join(rec) + " |")
        ub = report["upper_bound"]
        out += [f"| best binary trees (upper bound) | {ub['sentence_f1']:.2f} | {ub['corpus_f1']:.2f} | | | | | | |",
                "", "(NP … SBAR: recall of gold spans with that label, %.)", ""]
    if args.sample:
        out += ["## Sample trees", "", "```"]
        for sentence in parse_lines(args.sample, model=args.model):
            out.append(to_bracket(sentence.tree))
        out += ["```", ""]
    out += args.note
    print("\n".join(out))


def span_parser_rows(parser) -> list[str]:
    """The rows of a self-trained file's span parser (onlstm_cli/span/model.py, student/train.py)."""
    c, meta = parser.config, parser.meta
    train = meta.get("train", {})
    teachers = meta.get("teacher")
    teachers = teachers if isinstance(teachers, list) else [teachers]
    n_params = sum(p.numel() for p in parser.parameters())
    losses = ", ".join(f"{h['epoch']}: {h['valid_loss']}" for h in meta.get("history", []))
    return [f"| span parser (parses by default) | BiLSTM {c.n_layers} layers × {c.hidden_size} a direction, "
            f"emb {c.emb_size}, span MLP {c.mlp_size}, dropout {c.dropout}, {n_params / 1e6:.2f} M parameters; "
            "CKY over span scores; `--layer K` parses with the language model above instead |",
            f"| self-training | on the trees of {', '.join(f'`{t}`' for t in teachers)} over `{meta.get('corpus')}`"
            + (f" (a span’s target: the share of the votes that have it{voters(train, meta)})" if len(teachers) > 1
               else "") + "; "
            f"Adam lr {train.get('lr')}, {train.get('batch_size')} sentences a step, seed {train.get('seed')}, "
            f"epoch {meta.get('epochs')} kept (lowest loss on the teachers' trees of `{meta.get('valid')}`; by epoch: "
            f"{losses}) |"]


def voters(train: dict, meta: dict) -> str:
    """Who votes beside the teachers' parse layers (self_training.voting_layers), as the card says it."""
    layers = train.get("teacher_layers") or []
    extra = train.get("extra_layers", train.get("layers_above")) or 0  # layers_above: files written before
    said = (f"; each teacher votes with its layers {' and '.join(map(str, layers))}" if layers else
            f"; each teacher votes with its parse layer and the {'layer' if extra == 1 else f'{extra} layers'} next "
            "to it (above it, below where it has too few above)" if extra else "")
    weight = meta.get("right_branching")
    if isinstance(weight, (int, float)) and weight > 0:
        said += f"; a right-branching tree votes with weight {weight:g}"
    recipe = meta.get("recipe") or {}
    for teacher in recipe.get("teachers") or []:  # train --seeds leaves a failed run out (recipe.voting_teachers)
        if isinstance(teacher, dict) and teacher.get("votes") is False:
            said += (f"; the recipe's language model of seed {teacher.get('seed')} did not vote (validation "
                     f"perplexity {teacher.get('valid_ppl')}, a failed run by `--max-ppl-ratio`)")
    return said


if __name__ == "__main__":
    main()
