"""A model file's trees of gold sentences, scored: what `onlstm evaluate` reports for a model (its default
parser, and with all_layers every layer of its language model)."""
from __future__ import annotations

from pathlib import Path

from onlstm_cli.evaluation.metrics import evaluate as score
from onlstm_cli.fast import PARSE_KERNEL_CACHE, size_kernel_cache
from onlstm_cli.induction.distances import distances_of_words, sentence_distances
from onlstm_cli.induction.models import ModelCache, resolve_model
from onlstm_cli.text.treebanks import keep_only
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
    # The text as the model was trained on it, and as `parse` feeds it: punctuation only where it knows it.
    readings = [s.as_read(lambda token: loaded.tokenizer.normalize(token) in loaded.vocab) for s in sentences]
    normalized = [[loaded.tokenizer.normalize(t) for t in tokens] for tokens, _, _ in readings]
    per_layer = None
    if not by_span_parser or all_layers:
        per_layer = [[distances_of_words(d, starts) for d in layers] for layers, (_, starts, _) in
                     zip(sentence_distances(loaded, normalized, layer, all_layers=True), readings)]

    def trees_of(distances: list, split: str):
        return [scored_tree(d, s, is_word, split) for d, s, (_, _, is_word) in zip(distances, sentences, readings)]

    def layer_trees(k: int):
        return trees_of([d[k - 1] for d in per_layer], layer_split)

    if text:
        from onlstm_cli.lm.perplexity import text_perplexity
        fields["perplexity"] = {str(p): round(text_perplexity(loaded, p), 2) for p in text}
    systems = {}
    if by_span_parser:
        distances = [distances_of_words(d, starts) for d, (_, starts, _) in
                     zip(sentence_distances(loaded, normalized), readings)]
        shown = (trees_of(distances, "symmetric"), words_only(distances, readings))
        systems["span parser (self-trained)"] = score(sentences, shown[0])
    else:
        shown = (layer_trees(layer), words_only([d[layer - 1] for d in per_layer], readings))
        systems[f"onlstm (layer {layer})"] = score(sentences, shown[0])
    if all_layers:
        for k in range(1, loaded.config.n_layers + 1):
            if by_span_parser or k != layer:
                systems[f"onlstm (layer {k})"] = score(sentences, layer_trees(k))
    return fields, systems, shown


def scored_tree(distances: list[float], sentence, is_word: list[bool], split: str):
    """The tree over the leaves the model read, with the leaves that are not kept words (punctuation) dropped."""
    if all(is_word):
        return build_tree(distances, sentence.words, split)
    words = iter(sentence.words)
    leaves = [next(words) if kept else "" for kept in is_word]
    return keep_only(build_tree(distances, leaves, split), {k for k, kept in enumerate(is_word) if kept}, leaves)


def words_only(distances: list, readings: list) -> list:
    """Each sentence's distances of its kept words (the report's pictures are of those)."""
    return [[x for x, kept in zip(d, is_word) if kept] for d, (_, _, is_word) in zip(distances, readings)]
