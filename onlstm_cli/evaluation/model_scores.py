"""A model file's trees of gold sentences, scored: what `onlstm evaluate` reports for a model (its default
parser, and with all_layers every layer of its language model)."""
from __future__ import annotations

from dataclasses import dataclass

from onlstm_cli.evaluation.metrics import BASELINE_ROWS, CUT_BASELINE_ROWS, evaluate as score
from onlstm_cli.fast import PARSE_KERNEL_CACHE, size_kernel_cache
from onlstm_cli.induction.distances import distances_of_words, parse_lines, sentence_distances
from onlstm_cli.induction.models import ModelCache, resolve_model
from onlstm_cli.text.treebanks import keep_only
from onlstm_cli.text.marks import levels_among, piece_levels
from onlstm_cli.trees import baseline_trees, build_tree, punctuation_first


def score_model(sentences: list, model: str | None, layer: int | None = None, split: str | None = None,
                all_layers: bool = False, device: str = "cpu", ensemble: bool = True, text: list | None = None,
                punctuation: str | None = None) -> tuple[dict, dict, tuple]:
    """(the report's fields about the model, its rows by name, (trees, distances) of the first row, for the
    report's example pictures). `model`: a path or bundled name, or None for the gold words' script.
    `punctuation` (trees.SCORING_PUNCTUATION): the model's own rule where None."""
    size_kernel_cache(PARSE_KERNEL_CACHE)
    sample = " ".join(w for s in sentences[:50] for w in s.words)
    path = resolve_model(model, sample)
    cache = ModelCache(device, ensemble)
    loaded = cache.get(path)
    by_span_parser = loaded.tree_parser is not None and layer is None
    layer = loaded.parse_layer if layer is None else layer
    layer_split = split or loaded.split
    marks = punctuation != "remove" and loaded.cuts_at_marks(punctuation)
    fields = model_fields(loaded, path, layer, layer_split, by_span_parser, all_layers, text,
                          "boundaries" if marks else punctuation or "ignore")
    lm_rows = language_models_name(loaded)
    if punctuation == "remove":
        return fields, *words_alone(sentences, path, loaded, cache, layer if not by_span_parser else None, split,
                                    all_layers, lm_rows)
    # The text as the model was trained on it, and as `parse` feeds it: punctuation only where it knows it.
    readings = [s.as_read(lambda token: loaded.tokenizer.normalize(token) in loaded.vocab) for s in sentences]
    normalized = [[loaded.tokenizer.normalize(t) for t in tokens] for tokens, _, _ in readings]
    per_layer = None
    if not by_span_parser or all_layers:
        per_layer = [[distances_of_words(d, starts) for d in layers] for layers, (_, starts, _) in
                     zip(sentence_distances(loaded, normalized, layer, all_layers=True), readings)]

    leaves = [Leaves.of(s, at, marks) for s, (_, _, at) in zip(sentences, readings)]

    def trees_of(distances: list, split: str):
        return [scored_tree(d, s, own, split) for d, s, own in zip(distances, sentences, leaves)]

    def shown_distances(distances: list):  # the pictures' bars: what each tree was built from, of the kept words
        return [[x for x, word in zip(own.cut(d), own.is_word) if word] for d, own in zip(distances, leaves)]

    def layer_trees(k: int):
        return trees_of([d[k - 1] for d in per_layer], layer_split)

    systems = {}
    if by_span_parser:
        distances = [distances_of_words(d, starts) for d, (_, starts, _) in
                     zip(sentence_distances(loaded, normalized), readings)]
        shown = (trees_of(distances, "symmetric"), shown_distances(distances))
        systems[tree_parser_name(loaded)] = score(sentences, shown[0])
    else:
        shown = (layer_trees(layer), shown_distances([d[layer - 1] for d in per_layer]))
        systems[f"{lm_rows} (layer {layer})"] = score(sentences, shown[0])
    if all_layers:
        for k in range(1, loaded.config.n_layers + 1):
            if by_span_parser or k != layer:
                systems[f"{lm_rows} (layer {k})"] = score(sentences, layer_trees(k))
    return fields, systems, shown


def words_alone(sentences: list, path, loaded, cache: ModelCache, layer: int | None, split: str | None,
                all_layers: bool, lm_rows: str) -> tuple[dict, tuple]:
    """score_model's rows and shown trees for "remove", the literature's protocol: each gold sentence's kept words
    alone, parsed as `parse --pretokenized` parses them (its own rule for a mark among them, a symbol it does not
    know attached after), so the figure is the one a user gets that way. `loaded`: the file at `path`, which `cache`
    holds; `layer` None: the file's own parser."""
    # a word holding a space (rare in a treebank) stays one token
    lines = [" ".join("".join("_" if ch.isspace() else ch for ch in w) for w in s.words) for s in sentences]

    def parsed(k: int | None) -> tuple[list, list]:
        done = parse_lines(lines, model=str(path), cache=cache, pretokenized=True, layer=k, split=split)
        return [p.tree for p in done], [[d or 0.0 for d in p.distances] for p in done]

    shown = parsed(layer)
    own = tree_parser_name(loaded) if layer is None else f"{lm_rows} (layer {layer})"
    systems = {own: score(sentences, shown[0])}
    for k in range(1, loaded.config.n_layers + 1) if all_layers and loaded.model is not None else ():
        if k != layer:
            systems[f"{lm_rows} (layer {k})"] = score(sentences, parsed(k)[0])
    return systems, shown


def model_fields(loaded, path, layer: int, layer_split: str, by_span_parser: bool, all_layers: bool,
                 text: list | None, punctuation: str) -> dict:
    """The report's fields about the model: how its trees were built, its perplexities."""
    fields = {"split": "symmetric" if by_span_parser else layer_split, "model": str(path), "punctuation": punctuation,
              "layer": None if by_span_parser else layer, **perplexity_fields(loaded)}
    if by_span_parser and all_layers:
        fields["layer_split"] = layer_split  # the language model's rows
    if text:
        from onlstm_cli.lm.perplexity import text_perplexity
        fields["perplexity"] = {str(p): round(text_perplexity(loaded, p), 2) for p in text}
    return fields


def tree_parser_name(loaded) -> str:
    """The row of a file whose own parser is a tree parser."""
    return "pcfg (MBR trees)" if loaded.pcfg is not None else "span parser (self-trained)"


def language_models_name(loaded) -> str:
    """What its layers' rows are called: "onlstm", or for an ensemble file (read with its members) what it is."""
    return f"ensemble of {1 + len(loaded.members)} language models" if loaded.members else "onlstm"


def perplexity_fields(loaded) -> dict:
    """The file's validation perplexity: its language model's; an ensemble's models each have their own, and
    no one of them is the file's."""
    if not loaded.members:
        return {"valid_ppl": loaded.meta.get("valid_ppl")}
    return {"valid_ppl": None, "ensemble": {"models": 1 + len(loaded.members),
                                            "valid_ppl": [m.meta.get("valid_ppl") for m in (loaded, *loaded.members)]}}


@dataclass
class Leaves:
    """What each leaf of a model's tree of a gold sentence is: a kept word or not (punctuation the model read),
    and, where the tree is cut at punctuation marks, how early it is cut before it (text.marks.piece_levels)."""
    is_word: list[bool]
    cut_level: list[int] | None = None

    @classmethod
    def of(cls, sentence, positions: list[int], marks: bool) -> "Leaves":
        """The leaves at `positions` of sentence.all_tokens() (GoldSentence.as_read)."""
        kept = set(sentence.kept_positions) if sentence.places_known else set(range(len(sentence.words)))
        levels = levels_among(piece_levels(sentence.all_tokens()), positions) if marks else None
        return cls([p in kept for p in positions], levels)

    def cut(self, distances: list[float]) -> list[float]:
        """The distances the tree is built from: lifted where pieces start, where it is cut at punctuation marks."""
        return distances if self.cut_level is None else punctuation_first(distances, self.cut_level)


def scored_tree(distances: list[float], sentence, leaves: Leaves, split: str):
    """The tree over the leaves the model read, cut at punctuation marks first where `leaves` say (as `parse`
    does), with the leaves that are not kept words (punctuation) dropped."""
    distances = leaves.cut(distances)
    if all(leaves.is_word):
        return build_tree(distances, sentence.words, split)
    words = iter(sentence.words)
    labels = [next(words) if word else "" for word in leaves.is_word]
    return keep_only(build_tree(distances, labels, split), {k for k, word in enumerate(leaves.is_word) if word},
                     labels)


def baseline_scores(sentences: list, seed: int = 0, cut_at_marks: bool = False) -> dict:
    """The baselines' rows of the report: right-, left-branching, balanced and random trees (random from
    `seed`); with `cut_at_marks`, also right- and left-branching trees inside the pieces that punctuation
    marks cut each sentence into, what the "boundaries" rule alone gives, beside which a model's trees cut
    the same way are to be read."""
    words = [s.words for s in sentences]
    rows = {label: score(sentences, baseline_trees(words, name, seed)) for name, label in BASELINE_ROWS}
    if cut_at_marks:
        leaves = [Leaves.of(s, s.as_read(lambda token: False)[2], marks=True) for s in sentences]
        for label, slope in CUT_BASELINE_ROWS:
            # distances rising (or falling) along the leaves: their symmetric split is the baseline
            trees = [scored_tree([slope * k for k in range(len(own.is_word))], s, own, "symmetric")
                     for s, own in zip(sentences, leaves)]
            rows[label] = score(sentences, trees)
    return rows
