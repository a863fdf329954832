"""A model file's trees of gold sentences, scored: what `onlstm evaluate` reports for a model (its default
parser, and with all_layers every layer of its language model)."""
from __future__ import annotations

from pathlib import Path

from onlstm_cli.evaluation.metrics import evaluate as score
from onlstm_cli.fast import PARSE_KERNEL_CACHE, size_kernel_cache
from onlstm_cli.induction.distances import distances_of_words, sentence_distances
from onlstm_cli.induction.models import ModelCache, resolve_model
from onlstm_cli.trees import build_tree


def score_model(sentences: list, model: str | None, layer: int | None = None, split: str | None = None,
                all_layers: bool = False, device: str = "cpu", ensemble: bool = True, text: list | None = None
                ) -> tuple[dict, dict, tuple]:
    """(the report's fields about the model, its rows by name, (trees, distances) of the first row, for the
    report's example pictures). `model`: a path or bundled name, or None for the gold words' script."""
    size_kernel_cache(PARSE_KERNEL_CACHE)
    sample = " ".join(w for s in sentences[:50] for w in s.words)
    path = resolve_model(model, sample)
    loaded = ModelCache(device, ensemble).get(path)
    by_span_parser = loaded.span_parser is not None and layer is None
    layer = loaded.parse_layer if layer is None else layer
    layer_split = split or loaded.split
    fields = {"split": "symmetric" if by_span_parser else layer_split, "model": str(path),
              "layer": None if by_span_parser else layer, "valid_ppl": loaded.meta.get("valid_ppl")}
    if by_span_parser and all_layers:
        fields["layer_split"] = layer_split  # the language model's rows
    readings = [s.as_written() for s in sentences]  # the text as the model was trained on it
    normalized = [[loaded.tokenizer.normalize(t) for t in tokens] for tokens, _ in readings]
    per_layer = None
    if not by_span_parser or all_layers:
        per_layer = [[distances_of_words(d, starts) for d in layers] for layers, (_, starts) in
                     zip(sentence_distances(loaded, normalized, layer, all_layers=True), readings)]

    def layer_trees(k: int):
        return [build_tree(d[k - 1], s.words, layer_split) for d, s in zip(per_layer, sentences)]

    if text:
        from onlstm_cli.lm.perplexity import text_perplexity
        fields["perplexity"] = {str(p): round(text_perplexity(loaded, p), 2) for p in text}
    systems = {}
    if by_span_parser:
        distances = [distances_of_words(d, starts) for d, (_, starts) in
                     zip(sentence_distances(loaded, normalized), readings)]
        shown = ([build_tree(d, s.words, "symmetric") for d, s in zip(distances, sentences)], distances)
        systems["span parser (self-trained)"] = score(sentences, shown[0])
    else:
        shown = (layer_trees(layer), [d[layer - 1] for d in per_layer])
        systems[f"onlstm (layer {layer})"] = score(sentences, shown[0])
    if all_layers:
        for k in range(1, loaded.config.n_layers + 1):
            if by_span_parser or k != layer:
                systems[f"onlstm (layer {k})"] = score(sentences, layer_trees(k))
    return fields, systems, shown
