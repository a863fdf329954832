"""The stacked ON-LSTM language model (Shen et al., ICLR 2019) with the AWD-LSTM regularisers.

The cell's maths is `cell.py`; the speed code that runs a layer is `fast/`, which picks a backend per
device and dtype. `forward(..., targets=)` gives the training loss without keeping the logits.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn as nn
import torch.nn.functional as F

from onlstm_cli import fast
from onlstm_cli.lm.cell import MASTER_INPUT_RULES, forget_distance, gate_size, reference_layer
from onlstm_cli.config import ModelConfig
from onlstm_cli.errors import DeviceError
from onlstm_cli.text.units import UnitEmbedding, UnitTable, own_rows


def resolve_device(name: str) -> torch.device:
    """auto → cuda when torch sees a GPU, else cpu; "cuda:1" picks a GPU."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    kind = name.split(":")[0]
    if kind not in ("cpu", "cuda") or (kind == "cpu" and name != "cpu"):
        raise DeviceError(f"unknown device {name!r}; expected auto, cpu or cuda")
    if kind == "cuda" and not torch.cuda.is_available():
        raise DeviceError("--device cuda was asked for, but torch sees no CUDA device here")
    return torch.device(name)


def drop_connect(weight: torch.Tensor, p: float, training: bool) -> torch.Tensor:
    """DropConnect: each weight zeroed with probability p, the rest scaled by 1/(1 − p). The masked
    weight is a new tensor computed in forward, so DDP's gradient hooks on the parameter still fire
    (the original code swapped parameters in and out, which broke DataParallel)."""
    if not training or p == 0:
        return weight
    return weight * fast.drop_mask(weight, p)


class LockedDropout(nn.Module):
    """Variational dropout: one mask per sequence, shared over all time steps."""

    def forward(self, x: torch.Tensor, p: float) -> torch.Tensor:
        if not self.training or p == 0:
            return x
        mask = x.new_empty(1, x.shape[1], x.shape[2]).bernoulli_(1 - p) / (1 - p)
        return x * mask


def embedding_dropout(embed: nn.Embedding, tokens: torch.Tensor, p: float, training: bool) -> torch.Tensor:
    """Drop whole word types (every occurrence of a word in the batch), as in AWD-LSTM.

    The mask is drawn per word type, as there, but applied to the looked-up rows rather than to the whole
    embedding matrix, which the tied decoder makes 10k rows: two passes over it saved per step."""
    vectors = F.embedding(tokens, embed.weight)
    if training and p > 0:
        mask = vectors.new_empty(embed.weight.shape[0]).bernoulli_(1 - p) / (1 - p)
        vectors = vectors * mask[tokens].unsqueeze(-1)
    return vectors


class ONLSTMLayer(nn.Module):
    """One layer: input projection + recurrent weights with DropConnect, run by the fast backend."""

    def __init__(self, input_size: int, hidden_size: int, chunk_size: int, weight_drop: float,
                 master_input: str = "paper"):
        super().__init__()
        if hidden_size % chunk_size:
            raise ValueError(f"hidden size {hidden_size} is not a multiple of chunk size {chunk_size}")
        if master_input not in MASTER_INPUT_RULES:
            raise ValueError(f"unknown master input rule {master_input!r}")
        self.hidden_size, self.chunk_size = hidden_size, chunk_size
        self.n_levels = hidden_size // chunk_size
        self.ih = nn.Linear(input_size, gate_size(hidden_size, chunk_size))
        self.hh = nn.Linear(hidden_size, gate_size(hidden_size, chunk_size), bias=False)
        self.ih.weight = fast.recurrent_parameter(self.ih.weight)
        self.hh.weight = fast.recurrent_parameter(self.hh.weight)
        self.weight_drop = weight_drop
        self.master_input = master_input
        self.prepared = fast.PreparedWeights(self.ih.weight, self.hh.weight, self.n_levels)

    def forward(self, x, state, reference: bool = False, x_gates: torch.Tensor | None = None):
        """x: (T, B, input) or None when `x_gates`, its input projection, is given instead."""
        h0, c0 = state
        if x_gates is None:
            x_gates = fast.linear(x, self.ih.weight, self.ih.bias)  # the whole sequence's in one matmul
        # DropConnect: one mask on the recurrent weights per forward call, i.e. per batch.
        w_hh = drop_connect(self.hh.weight, self.weight_drop, self.training)
        if reference:
            out, c_last, master_f, master_i = reference_layer(x_gates, w_hh, h0, c0, self.chunk_size,
                                                              self.master_input)
        else:
            out, c_last, master_f, master_i = fast.layer(x_gates, w_hh, h0, c0, self.chunk_size,
                                                         self.master_input, self.prepared)
        return out, (out[-1], c_last), master_f, master_i


@dataclass
class LMOutput:
    logits: torch.Tensor | None       # (T, B, V) or None when only the gates were asked for
    state: list                        # per layer (h, c), to carry over to the next batch
    distances: list[torch.Tensor]      # per layer (T, B): d_f of each token
    master_forget: list[torch.Tensor]  # per layer (T, B, n)
    master_input: list[torch.Tensor] = field(default_factory=list)
    loss: torch.Tensor | None = None  # mean cross-entropy, where forward was given targets (logits are None then)


class ONLSTMLanguageModel(nn.Module):
    """Embedding → stacked ON-LSTM layers → tied softmax, with the AWD-LSTM regularisers.

    With `unit_buckets`, each word is read as its row plus the mean of its character n-grams' vectors
    (text/units.py), and words beyond the first `word_rows` are read by their n-grams alone; `vocabulary`
    (the words of the ids) gives the n-grams of the ids read in training."""

    def __init__(self, config: ModelConfig, vocabulary: list[str] | None = None):
        super().__init__()
        self.config = config
        for inp, hid in config.layer_sizes():
            if hid % config.chunk_size:
                raise ValueError(f"layer size {hid} is not a multiple of chunk size {config.chunk_size}")
        if not 0 <= config.word_rows <= config.vocab_size or config.unit_buckets < 0:
            raise ValueError(f"word rows {config.word_rows} or n-gram rows {config.unit_buckets} out of range")
        self.embedding = nn.Embedding(config.output_size, config.emb_size)
        self.unit_embedding = (UnitEmbedding(config.unit_buckets, config.emb_size, vocabulary)
                               if config.unit_buckets else None)
        self.layers = nn.ModuleList(
            ONLSTMLayer(inp, hid, config.chunk_size, config.weight_drop, config.master_input)
            for inp, hid in config.layer_sizes())
        self.decoder_bias = nn.Parameter(torch.zeros(config.output_size))
        self.lockdrop = LockedDropout()
        nn.init.uniform_(self.embedding.weight, -0.1, 0.1)
        self._gate_table = None  # (parameter versions, table); see first_layer_gates

    def first_layer_gates(self, tokens: torch.Tensor) -> torch.Tensor | None:
        """Layer 1's input projections of `tokens` read from a per-word table, or None where that can't be.

        Without dropout (evaluation, no gradients) a token's projection depends on the word alone, so one
        (vocabulary × gates) table replaces the largest matmul of inference. The table is rebuilt whenever
        a parameter it comes from changes (tensor versions count every in-place update) and is built only
        for batches large enough to pay for it.
        """
        if self.training or torch.is_grad_enabled() or self.unit_embedding is not None:
            return None
        params = (self.embedding.weight, self.layers[0].ih.weight, self.layers[0].ih.bias)
        key = tuple((p.data_ptr(), p._version, p.device) for p in params)
        if self._gate_table is None or self._gate_table[0] != key:
            if tokens.numel() * 8 < self.config.output_size:
                return None
            ih = self.layers[0].ih
            self._gate_table = (key, fast.linear(self.embedding.weight, ih.weight, ih.bias))
        return F.embedding(tokens, self._gate_table[1])

    def word_vectors(self, tokens: torch.Tensor, units: tuple[torch.Tensor, UnitTable] | None = None) -> torch.Tensor:
        """The input vectors of `tokens`: their rows (whole word types dropped in training), plus, in an
        n-gram model, their n-grams' mean vector, from `units` (each token's row of a table of words) where
        given, else from the vocabulary's n-grams."""
        if self.unit_embedding is None:
            return embedding_dropout(self.embedding, tokens, self.config.dropout_e, self.training)
        rows, has_row = own_rows(tokens, self.config.output_size)
        vectors = embedding_dropout(self.embedding, rows, self.config.dropout_e, self.training) * has_row
        return vectors + (self.unit_embedding(tokens) if units is None else self.unit_embedding(*units))

    def packed_distances(self, tokens: torch.Tensor, batch_sizes: list[int], state: list,
                         up_to_layer: int, units: tuple[torch.Tensor, UnitTable] | None = None) -> list[torch.Tensor]:
        """The distances (N,) of layers 1 … up_to_layer for sequences packed time-major, longest first
        (`tokens` (N,), step t of the batch_sizes[t] longest sequences at a time), from `state` (per layer
        (h, c), batch_sizes[0] rows). Inference only, where the backend packs sentences
        (`fast.Backend.packs_sentences`); `forward` pads instead. Padding cost sorted batches of 64
        sentences a tenth of their work, batches of 256 a third."""
        assert not self.training and not torch.is_grad_enabled(), "packed_distances is for inference"
        x_gates = self.first_layer_gates(tokens)
        x = self.word_vectors(tokens, units) if x_gates is None else None
        distances = []
        for k, layer in enumerate(self.layers[:up_to_layer]):
            # the last layer run: its outputs are not needed, only its master gates
            x, master_f = fast.packed_layer(layer.prepared, x_gates if k == 0 else None, x, batch_sizes,
                                            *state[k], layer.chunk_size, layer.master_input, layer.ih.bias,
                                            top=k == up_to_layer - 1)
            distances.append(forget_distance(master_f))
        return distances

    def init_state(self, batch_size: int) -> list:
        w = self.embedding.weight
        return [(w.new_zeros(batch_size, layer.hidden_size), w.new_zeros(batch_size, layer.hidden_size))
                for layer in self.layers]

    def forward(self, tokens: torch.Tensor, state=None, reference: bool = False,
                with_logits: bool = True, up_to_layer: int | None = None,
                targets: torch.Tensor | None = None,
                units: tuple[torch.Tensor, UnitTable] | None = None) -> LMOutput:
        """tokens: (T, B) word ids. Returns logits, the new state, and every layer's distances and gates.

        up_to_layer (1-based) stops after that layer — all that parsing with it needs; no logits then.
        targets (T, B): the next words; then the output has their mean cross-entropy as `loss` instead of
        logits, computed without keeping the (T·B × vocabulary) logits (`fast.decoder_loss`); a word beyond
        the model's rows is <unk> there. units: see `word_vectors`.
        """
        cfg = self.config
        if targets is not None and up_to_layer is not None:
            raise ValueError("a loss needs every layer: give targets or up_to_layer, not both")
        if state is None:
            state = self.init_state(tokens.shape[1])
        x, x_gates = None, None if reference else self.first_layer_gates(tokens)
        if x_gates is None:
            x = self.lockdrop(self.word_vectors(tokens, units), cfg.dropout_i)
        new_state, distances, forget, inputs = [], [], [], []
        layers = self.layers if up_to_layer is None else self.layers[:up_to_layer]
        with_logits = with_logits and len(layers) == len(self.layers)
        for k, layer in enumerate(layers):
            x, layer_state, master_f, master_i = layer(x, state[k], reference=reference,
                                                       x_gates=x_gates if k == 0 else None)
            new_state.append(layer_state)
            distances.append(forget_distance(master_f))
            forget.append(master_f)
            inputs.append(master_i)
            x = self.lockdrop(x, cfg.dropout_h if k < len(self.layers) - 1 else cfg.dropout)
        if targets is not None:
            if cfg.output_size < cfg.vocab_size:
                targets = torch.where(targets < cfg.output_size, targets, 0)
            loss = fast.decoder_loss(x.reshape(-1, x.shape[-1]), self.embedding.weight, self.decoder_bias,
                                targets.reshape(-1))
            return LMOutput(None, new_state, distances, forget, inputs, loss)
        logits = fast.linear(x, self.embedding.weight, self.decoder_bias) if with_logits else None
        return LMOutput(logits, new_state, distances, forget, inputs)
