"""Sentences → distances → trees with a trained model: what `onlstm parse` and `onlstm evaluate` run.

Each sentence is read from a zero state as `<eos> w1 … wn`, the way the paper's evaluation reads it, and
the chosen layer's d_f for w1 … wn are the distances. A right-to-left model (`train --reverse`) reads
the words reversed and a character model (`train --characters`) their characters; either way each word's
distance marks the boundary before it. Sentences are batched (padding at the end does not
change a left-to-right model's earlier steps); on CPU with the C cell, each batch is packed longest first,
and batches run side by side, one per torch thread (`batches_side_by_side`). Tokens the model has no
vocabulary for and that are only punctuation marks are not fed to it (a symbol is, as an unknown word); they are
put back into the tree next to their neighbours, so the tree always has every token the user gave. Control
characters (NUL, ESC, …) in a line are read as spaces.
"""
from __future__ import annotations

import contextlib
import functools
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from onlstm_cli.errors import ParseError
from onlstm_cli.trees import MAX_SENTENCE_WORDS, Tree, build_tree, fold_tree, punctuation_first, right_branching
from onlstm_cli.induction.models import ModelCache, resolve_model
from onlstm_cli.text.marks import is_mark, levels_among, mark_pairs, may_pair, opening_marks, piece_levels
from onlstm_cli.text.vocab import EOS


COMBINE_RULES = ("mean", "zscore", "rank")


def split_rule(loaded, layer: int | None = None, split: str | None = None) -> str:
    """The split rule that builds trees from `sentence_distances(loaded, …, layer)`: the symmetric one for a
    span parser's split heights (only it rebuilds the span parser's tree), else `split` or the model's."""
    if loaded.tree_parser is not None and layer is None:
        return "symmetric"
    return split or loaded.split


def sentence_distances(loaded, sentences: Sequence[Sequence[str]], layer: int | None = None,
                       batch_size: int = 64, all_layers: bool = False, combine: str | None = None,
                       model_tokens: bool = False, log_likelihoods: list | None = None) -> list:
    """Distances of each (already normalized) sentence's words from one layer (1-based; default: the
    model's parse layer), or from every layer as a list per sentence when all_layers is set.
    `model_tokens`: the words are the model's own tokenizer's cut of the text (parse without
    --pretokenized), so a jieba model need not cut them again (see `Tokenizer.reading`).

    distances[k] is the boundary before word k, whichever way the model reads (see `boundaries_before`).
    For an ensemble file the models' distances are combined per word by `combine` (default: the file's):
    "mean" averages them as they are; "zscore" and "rank" first put each model's distances for a
    sentence on one scale (standard scores; ranks scaled to 0…1), since two models' scales differ. The
    average is weighted by the file's member weights (e.g. less weight on a weaker direction), equal by default.
    A self-trained file's span parser gives the distances (its tree's split heights) unless a layer is asked for,
    as a PCFG's file does; with a PCFG, `log_likelihoods` (a list) gets each sentence's log-likelihood (None where
    it has none: one word, or too long for its chart)."""
    if loaded.tree_parser is not None and layer is None and not all_layers:
        return _model_distances(loaded, sentences,
                                lambda units: _span_distances(loaded, units, batch_size, log_likelihoods),
                                recut=not model_tokens)
    n_layers = loaded.config.n_layers
    layer = loaded.parse_layer if layer is None else layer
    combine = combine or loaded.combine
    if not 1 <= layer <= n_layers:
        raise ParseError(f"--layer must be between 1 and {n_layers} for this model")
    if combine not in COMBINE_RULES:
        raise ParseError(f"unknown ensemble combination {combine!r}; expected one of {', '.join(COMBINE_RULES)}")
    runs = [_model_distances(m, sentences, functools.partial(_direction_distances, m, layer=layer,
                                                             batch_size=batch_size, all_layers=all_layers),
                             all_layers, recut=not model_tokens)
            for m in (loaded, *loaded.members)]
    if len(runs) == 1:
        return runs[0]
    if all_layers:
        return [[combine_distances(per_layer, combine, loaded.weights) for per_layer in zip(*per_run)]
                for per_run in zip(*runs)]
    return [combine_distances(per_run, combine, loaded.weights) for per_run in zip(*runs)]


def combine_distances(per_model: Sequence[Sequence[float]], combine: str = "mean",
                      weights: Sequence[float] | None = None) -> list[float]:
    """One sentence's distances from several models, combined word by word (see sentence_distances)."""
    scale = {"mean": list, "zscore": standard_scores, "rank": scaled_ranks}[combine]
    scaled = [scale(list(d)) for d in per_model]
    weights = list(weights) if weights else [1.0] * len(scaled)
    total = sum(weights)
    return [sum(w * x for w, x in zip(weights, v)) / total for v in zip(*scaled)]


def standard_scores(values: list[float]) -> list[float]:
    """(v − mean) / standard deviation; all zeros when the values are all equal."""
    if not values:
        return values
    mean = sum(values) / len(values)
    spread = (sum((v - mean) ** 2 for v in values) / len(values)) ** 0.5
    return [(v - mean) / spread if spread > 0 else 0.0 for v in values]


def scaled_ranks(values: list[float]) -> list[float]:
    """Each value's rank among the sentence's values, 0 for the smallest … 1 for the largest (ties share
    their mean rank)."""
    if len(values) < 2:
        return [0.0] * len(values)
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        for k in range(start, end + 1):
            ranks[order[k]] = (start + end) / 2 / (len(values) - 1)
        start = end + 1
    return ranks


def boundaries_before(after: list[float]) -> list[float]:
    """A right-to-left model's distances, in reading order reversed back to the sentence's order, mark the
    boundary *after* each word (word t is read with the words right of it as history). Shifted by one they
    mark the boundary before each word, as a left-to-right model's do; the first word, which has no
    boundary before it inside the sentence, gets the smallest value so that no split rule prefers it."""
    if not after:
        return after
    return [min(after)] + after[:-1]


def _model_distances(loaded, sentences: Sequence[Sequence[str]], reader, all_layers: bool = False,
                     recut: bool = True) -> list:
    """One model's distances for each sentence's words, whatever its units (`Tokenizer.reading`): `reader`
    gives the distances of the units; each word gets the distance of the unit it begins, and a word that
    begins inside a unit gets less than any distance of its sentence."""
    if loaded.tokenizer.reads_words_as_given(recut):
        return reader(sentences)
    readings = [loaded.tokenizer.reading(words, recut) for words in sentences]
    per_sentence = reader([units for units, _ in readings])
    if all_layers:
        return [[distances_of_words(d, starts) for d in layers] for layers, (_, starts) in zip(per_sentence, readings)]
    return [distances_of_words(d, starts) for d, (_, starts) in zip(per_sentence, readings)]


def distances_of_words(unit_distances: list[float], starts: list[int | None]) -> list[float]:
    """Each word's distance from the distances of the units read: the distance of the unit the word begins
    (`starts`), or, for a word that begins inside a unit (None), less than any distance of the sentence: it
    is bound to the word before it more tightly than any boundary the model read."""
    inside = min(unit_distances, default=0.0) - 1.0
    return [inside if i is None else unit_distances[i] for i in starts]


def _span_distances(loaded, sentences: Sequence[Sequence[str]], batch_size: int,
                    log_likelihoods: list | None = None) -> list:
    """The split heights of the tree parser's tree of each sentence (a span parser's CKY tree, a PCFG's MBR tree); a
    sentence too long for its chart gets the heights of its ON-LSTM's tree, which the same split rule rebuilds."""
    import torch

    from onlstm_cli.pcfg.model import MAX_PCFG_WORDS, pcfg_trees
    from onlstm_cli.span.model import MAX_SPAN_WORDS, span_distances, tree_heights
    vocab = loaded.vocab
    longest = MAX_SPAN_WORDS if loaded.pcfg is None else MAX_PCFG_WORDS
    short = [k for k, s in enumerate(sentences) if len(s) <= longest]
    results: list = [None] * len(sentences)
    words_of = [list(sentences[k]) for k in short]
    ids_of = [vocab.encode(words) for words in words_of]
    threads = torch.get_num_threads()
    if loaded.pcfg is not None:
        heights, scores = pcfg_trees(loaded.pcfg, ids_of, batch_size)
        if log_likelihoods is not None:
            log_likelihoods[:] = [None] * len(sentences)
            for k, score in zip(short, scores):
                log_likelihoods[k] = score
    elif threads > 1 and len(short) > batch_size and loaded.span_parser.bias.device.type == "cpu":
        with batches_side_by_side(threads) as pool:
            heights = span_distances(loaded.span_parser, ids_of, vocab.eos_id, batch_size, pool.map, words_of)
    else:
        heights = span_distances(loaded.span_parser, ids_of, vocab.eos_id, batch_size, words_of=words_of)
    for k, h in zip(short, heights):
        results[k] = h
    long = [k for k, s in enumerate(sentences) if len(s) > longest]
    if long and loaded.model is None:  # a tree parser alone has no language model's tree: the right-branching one
        for k in long:
            results[k] = tree_heights(right_branching(list(range(len(sentences[k])))))
    elif long:
        distances = _direction_distances(loaded, [sentences[k] for k in long], loaded.parse_layer, batch_size, False)
        for k, d in zip(long, distances):
            results[k] = tree_heights(build_tree(d, list(range(len(d))), loaded.split))
    return results


def _direction_distances(loaded, sentences: Sequence[Sequence[str]], layer: int, batch_size: int,
                         all_layers: bool) -> list:
    if not loaded.config.reverse:
        return _reading_distances(loaded, sentences, layer, batch_size, all_layers)
    per_sentence = _reading_distances(loaded, [s[::-1] for s in sentences], layer, batch_size, all_layers)
    if all_layers:
        return [[boundaries_before(d[::-1]) for d in layers] for layers in per_sentence]
    return [boundaries_before(d[::-1]) for d in per_sentence]


def _reading_distances(loaded, sentences: Sequence[Sequence[str]], layer: int, batch_size: int,
                       all_layers: bool) -> list:
    """Distances of each sentence's words in the order the model reads them."""
    import torch

    from onlstm_cli import fast
    model, vocab = loaded.model, loaded.vocab
    n_layers = model.config.n_layers
    weight = next(model.parameters())
    device = weight.device
    packed = fast.backend_of(weight).packs_sentences  # no padding computed (see ONLSTMLanguageModel.packed_distances)
    results: list = [None] * len(sentences)
    # longest first, so that a packed batch's sequences still running at step t are its first rows
    order = sorted((i for i, s in enumerate(sentences) if len(s) > 0), key=lambda i: -len(sentences[i]))
    for i in range(len(sentences)):
        if len(sentences[i]) == 0:
            results[i] = [[] for _ in range(n_layers)] if all_layers else []
    model.eval()
    up_to = n_layers if all_layers else layer
    with torch.inference_mode():
        # every sentence starts by reading <eos> from the zero state: read it once for all of them
        start_state = model(torch.full((1, 1), vocab.eos_id, dtype=torch.long, device=device),
                            with_logits=False, up_to_layer=up_to,
                            units=batch_unit_rows(model, [[EOS]], (1, 1))).state

    @torch.inference_mode()
    def run(batch: list[int]) -> None:
        lengths = torch.tensor([len(sentences[i]) for i in batch])
        ids = torch.full((int(lengths[0]), len(batch)), vocab.eos_id, dtype=torch.long)
        for b, i in enumerate(batch):
            ids[:len(sentences[i]), b] = torch.tensor(vocab.encode(sentences[i]), dtype=torch.long)
        units = batch_unit_rows(model, [sentences[i] for i in batch], ids.shape)
        state = [(h.expand(len(batch), -1).contiguous(), c.expand(len(batch), -1).contiguous())
                 for h, c in start_state]
        if packed:
            real = torch.arange(ids.shape[0])[:, None] < lengths[None, :]  # (T, B); row-major = packed order
            batch_sizes = real.sum(1).tolist()
            dist = torch.zeros(up_to, *ids.shape)
            packed_units = None if units is None else (units[0][real], units[1])
            for k, d in enumerate(model.packed_distances(ids[real], batch_sizes, state, up_to, packed_units)):
                dist[k][real] = d
        else:
            out = model(ids.to(device), state=state, with_logits=False, up_to_layer=up_to, units=units)
            dist = torch.stack(out.distances).cpu()  # (layers run, T, B)
        for b, i in enumerate(batch):
            n = len(sentences[i])
            if all_layers:
                results[i] = [dist[k, :n, b].tolist() for k in range(n_layers)]
            else:
                results[i] = dist[layer - 1, :n, b].tolist()

    batches = [order[start:start + batch_size] for start in range(0, len(order), batch_size)]
    threads = torch.get_num_threads()
    if packed and threads > 1 and len(batches) > 1:
        with batches_side_by_side(threads) as pool:
            list(pool.map(run, batches))
    else:
        for batch in batches:
            run(batch)
    return results


def batch_unit_rows(model, sentences: Sequence[Sequence[str]], shape: tuple[int, int]):
    """For a model that reads n-grams (text/units.py): each position's row (T, B) in a table of the batch's
    words, so that a word the vocabulary lacks is read by its own n-grams; None for a model of whole words."""
    if getattr(model, "unit_embedding", None) is None:
        return None
    from onlstm_cli.text.units import batch_rows
    rows, table = batch_rows(sentences, model.unit_embedding.buckets, EOS, shape, time_major=True)
    return rows.to(model.unit_embedding.weight.device), table


@contextlib.contextmanager
def batches_side_by_side(threads: int):
    """A pool of `threads` workers that each run whole batches with one torch thread, torch's thread count
    set to 1 meanwhile and restored after.

    A batch's steps are small products, each cut up across the cores, with the C cell and Python in
    between; batches side by side, one core each, keep the cores on products while another batch does
    its Python (the figures are in benchmarks/README.md).
    """
    import torch

    torch.set_num_threads(1)
    try:
        # each worker sets its own OpenMP thread count, which the C cell's and oneDNN's teams follow
        with ThreadPoolExecutor(threads, initializer=torch.set_num_threads, initargs=(1,)) as pool:
            yield pool
    finally:
        torch.set_num_threads(threads)


def attach_skipped(tree: Tree | None, fed: Sequence[bool], tokens: Sequence[str]) -> Tree:
    """Put the tokens that were not fed to the model back into a tree over the fed ones.

    `tree` has the fed tokens' positions (ints) as leaves. Skipped tokens before the first fed one and
    after the last one attach at the root, but for a closing mark after the last word that pairs with an
    opening one after the first (and what comes before it), which stays with that word; a skipped token
    inside the sentence attaches to the word before it, unless it is an opening bracket or quote, or follows
    one: those attach to the word after them. Returns the tree over the user's tokens.
    """
    n = len(tokens)
    fed_positions = [i for i in range(n) if fed[i]]
    if not fed_positions:
        return right_branching(list(tokens))
    first, last = fed_positions[0], fed_positions[-1]
    # (most lines have no bracket or quote the model skipped: then neither is looked for)
    opening = opening_marks(tokens) if any(may_pair(tokens[i]) for i in range(n) if not fed[i]) else None
    trailing, leading = {}, {}  # fed position → skipped positions right after it / right before it
    previous, pending = None, []
    for i in range(first, last + 1):
        if fed[i]:
            if pending:
                leading[i], pending = pending, []
            previous = i
        elif opening is not None and (pending or opening[i]):  # an opening mark and what follows it
            pending.append(i)
        else:
            trailing.setdefault(previous, []).append(i)
    tail = last
    if opening is not None:
        # the tokens up to a closing mark after the last word stay with it, where the mark's pair opened after
        # the first word (one that opened before it encloses the sentence, both marks at the root)
        tail = max((c for o, c in mark_pairs(tokens, opening) if c > last and o > first), default=last)
        trailing[last] = trailing.get(last, []) + list(range(last + 1, tail + 1))

    def leaf(i: int) -> Tree:
        node: Tree = tokens[i]
        for j in trailing.get(i, ()):
            node = [node, tokens[j]]
        for j in reversed(leading.get(i, ())):
            node = [tokens[j], node]
        return node

    result = fold_tree(tree, leaf, list)  # the same shape, leaves replaced
    for j in range(tail + 1, n):
        result = [result, tokens[j]]
    for j in range(first - 1, -1, -1):
        result = [tokens[j], result]
    return result


@dataclass
class ParsedSentence:
    tokens: list[str]             # the user's tokens, as shown in the tree
    tree: Tree | None             # None for an empty line, or one that was not parsed (`error`)
    distances: list[float | None]  # per token; None where the token was not fed to the model
    model: str = ""
    error: str | None = None      # why the line was not parsed (too long); the other lines still are
    log_likelihood: float | None = None  # a PCFG's log p(sentence) of the words it read (natural log)


# A sentence's parse takes time and memory linear in its length, but a line of millions of words is no
# sentence (a file without newlines): a line of more than MAX_SENTENCE_WORDS (trees.py) is answered with a
# message, and the lines around it are parsed.


# Control characters (Unicode Cc: NUL, ESC, DEL, the C0 and C1 ranges) are not text: they separate tokens
# like spaces, so none of them reaches a tree or the terminal that shows it. So does a byte order mark inside a
# text (U+FEFF, where files were joined; Tokenizer.split reads it so too): it is in no word.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\ufeff]")


def without_controls(text: str, replacement: str = " ") -> str:
    """The text with each control character replaced (by a space: the tokens on either side are apart)."""
    return _CONTROL.sub(replacement, text)


def prepare(loaded, line: str, pretokenized: bool = False) -> tuple[list[str], list[str], list[bool]]:
    """User tokens, the normalized tokens fed to the model, and which user tokens were fed."""
    tokens = loaded.tokenizer.split(without_controls(line), pretokenized)
    normalized = [loaded.tokenizer.normalize(t) for t in tokens]
    # a mark the model never saw is left out and attached after; a symbol it lacks is read as an unknown word,
    # since a treebank counts some as words (`&`, `%`) and a slot of their own parses better (docs/experiments/pcfg.md)
    fed = [w in loaded.vocab or not is_mark(w) for w in normalized]
    return tokens, [w for w, f in zip(normalized, fed) if f], fed


def parse_lines(lines: Sequence[str], model: str | None = None, cache: ModelCache | None = None,
                pretokenized: bool = False, layer: int | None = None, split: str | None = None,
                batch_size: int = 64, punctuation: str | None = None) -> list[ParsedSentence]:
    """Parse a block of lines; the model is chosen per line when `model` is None (zh for CJK text).
    `layer`, `split` and `punctuation` (trees.PUNCTUATION_RULES) default to the model's own. The distances
    returned are the model's; with "boundaries" the tree is cut at punctuation marks first."""
    cache = cache or ModelCache()
    by_model: dict[Path, list[int]] = {}
    fixed = resolve_model(model) if model is not None else None
    results: list[ParsedSentence] = [ParsedSentence([], None, []) for _ in lines]
    for k, line in enumerate(lines):
        if without_controls(line).strip():  # a line of spaces and control characters is an empty line
            try:
                by_model.setdefault(fixed or resolve_model(None, line), []).append(k)
            except ParseError as e:  # a script no bundled model reads: this line says so, the others are parsed
                results[k].error = str(e)
    for path, indices in by_model.items():
        loaded = cache.get(path)
        prepared = [prepare(loaded, lines[k], pretokenized) for k in indices]
        for k, (tokens, _, _) in zip(indices, prepared):
            if len(tokens) > MAX_SENTENCE_WORDS:
                results[k].error = (f"{len(tokens):,} words, more than the {MAX_SENTENCE_WORDS:,} a sentence may "
                                    "have: not parsed")
        # a line its tokenizer finds no token in is answered as an empty line: no tree has zero words
        kept = [j for j, k in enumerate(indices) if results[k].error is None and prepared[j][0]]
        indices, prepared = [indices[j] for j in kept], [prepared[j] for j in kept]
        scores: list = []  # a PCFG's log-likelihoods, where it parses
        distances = sentence_distances(loaded, [p[1] for p in prepared], layer, batch_size,
                                       model_tokens=not pretokenized, log_likelihoods=scores)
        rule = split_rule(loaded, layer, split)
        marks = loaded.cuts_at_marks(punctuation)
        scores = scores or [None] * len(indices)
        for k, (tokens, _, fed), dist, score in zip(indices, prepared, distances, scores):
            if tokens and all(fed):  # the common case: every token went to the model
                tree = build_tree(punctuation_first(dist, piece_levels(tokens)) if marks else dist, tokens, rule)
                results[k] = ParsedSentence(tokens, tree, list(dist), str(path), log_likelihood=score)
                continue
            positions = [i for i, f in enumerate(fed) if f]
            # a mark the model did not read still cuts
            cut = punctuation_first(dist, levels_among(piece_levels(tokens), positions)) if marks else dist
            inner = build_tree(cut, positions, rule) if positions else None
            per_token: list[float | None] = [None] * len(tokens)
            for i, d in zip(positions, dist):
                per_token[i] = d
            results[k] = ParsedSentence(tokens, attach_skipped(inner, fed, tokens), per_token, str(path),
                                        log_likelihood=score)
    return results
