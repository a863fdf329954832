"""The ON-LSTM maths of Shen et al. (ICLR 2019), written to be read beside the paper.

This is the definition: the fast backends (`onlstm_cli.fast`) compute the same things and are tested
against `reference_layer` to 1e-5. Cell state layout: the hidden size H is cut into n = H / chunk_size
levels; master gates live at level resolution and are repeated over the chunk_size neurons of a level.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from onlstm_cli.config import MASTER_INPUT_RULES


def cumax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """cumsum(softmax(x)): a soft version of a 0…0 1…1 step vector, increasing from ~0 to exactly 1."""
    return torch.cumsum(F.softmax(x, dim=dim), dim=dim)


def master_forget_gate(logits: torch.Tensor) -> torch.Tensor:
    """f̃ = cumax(x): ones from the split level d_f up (history kept in the high-ranking neurons)."""
    return cumax(logits)


def master_input_gate(logits: torch.Tensor, rule: str = "paper") -> torch.Tensor:
    """The decreasing master input gate ĩ.

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
    """d_f = n + 1 − Σ_k f̃(k): the expected split level Σ_k k·p_f(k); large = little history kept,
    so a new constituent starts at this word."""
    n = master_forget.shape[-1]
    return (n + 1) - master_forget.sum(-1)


def cell_update(c_prev, c_hat, f, i, master_f, master_i):
    """c_t = ω∘(f∘c_{t−1} + i∘ĉ) + (f̃−ω)∘c_{t−1} + (ĩ−ω)∘ĉ, with ω = f̃∘ĩ.

    Where the master gates overlap (ω) the cell is a plain LSTM; above it history is copied, below it the
    input is written. Tensors are (..., n, chunk) except the master gates, which are (..., n, 1) and
    broadcast over a chunk.
    """
    overlap = master_f * master_i
    return overlap * (f * c_prev + i * c_hat) + (master_f - overlap) * c_prev + (master_i - overlap) * c_hat


def gate_size(hidden_size: int, chunk_size: int) -> int:
    """Rows of a layer's gate pre-activations: two master gates of n levels, then o, ĉ, i, f of H each."""
    return 2 * (hidden_size // chunk_size) + 4 * hidden_size


def split_gates(gates: torch.Tensor, n: int, chunk: int):
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
        mi, mf, o, c_hat, i, f = split_gates(gates, n, chunk_size)
        master_f = master_forget_gate(mf)
        master_i = master_input_gate(mi, master_input)
        c = cell_update(c, torch.tanh(c_hat), torch.sigmoid(f), torch.sigmoid(i),
                        master_f[..., None], master_i[..., None])
        h = torch.sigmoid(o).flatten(-2) * torch.tanh(c).flatten(-2)
        outputs.append(h)
        forget_gates.append(master_f)
        input_gates.append(master_i)
    return (torch.stack(outputs), c.flatten(-2), torch.stack(forget_gates).detach(),
            torch.stack(input_gates).detach())
