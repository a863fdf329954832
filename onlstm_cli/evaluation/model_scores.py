"""A model file's trees of gold sentences, scored: what `onlstm evaluate` reports for a model (its default
parser, and with all_layers every layer of its language model)."""
from __future__ import annotations

from onlstm_cli.evaluation.metrics import BASELINE_ROWS, CUT_BASELINE_ROWS, evaluate as score
from onlstm_cli.fast import PARSE_KERNEL_CACHE, size_kernel_cache
from onlstm_cli.induction.distances import distances_of_words, sentence_distances
from onlstm_cli.induction.models import ModelCache, resolve_model
from onlstm_cli.text.treebanks import keep_only
from onlstm_cli.text.tokenizers import after_marks
from onlstm_cli.trees import baseline_trees, build_tree, punctuation_first


def score_model(sentences: list, model: str | None, layer: int | None = None, split: str | None = None,
                all_layers: bool = False, device: str = "cpu", ensemble: bool = True, text: list | None = None,
                punctuation: str | None = None) -> tuple[dict, dict, tuple]:
    """(the report's fields about the model, its rows by name, (trees, distances) of the first row, for the
    report's example pictures). `model`: a path or bundled name, or None for the gold words' script."""
    size_kernel_cache(PARSE_KERNEL_CACHE)
    sample = " ".join(w for s in sentences[:50] for w in s.words)
    path = resolve_model(model, sample)
    loaded = ModelCache(device, ensemble).get(path)
    by_span_parser = loaded.span_parser is not None and layer is None
    layer = loaded.parse_layer if layer is None else layer
    layer_split = split or loaded.split
    marks = (punctuation or loaded.punctuation) == "boundaries"
    fields = {"split": "symmetric" if by_span_parser else layer_split, "model": str(path),
              "punctuation": "boundaries" if marks else "ignore",
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
        return [scored_tree(d, s, at, split, marks) for d, s, (_, _, at) in zip(distances, sentences, readings)]

    def shown_distances(distances: list):  # the pictures' bars: what each tree was built from, of the kept words
        if marks:
            distances = [cut_distances(d, s, at) for d, s, (_, _, at) in zip(distances, sentences, readings)]
        return words_only(distances, readings, sentences)

    def layer_trees(k: int):
        return trees_of([d[k - 1] for d in per_layer], layer_split)

    if text:
        from onlstm_cli.lm.perplexity import text_perplexity
        fields["perplexity"] = {str(p): round(text_perplexity(loaded, p), 2) for p in text}
    systems = {}
    if by_span_parser:
        distances = [distances_of_words(d, starts) for d, (_, starts, _) in
                     zip(sentence_distances(loaded, normalized), readings)]
        shown = (trees_of(distances, "symmetric"), shown_distances(distances))
        systems["span parser (self-trained)"] = score(sentences, shown[0])
    else:
        shown = (layer_trees(layer), shown_distances([d[layer - 1] for d in per_layer]))
        systems[f"onlstm (layer {layer})"] = score(sentences, shown[0])
    if all_layers:
        for k in range(1, loaded.config.n_layers + 1):
            if by_span_parser or k != layer:
                systems[f"onlstm (layer {k})"] = score(sentences, layer_trees(k))
    return fields, systems, shown


def scored_tree(distances: list[float], sentence, positions: list[int], split: str, marks: bool = False):
    """The tree over the leaves the model read (at `positions` of sentence.all_tokens()), cut at punctuation
    marks first where `marks` (as `parse` does), with the leaves that are not kept words (punctuation) dropped."""
    if marks:
        distances = cut_distances(distances, sentence, positions)
    kept = kept_places(sentence, positions)
    is_word = [p in kept for p in positions]
    if all(is_word):
        return build_tree(distances, sentence.words, split)
    words = iter(sentence.words)
    leaves = [next(words) if word else "" for word in is_word]
    return keep_only(build_tree(distances, leaves, split), {k for k, word in enumerate(is_word) if word}, leaves)


def cut_distances(distances: list[float], sentence, positions: list[int]) -> list[float]:
    """The distances of the leaves at `positions`, lifted after punctuation marks (trees.punctuation_first)."""
    after = after_marks(sentence.all_tokens())
    return punctuation_first(distances, [after[p] for p in positions])


def words_only(distances: list, readings: list, sentences: list) -> list:
    """Each sentence's distances of its kept words (the report's pictures are of those)."""
    out = []
    for d, (_, _, positions), s in zip(distances, readings, sentences):
        kept = kept_places(s, positions)
        out.append([x for x, p in zip(d, positions) if p in kept])
    return out


def kept_places(sentence, positions: list[int]) -> set[int]:
    """The places (in sentence.all_tokens()) of its kept words: every leaf's where their places are unknown."""
    return set(sentence.kept_positions) if len(sentence.kept_positions) == len(sentence.words) else set(positions)


def baseline_scores(sentences: list, seed: int = 0, cut_at_marks: bool = False) -> dict:
    """The baselines' rows of the report: right-, left-branching, balanced and random trees (random from
    `seed`); with `cut_at_marks`, also right- and left-branching trees inside the pieces that punctuation
    marks cut each sentence into, what the "boundaries" rule alone gives, beside which a model's trees cut
    the same way are to be read."""
    words = [s.words for s in sentences]
    rows = {label: score(sentences, baseline_trees(words, name, seed)) for name, label in BASELINE_ROWS}
    if cut_at_marks:
        for label, slope in CUT_BASELINE_ROWS:
            trees = []
            for s in sentences:
                positions = s.as_read(lambda token: False)[2]
                distances = [slope * k for k in range(len(positions))]  # their symmetric split is the baseline
                trees.append(scored_tree(distances, s, positions, "symmetric", marks=True))
            rows[label] = score(sentences, trees)
    return rows
