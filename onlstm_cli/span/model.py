"""A span parser for self-training: a BiLSTM scores every span, CKY picks the best binary tree.

Trained on an ON-LSTM's trees over plain text (student/train.py), it reads each sentence in both
directions at once, which a left-to-right language model cannot. The span representation is the
fencepost difference of Stern et al. (2017): with f_k, b_k the forward and backward states at position k
of `<eos> w1 … wn <eos>`, the span of words i+1 … j is [f_j − f_i ; b_(i+1) − b_(j+1)], scored by a
one-hidden-layer MLP. Its first layer is linear, so it is applied to each fencepost once (g_k) and a span's
hidden layer is relu(g_j − g_i + bias): no (batch, n, n, 2·hidden) tensor is built.

Each span is trained as "in the teacher's tree or not" (binary cross-entropy); the tree with the largest
sum of span log-odds is then the most probable tree under independent spans, and CKY finds it exactly.
The tree goes to the rest of onlstm as distances (`split_heights`): the boundary before word k gets the
length of the constituent that splits there, so the symmetric split rule rebuilds exactly the CKY tree.
"""
from __future__ import annotations

import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from onlstm_cli import fast
from onlstm_cli.config import SpanParserConfig
from onlstm_cli.text.units import UnitEmbedding, UnitTable, batch_rows, own_rows
from onlstm_cli.text.vocab import EOS
from onlstm_cli.trees import Tree, fold_tree

# CKY takes time n³ and memory n²: a sentence longer than this is parsed by the file's ON-LSTM instead
# (parser.py), in time and memory linear in its length. Real sentences are far shorter (PTB's longest: 141).
MAX_SPAN_WORDS = 1000


class SpanParser(nn.Module):
    """With `unit_buckets`, words are read as the language model's n-gram models read them (lm/model.py)."""

    def __init__(self, config: SpanParserConfig, vocabulary: list[str] | None = None):
        super().__init__()
        self.config = config
        if not 0 <= config.word_rows <= config.vocab_size or config.unit_buckets < 0:
            raise ValueError(f"word rows {config.word_rows} or n-gram rows {config.unit_buckets} out of range")
        self.embed = nn.Embedding(config.output_size, config.emb_size)
        self.unit_embed = UnitEmbedding(config.unit_buckets, config.emb_size, vocabulary) if config.unit_buckets else None
        self.lstm = nn.LSTM(config.emb_size, config.hidden_size, config.n_layers, batch_first=True,
                            bidirectional=True, dropout=config.dropout if config.n_layers > 1 else 0.0)
        self.fencepost = nn.Linear(2 * config.hidden_size, config.mlp_size, bias=False)
        self.bias = nn.Parameter(torch.zeros(config.mlp_size))
        self.out = nn.Linear(config.mlp_size, 1)
        self.drop = nn.Dropout(config.dropout)

    def word_vectors(self, ids: torch.Tensor, units: tuple[torch.Tensor, UnitTable] | None = None) -> torch.Tensor:
        """Each word's row, plus, with n-grams, the mean of its n-grams' vectors (`units`: each position's row of
        a table of words; else the vocabulary's)."""
        if self.unit_embed is None:
            return self.embed(ids)
        rows, has_row = own_rows(ids, self.config.output_size)
        vectors = self.embed(rows) * has_row
        return vectors + (self.unit_embed(ids) if units is None else self.unit_embed(*units))

    def forward(self, ids: torch.Tensor, lengths: torch.Tensor,
                units: tuple[torch.Tensor, UnitTable] | None = None) -> torch.Tensor:
        """ids: (B, n_max + 2), each row `<eos> w1 … wn <eos>` padded at the end; lengths: n per row.
        Returns span scores (B, n_max + 1, n_max + 1): [b, i, j] is the log-odds that words i+1 … j
        (fenceposts i < j) form a constituent; entries outside a sentence are meaningless."""
        x = self.drop(self.word_vectors(ids, units))
        packed = pack_padded_sequence(x, (lengths + 2).cpu(), batch_first=True, enforce_sorted=False)
        states, _ = pad_packed_sequence(self.lstm(packed)[0], batch_first=True, total_length=ids.shape[1])
        states = self.drop(states)
        h = self.config.hidden_size
        forward, backward = states[..., :h], states[..., h:]
        g = self.fencepost(torch.cat([forward[:, :-1], backward[:, 1:]], dim=-1))  # (B, n_max + 1, mlp)
        hidden = (g + self.bias)[:, None, :, :] - g[:, :, None, :]  # [b, i, j] = g_j − g_i + bias
        # the (B, n, n, mlp) tensor is most of a parse's time: no extra copy of it where no gradient needs one
        hidden = torch.relu_(hidden) if not torch.is_grad_enabled() else self.drop(torch.relu(hidden))
        return self.out(hidden).squeeze(-1)

    def fenceposts(self, ids: torch.Tensor, lengths: torch.Tensor,
                   units: tuple[torch.Tensor, UnitTable] | None = None) -> torch.Tensor:
        """Inference: the fenceposts' first-layer activations g (B, n_max + 1, mlp) that `forward` scores spans
        from. Each direction of each layer runs as a one-way LSTM over the padded rows, the backward one over
        each row reversed in place: unpacked input takes torch's fused LSTM path, which a packed
        bidirectional LSTM does not, and padding after a row's end changes none of its states."""
        reverse = _row_reversal(lengths + 2, ids.shape[1])
        x = self.word_vectors(ids, units)
        for forward_lstm, backward_lstm in self._one_way_layers():
            backward = torch.gather(backward_lstm(torch.gather(x, 1, reverse.expand_as(x)))[0], 1,
                                    reverse.expand(-1, -1, backward_lstm.hidden_size))
            x = torch.cat([forward_lstm(x)[0], backward], dim=-1)
        h = self.config.hidden_size
        return self.fencepost(torch.cat([x[:, :-1, :h], x[:, 1:, h:]], dim=-1))

    def _one_way_layers(self) -> list[tuple[nn.LSTM, nn.LSTM]]:
        """Per layer, one-way LSTMs that share this BiLSTM's weights (built once, not saved with the model)."""
        if getattr(self, "_one_way", None) is None:
            layers = []
            for layer in range(self.config.n_layers):
                pair = []
                for suffix in ("", "_reverse"):
                    lstm = nn.LSTM(self.lstm.input_size if layer == 0 else 2 * self.lstm.hidden_size,
                                   self.lstm.hidden_size, batch_first=True)
                    for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
                        setattr(lstm, f"{name}_l0", getattr(self.lstm, f"{name}_l{layer}{suffix}"))
                    pair.append(lstm.to(self.bias.device).eval())
                layers.append(tuple(pair))
            object.__setattr__(self, "_one_way", layers)  # not a submodule: no second copy in state_dict
        return self._one_way


def _row_reversal(lengths: torch.Tensor, size: int) -> torch.Tensor:
    """(B, size, 1) gather indices that reverse each row's first `lengths` positions and keep the rest."""
    position = torch.arange(size, device=lengths.device)[None, :]
    end = lengths[:, None].to(position.device)
    return torch.where(position < end, end - 1 - position, position)[..., None]


def trainable_spans(lengths: torch.Tensor, size: int) -> torch.Tensor:
    """(B, size, size) mask of the spans a tree decides: i < j ≤ n, at least two words, not the whole sentence."""
    i = torch.arange(size)[:, None]
    j = torch.arange(size)[None, :]
    n = lengths[:, None, None]
    return (j - i >= 2)[None] & (j[None] <= n) & ~((i[None] == 0) & (j[None] == n))


def cky(scores: torch.Tensor, lengths: list[int]) -> list[list[int]]:
    """The best binary tree of each sentence under span scores (B, size, size): returns, per sentence,
    the split point (fencepost) chosen for each span, as `split_heights` distances."""
    scores = scores.detach().float().cpu()
    batch, size = scores.shape[0], scores.shape[1]
    best = torch.zeros_like(scores)   # best[b, i, j]: the best total score of a tree over words i+1 … j
    split = torch.zeros(batch, size, size, dtype=torch.long)
    for length in range(2, max(lengths, default=0) + 1):
        starts = torch.arange(0, size - length)
        middles = starts[:, None] + torch.arange(1, length)[None, :]  # (spans, length − 1)
        ends = starts + length
        totals = best[:, starts[:, None], middles] + best[:, middles, ends[:, None]]
        value, choice = totals.max(-1)
        best[:, starts, ends] = scores[:, starts, ends] + value
        split[:, starts, ends] = torch.gather(middles.expand(batch, -1, -1), 2, choice[..., None]).squeeze(-1)
    return [split_heights(split[b].tolist(), n) for b, n in enumerate(lengths)]


def split_heights(split: list[list[int]], n: int) -> list[int]:
    """Distances that rebuild the tree of `split` (split[i][j]: where span i…j splits) with the symmetric
    rule: the boundary before word k gets the length of the span that splits there, which is larger than
    any boundary inside its two parts; the first word, before which no span splits, gets 0."""
    heights = [0] * n
    stack = [(0, n)]
    while stack:
        i, j = stack.pop()
        if j - i < 2:
            continue
        k = split[i][j]
        heights[k] = j - i
        stack.append((i, k))
        stack.append((k, j))
    return heights


def tree_heights(tree: Tree) -> list[int]:
    """The split heights (see `split_heights`) of a binary tree whose leaves are word positions 0 … n − 1."""
    heights: dict[int, int] = {}

    def on_node(children: list[tuple[int, int]]) -> tuple[int, int]:
        (start, middle), (_, end) = children[0], children[-1]
        heights[middle] = end - start
        return start, end

    start, end = fold_tree(tree, lambda k: (k, k + 1), on_node)
    return [heights.get(k, 0) for k in range(start, end)]


def span_distances(parser: SpanParser, ids_of: list[list[int]], eos_id: int, batch_size: int = 64,
                   map_batches=map, words_of: list[list[str]] | None = None) -> list[list[int]]:
    """Each sentence's distances (split heights of its CKY tree); sentences are word-id lists, and their words
    (`words_of`), which a parser of n-grams reads. Batches of about equal length go through `map_batches` (a
    thread pool's map runs them side by side)."""
    results: list = [None] * len(ids_of)
    order = sorted(range(len(ids_of)), key=lambda k: len(ids_of[k]))
    device = next(parser.parameters()).device
    parser.eval()
    out_weight, out_bias = parser.out.weight.detach().view(-1), float(parser.out.bias.detach())

    @torch.inference_mode()
    def run(batch: list[int]) -> None:
        ids, lengths = padded(ids_of, batch, eos_id)
        units = None
        if parser.unit_embed is not None and words_of is not None:
            units = padded_units([words_of[k] for k in batch], parser.unit_embed.buckets, ids.shape, device)
        fenceposts = parser.fenceposts(ids.to(device), lengths.to(device), units)
        for k, heights in zip(batch, fast.span_trees(fenceposts, lengths.tolist(), parser.bias, out_weight,
                                                     out_bias, cky)):
            results[k] = heights

    list(map_batches(run, [order[start:start + batch_size] for start in range(0, len(order), batch_size)]))
    return results


def padded(ids_of: list[list[int]], batch: list[int], eos_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(B, n_max + 2) rows `<eos> w1 … wn <eos>` padded with <eos>, and the lengths n."""
    lengths = torch.tensor([len(ids_of[k]) for k in batch])
    ids = torch.full((len(batch), int(lengths.max()) + 2), eos_id, dtype=torch.long)
    for row, k in enumerate(batch):
        ids[row, 1:len(ids_of[k]) + 1] = torch.tensor(ids_of[k], dtype=torch.long)
    return ids, lengths


def padded_units(sentences: list[list[str]], buckets: int, shape: tuple[int, int],
                 device) -> tuple[torch.Tensor, UnitTable]:
    """The n-gram rows of `padded`'s rows (`<eos> w1 … wn <eos>`, padded) in a table of the batch's words."""
    rows, table = batch_rows(sentences, buckets, EOS, shape, offset=1)
    return rows.to(device), table
