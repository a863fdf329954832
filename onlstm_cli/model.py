"""The ON-LSTM cell and the stacked ON-LSTM language model (Shen et al., ICLR 2019).

Two implementations of one layer live here:

* `reference_layer` — the cell written out step by step exactly as in the paper; autograd does the rest.
  It is the readable definition and the oracle the tests compare against.
* `ONLSTMLayerFunction` — the same maths as a hand-written `autograd.Function` over a whole sequence:
  the input projection is one matmul outside the loop, the backward pass loops only over the recurrent
  part and forms the recurrent weight gradient as a single large matmul. This is what training uses.

Cell state layout: the hidden size H is cut into n = H / chunk_size levels; master gates live at level
resolution and are repeated over the chunk_size neurons of each level.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

import torch
import torch.nn as nn
import torch.nn.functional as F

from .errors import OnlstmError

MASTER_INPUT_RULES = ("paper", "symmetric")


class DeviceError(OnlstmError, ValueError):
    """An unusable --device; the message is one line for the user."""


def resolve_device(name: str) -> torch.device:
    """auto → cuda when torch sees a GPU, else cpu."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name not in ("cpu", "cuda"):
        raise DeviceError(f"unknown device {name!r}; expected auto, cpu or cuda")
    if name == "cuda" and not torch.cuda.is_available():
        raise DeviceError("--device cuda was asked for, but torch sees no CUDA device here")
    return torch.device(name)


def cumax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """cumsum(softmax(x)): a soft version of a 0…0 1…1 step vector, increasing from ~0 to exactly 1."""
    return torch.cumsum(F.softmax(x, dim=dim), dim=dim)


def master_input_gate(logits: torch.Tensor, rule: str = "paper") -> torch.Tensor:
    """The decreasing master input gate.

    "paper": 1 − cumax(x)  (ones strictly below the split level d_i).
    "symmetric": the seed's reverse cumsum of softmax(x) (ones up to and including d_i), the mirror of cumax.
    """
    p = F.softmax(logits, dim=-1)
    if rule == "paper":
        return 1.0 - torch.cumsum(p, dim=-1)
    if rule == "symmetric":
        return torch.flip(torch.cumsum(torch.flip(p, [-1]), dim=-1), [-1])
    raise ValueError(f"unknown master input rule {rule!r}; expected one of {MASTER_INPUT_RULES}")


def forget_distance(master_forget: torch.Tensor) -> torch.Tensor:
    """d_f = n + 1 − Σ_k f̃(k): the expected split level Σ_k k·p_f(k); large = little history kept."""
    n = master_forget.shape[-1]
    return (n + 1) - master_forget.sum(-1)


def cell_update(c_prev, c_hat, f, i, master_f, master_i):
    """c_t = ω∘(f∘c_{t−1} + i∘ĉ) + (f̃−ω)∘c_{t−1} + (ĩ−ω)∘ĉ, with ω = f̃∘ĩ.

    Tensors are (..., n, chunk) except the master gates, which are (..., n, 1) and broadcast over a chunk.
    """
    overlap = master_f * master_i
    return overlap * (f * c_prev + i * c_hat) + (master_f - overlap) * c_prev + (master_i - overlap) * c_hat


def _split_gates(gates: torch.Tensor, n: int, chunk: int):
    """Gate pre-activations are laid out [master_i (n) | master_f (n) | o | ĉ | i | f (H each)]."""
    mi, mf = gates[..., :n], gates[..., n:2 * n]
    o, c_hat, i, f = gates[..., 2 * n:].unflatten(-1, (4, n, chunk)).unbind(-3)
    return mi, mf, o, c_hat, i, f


def reference_layer(x_gates, w_hh, h0, c0, chunk_size: int, master_input: str = "paper"):
    """One ON-LSTM layer, step by step with autograd (the definition; slow).

    x_gates: (T, B, G) input projections incl. bias; w_hh: (G, H); h0: (B, H); c0: (B, H).
    Returns outputs (T, B, H), last cell (B, H), master forget gates (T, B, n), master input gates (T, B, n).
    """
    hidden = w_hh.shape[1]
    n = hidden // chunk_size
    h, c = h0, c0.view(-1, n, chunk_size)
    outputs, forget_gates, input_gates = [], [], []
    for t in range(x_gates.shape[0]):
        gates = x_gates[t] + h @ w_hh.t()
        mi, mf, o, c_hat, i, f = _split_gates(gates, n, chunk_size)
        master_f = cumax(mf)
        master_i = master_input_gate(mi, master_input)
        c = cell_update(c, torch.tanh(c_hat), torch.sigmoid(f), torch.sigmoid(i),
                        master_f[..., None], master_i[..., None])
        h = torch.sigmoid(o).flatten(-2) * torch.tanh(c).flatten(-2)
        outputs.append(h)
        forget_gates.append(master_f)
        input_gates.append(master_i)
    return (torch.stack(outputs), c.flatten(-2), torch.stack(forget_gates).detach(),
            torch.stack(input_gates).detach())


def _reverse_cumsum(x: torch.Tensor) -> torch.Tensor:
    return torch.flip(torch.cumsum(torch.flip(x, [-1]), -1), [-1])


_sigmoid_backward = torch.ops.aten.sigmoid_backward
_tanh_backward = torch.ops.aten.tanh_backward
_softmax_backward = torch.ops.aten._softmax_backward_data


class ONLSTMLayerFunction(torch.autograd.Function):
    """A whole ON-LSTM layer over a sequence with a hand-written backward (see module docstring).

    Inside the loop everything is kept flat at neuron resolution, (B, H): the level-wise master gates are
    expanded once per step, so no elementwise op has to broadcast over chunks, and the derivative of each
    nonlinearity is one fused aten kernel.
    """

    @staticmethod
    def forward(ctx, x_gates, w_hh, h0, c0, chunk_size: int, master_input: str):
        T, B, G = x_gates.shape
        H = w_hh.shape[1]
        n = H // chunk_size
        symmetric = master_input == "symmetric"
        w_t = w_hh.t().contiguous()
        new = x_gates.new_empty
        hs, cs = new(T + 1, B, H), new(T + 1, B, H)   # index t+1 holds step t; index 0 the initial state
        hs[0], cs[0] = h0, c0
        p_i, p_f = new(T, B, n), new(T, B, n)         # the master gates' softmaxes
        master_f, master_i = new(T, B, n), new(T, B, n)
        acts = new(T, B, 4, H)                        # o, ĉ, i, f after their nonlinearities
        big_f, big_i = new(T, B, H), new(T, B, H)     # the effective forget / input gates
        overlap = new(T, B, H)                        # ω = f̃∘ĩ at neuron resolution
        mf_full, mi_full = new(T, B, H), new(T, B, H)
        tanh_c = new(T, B, H)
        for t in range(T):
            gates = torch.addmm(x_gates[t], hs[t], w_t)
            p_i[t].copy_(torch.softmax(gates[:, :n], -1))
            p_f[t].copy_(torch.softmax(gates[:, n:2 * n], -1))
            torch.cumsum(p_f[t], -1, out=master_f[t])
            if symmetric:
                master_i[t].copy_(_reverse_cumsum(p_i[t]))
            else:
                torch.cumsum(p_i[t], -1, out=master_i[t]).neg_().add_(1.0)
            mf = mf_full[t].view(B, n, chunk_size)
            mf.copy_(master_f[t][:, :, None].expand(B, n, chunk_size))
            mi = mi_full[t].view(B, n, chunk_size)
            mi.copy_(master_i[t][:, :, None].expand(B, n, chunk_size))
            a = acts[t]
            torch.sigmoid(gates[:, 2 * n:].view(B, 4, H), out=a)
            torch.tanh(gates[:, 2 * n + H:2 * n + 2 * H], out=a[:, 1])
            w = torch.mul(mf_full[t], mi_full[t], out=overlap[t])
            # F = f∘ω + (f̃ − ω), I = i∘ω + (ĩ − ω)
            torch.addcmul(mf_full[t] - w, a[:, 3], w, out=big_f[t])
            torch.addcmul(mi_full[t] - w, a[:, 2], w, out=big_i[t])
            c = torch.mul(big_f[t], cs[t], out=cs[t + 1])
            c.addcmul_(big_i[t], a[:, 1])
            torch.tanh(c, out=tanh_c[t])
            torch.mul(a[:, 0], tanh_c[t], out=hs[t + 1])
        ctx.save_for_backward(w_hh, hs, cs, p_i, p_f, acts, big_f, big_i, overlap, mf_full, mi_full, tanh_c)
        ctx.chunk_size, ctx.symmetric = chunk_size, symmetric
        ctx.mark_non_differentiable(master_f, master_i)
        return hs[1:], cs[T].clone(), master_f, master_i

    @staticmethod
    def backward(ctx, d_out, d_c_last, _d_mf, _d_mi):
        w_hh, hs, cs, p_i, p_f, acts, big_f, big_i, overlap, mf_full, mi_full, tanh_c = ctx.saved_tensors
        chunk = ctx.chunk_size
        T, B, H = tanh_c.shape
        n = H // chunk
        G = w_hh.shape[0]
        d_gates = hs.new_empty(T, B, G)
        d_h = hs.new_zeros(B, H)
        d_c = d_c_last.clone() if d_c_last is not None else hs.new_zeros(B, H)
        if d_out is None:
            d_out = hs.new_zeros(T, B, H)
        for t in range(T - 1, -1, -1):
            o, c_hat, i, f = acts[t].unbind(1)
            w, mf, mi = overlap[t], mf_full[t], mi_full[t]
            dg = d_gates[t]
            dg_cell = dg[:, 2 * n:].view(B, 4, H)
            dh = d_h.add_(d_out[t])
            # h = o∘tanh(c)
            dg_cell[:, 0].copy_(_sigmoid_backward(dh * tanh_c[t], o))
            d_c.add_(_tanh_backward(dh * o, tanh_c[t]))
            # c = F∘c_prev + I∘ĉ
            d_big_f = d_c * cs[t]
            d_big_i = d_c * c_hat
            dg_cell[:, 1].copy_(_tanh_backward(d_c * big_i[t], c_hat))
            d_big_i_w = d_big_i * w
            d_big_f_w = d_big_f * w
            dg_cell[:, 2].copy_(_sigmoid_backward(d_big_i_w, i))
            dg_cell[:, 3].copy_(_sigmoid_backward(d_big_f_w, f))
            # F = f̃ − ω∘(1 − f), I = ĩ − ω∘(1 − i): dω = dF∘(f − 1) + dI∘(i − 1)
            d_w = (d_big_f * f).addcmul_(d_big_i, i).sub_(d_big_f).sub_(d_big_i)
            d_mf = d_big_f.addcmul_(d_w, mi).view(B, n, chunk).sum(-1)
            d_mi = d_big_i.addcmul_(d_w, mf).view(B, n, chunk).sum(-1)
            # cumsum backward is a reverse cumsum, then the softmax backward.
            d_pf = _reverse_cumsum(d_mf)
            d_pi = torch.cumsum(d_mi, -1) if ctx.symmetric else _reverse_cumsum(d_mi).neg_()
            dg[:, n:2 * n].copy_(_softmax_backward(d_pf, p_f[t], -1, d_pf.dtype))
            dg[:, :n].copy_(_softmax_backward(d_pi, p_i[t], -1, d_pi.dtype))
            d_c.mul_(big_f[t])
            d_h = torch.mm(dg, w_hh)
        d_w_hh = d_gates.view(T * B, G).t() @ hs[:-1].reshape(T * B, H)
        return d_gates, d_w_hh, d_h, d_c, None, None


def inference_layer(x_gates, w_hh, h0, c0, chunk_size: int, master_input: str = "paper"):
    """The forward pass of `ONLSTMLayerFunction` without the saved activations (parsing, validation)."""
    T, B, _ = x_gates.shape
    H = w_hh.shape[1]
    n = H // chunk_size
    w_t = w_hh.t().contiguous()
    outputs = x_gates.new_empty(T, B, H)
    master_f, master_i = x_gates.new_empty(T, B, n), x_gates.new_empty(T, B, n)
    h, c = h0, c0.reshape(B, n, chunk_size)
    for t in range(T):
        gates = torch.addmm(x_gates[t], h, w_t)
        mf = torch.cumsum(torch.softmax(gates[:, n:2 * n], -1), -1, out=master_f[t])
        master_i[t] = master_input_gate(gates[:, :n], master_input)
        a = torch.sigmoid(gates[:, 2 * n:].view(B, 4, n, chunk_size))
        c_hat = torch.tanh(gates[:, 2 * n + H:2 * n + 2 * H]).view(B, n, chunk_size)
        c = cell_update(c, c_hat, a[:, 3], a[:, 2], mf[:, :, None], master_i[t][:, :, None])
        h = torch.mul(a[:, 0].reshape(B, H), torch.tanh(c).view(B, H), out=outputs[t])
    return outputs, c.reshape(B, H), master_f, master_i


class LockedDropout(nn.Module):
    """Variational dropout: one mask per sequence, shared over all time steps."""

    def forward(self, x: torch.Tensor, p: float) -> torch.Tensor:
        if not self.training or p == 0:
            return x
        mask = x.new_empty(1, x.shape[1], x.shape[2]).bernoulli_(1 - p) / (1 - p)
        return x * mask


def embedding_dropout(embed: nn.Embedding, tokens: torch.Tensor, p: float, training: bool) -> torch.Tensor:
    """Drop whole word types (every occurrence of a word in the batch), as in AWD-LSTM."""
    weight = embed.weight
    if training and p > 0:
        mask = weight.new_empty(weight.shape[0], 1).bernoulli_(1 - p) / (1 - p)
        weight = weight * mask
    return F.embedding(tokens, weight)


class ONLSTMLayer(nn.Module):
    """One layer: input projection + recurrent weights with DropConnect, run by the fast function."""

    def __init__(self, input_size: int, hidden_size: int, chunk_size: int, weight_drop: float,
                 master_input: str = "paper"):
        super().__init__()
        if hidden_size % chunk_size:
            raise ValueError(f"hidden size {hidden_size} is not a multiple of chunk size {chunk_size}")
        if master_input not in MASTER_INPUT_RULES:
            raise ValueError(f"unknown master input rule {master_input!r}")
        self.hidden_size, self.chunk_size = hidden_size, chunk_size
        self.n_levels = hidden_size // chunk_size
        gate_size = 2 * self.n_levels + 4 * hidden_size
        self.ih = nn.Linear(input_size, gate_size)
        self.hh = nn.Linear(hidden_size, gate_size, bias=False)
        self.weight_drop = weight_drop
        self.master_input = master_input

    def forward(self, x, state, reference: bool = False):
        h0, c0 = state
        x_gates = self.ih(x)  # the whole sequence's input projection in one matmul
        # DropConnect: one mask on the recurrent weights per forward call, i.e. per batch.
        w_hh = F.dropout(self.hh.weight, self.weight_drop, self.training)
        if reference:
            run = reference_layer
        elif torch.is_grad_enabled() and (x_gates.requires_grad or w_hh.requires_grad):
            run = ONLSTMLayerFunction.apply
        else:
            run = inference_layer  # nothing to differentiate: keep no activations for a backward pass
        out, c_last, master_f, master_i = run(x_gates, w_hh, h0, c0, self.chunk_size, self.master_input)
        return out, (out[-1], c_last), master_f, master_i


@dataclass
class ModelConfig:
    """Hyperparameters of the language model (the paper's names in comments)."""
    vocab_size: int
    emb_size: int = 200          # emsize (paper: 400)
    hidden_size: int = 400       # nhid (paper: 1150)
    n_layers: int = 3            # nlayers
    chunk_size: int = 10         # chunk_size
    dropout: float = 0.45        # dropout: output of the last layer
    dropout_h: float = 0.3       # dropouth: between layers
    dropout_i: float = 0.5       # dropouti: on the embeddings
    dropout_e: float = 0.1       # dropoute: whole word types
    weight_drop: float = 0.45    # wdrop: DropConnect on hidden-to-hidden weights
    master_input: str = "paper"  # "paper" (1 − cumax) or "symmetric" (the seed's variant)

    def layer_sizes(self) -> list[tuple[int, int]]:
        """(input, hidden) per layer; the last layer outputs emb_size so the embeddings can be tied."""
        sizes = []
        for layer in range(self.n_layers):
            inp = self.emb_size if layer == 0 else self.hidden_size
            out = self.emb_size if layer == self.n_layers - 1 else self.hidden_size
            sizes.append((inp, out))
        return sizes

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class LMOutput:
    logits: torch.Tensor | None       # (T, B, V) or None when only the gates were asked for
    state: list                        # per layer (h, c), to carry over to the next batch
    distances: list[torch.Tensor]      # per layer (T, B): d_f of each token
    master_forget: list[torch.Tensor]  # per layer (T, B, n)
    master_input: list[torch.Tensor] = field(default_factory=list)


class ONLSTMLanguageModel(nn.Module):
    """Embedding → stacked ON-LSTM layers → tied softmax, with the AWD-LSTM regularisers."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.config = config
        for inp, hid in config.layer_sizes():
            if hid % config.chunk_size:
                raise ValueError(f"layer size {hid} is not a multiple of chunk size {config.chunk_size}")
        self.embedding = nn.Embedding(config.vocab_size, config.emb_size)
        self.layers = nn.ModuleList(
            ONLSTMLayer(inp, hid, config.chunk_size, config.weight_drop, config.master_input)
            for inp, hid in config.layer_sizes())
        self.decoder_bias = nn.Parameter(torch.zeros(config.vocab_size))
        self.lockdrop = LockedDropout()
        nn.init.uniform_(self.embedding.weight, -0.1, 0.1)

    def init_state(self, batch_size: int) -> list:
        w = self.embedding.weight
        return [(w.new_zeros(batch_size, layer.hidden_size), w.new_zeros(batch_size, layer.hidden_size))
                for layer in self.layers]

    def forward(self, tokens: torch.Tensor, state=None, reference: bool = False,
                with_logits: bool = True, up_to_layer: int | None = None) -> LMOutput:
        """tokens: (T, B) word ids. Returns logits, the new state, and every layer's distances and gates.

        up_to_layer (1-based) stops after that layer — all that parsing with it needs; no logits then.
        """
        cfg = self.config
        if state is None:
            state = self.init_state(tokens.shape[1])
        x = embedding_dropout(self.embedding, tokens, cfg.dropout_e, self.training)
        x = self.lockdrop(x, cfg.dropout_i)
        new_state, distances, forget, inputs = [], [], [], []
        layers = self.layers if up_to_layer is None else self.layers[:up_to_layer]
        with_logits = with_logits and len(layers) == len(self.layers)
        for k, layer in enumerate(layers):
            x, layer_state, master_f, master_i = layer(x, state[k], reference=reference)
            new_state.append(layer_state)
            distances.append(forget_distance(master_f))
            forget.append(master_f)
            inputs.append(master_i)
            x = self.lockdrop(x, cfg.dropout_h if k < len(self.layers) - 1 else cfg.dropout)
        logits = F.linear(x, self.embedding.weight, self.decoder_bias) if with_logits else None
        return LMOutput(logits, new_state, distances, forget, inputs)
