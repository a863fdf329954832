"""The speed code, behind one seam: `select(device, dtype)` picks the backend that runs a layer, and the
functions below run it. Nothing outside this package knows which backend runs.

A backend is a cell (who does a time step's elementwise work) and a kind of product:

    cell "c"       cell_kernel.c, compiled on first use      CPU, float32
    cell "triton"  one Triton kernel per step and direction  CUDA (with the `gpu` extra: triton)
    cell "torch"   a dozen torch kernels per step            anywhere; the fallback of the others
    oneDNN         packed step products (private torch ops)  CPU, float32; else torch's matmul

and, for a self-trained file's span parser, span scores and CKY in C (span.py) or in torch; for a neural PCFG,
the inside and outside passes over its low-rank rules (inside.py: torch, by hand, on any device; their exponents
floored and denormal floats flushed, which a CPU computes many times slower and a trained grammar makes many of).

Each fast piece is probed once against the torch path before it is chosen, and `forced(...)` (tests,
benchmarks) or ONLSTM_BACKEND=torch (users chasing a problem) pins the plain torch path.
"""
from __future__ import annotations

import contextlib
import functools
import os
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from onlstm_cli.config import MASTER_INPUT_RULES
from onlstm_cli.fast import ckernel, onednn
from onlstm_cli.fast.onednn import PARSE_KERNEL_CACHE, size_kernel_cache  # noqa: F401  (what commands call)
from onlstm_cli.fast.recurrence import PACKED_ROWS, LayerFunction, inference_layer, packed_inference_layer
from onlstm_cli.fast.inside import FORBIDDEN, denormals_flushed, logsumexp
from onlstm_cli.fast.inside import inside as pcfg_inside, marginals as pcfg_marginals
from onlstm_cli.fast.span import span_trees


# A child forked from a process whose OpenMP team has run (any parse or training step here) hangs in its
# first parallel region (GNU libgomp keeps no team across fork): such a child, a worker of a process pool
# mapping `Parser.parse`, runs on one thread, as a pool's worker should anyway.
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=lambda: torch.set_num_threads(1))


@dataclass(frozen=True)
class Backend:
    device: str   # torch device type
    cell: str     # "c", "triton" or "torch"
    onednn: bool  # products by oneDNN

    @property
    def packs_sentences(self) -> bool:
        """Whether parsing can step through sentences packed longest first (`packed_layer`)."""
        return self.cell == "c"

    def __str__(self) -> str:
        return f"{self.device}: {self.cell} cell, {'oneDNN' if self.onednn else 'torch'} products"


_FORCED: dict = {}


@contextlib.contextmanager
def forced(cell: str | None = None, onednn: bool | None = None):
    """Run with the cell and/or kind of product pinned (a cell that cannot run here raises ValueError)."""
    saved = dict(_FORCED)
    _FORCED.update({k: v for k, v in (("cell", cell), ("onednn", onednn)) if v is not None})
    try:
        yield
    finally:
        _FORCED.clear()
        _FORCED.update(saved)


def select(device, dtype: torch.dtype) -> Backend:
    """The backend for tensors of `dtype` on `device`."""
    plain = os.environ.get("ONLSTM_BACKEND", "").lower() == "torch"
    return _select(torch.device(device).type, dtype, _FORCED.get("cell", "torch" if plain else None),
                   _FORCED.get("onednn", False if plain else None))


def backend_of(tensor: torch.Tensor) -> Backend:
    return select(tensor.device, tensor.dtype)


@functools.lru_cache(maxsize=None)
def _select(device: str, dtype: torch.dtype, cell: str | None, use_onednn: bool | None) -> Backend:
    cpu32 = device == "cpu" and dtype == torch.float32
    if cpu32:
        onednn.default_kernel_cache()  # before the probes' first product, which is when oneDNN reads it
    products = cpu32 and onednn.works() if use_onednn is None else use_onednn
    if products and not (cpu32 and onednn.works()):
        raise ValueError(f"oneDNN products cannot run on {device} in {dtype} here")
    usable = {"torch": True, "c": cpu32 and c_cell_works(),
              "triton": device == "cuda" and dtype == torch.float32 and triton_cell_works()}
    if cell is None:
        cell = "c" if usable["c"] else "triton" if usable["triton"] else "torch"
    elif not usable.get(cell, False):
        raise ValueError(f"the {cell} cell cannot run on {device} in {dtype} here")
    return Backend(device, cell, products)


def _layers_agree(device: str, cell: str) -> bool:
    """A tiny layer through `cell` and through torch, forward and backward, both master-input rules."""
    g = torch.Generator().manual_seed(0)
    n, chunk = 3, 2
    H, G = n * chunk, 2 * n + 4 * n * chunk
    inputs = [torch.randn(*shape, generator=g).to(device) for shape in ((3, 2, G), (G, H), (2, H), (2, H))]
    with torch.inference_mode(False), torch.enable_grad():  # the first caller may be parsing
        for rule in MASTER_INPUT_RULES:
            results = []
            for backend in (Backend(device, cell, False), Backend(device, "torch", False)):
                x, w, h0, c0 = [t.clone().requires_grad_() for t in inputs]
                out, c_last, master_f, master_i = LayerFunction.apply(x, w, h0, c0, chunk, rule, backend)
                grads = torch.autograd.grad((out * out).sum() + c_last.sum(), (x, w, h0, c0))
                results.append((out, c_last, master_f, master_i, *grads))
            if not all(torch.allclose(a, b, atol=1e-5) for a, b in zip(*results)):
                return False
    return True


@functools.lru_cache(maxsize=None)
def c_cell_works() -> bool:
    """Whether the C cell kernel was built and agrees with the torch path (probed once)."""
    return ckernel.load() is not None and _layers_agree("cpu", "c")


@functools.lru_cache(maxsize=None)
def triton_cell_works() -> bool:
    """Whether triton is installed, a GPU is there, and the Triton cell agrees with the torch path."""
    try:
        from onlstm_cli.fast import triton_cell
    except ImportError:
        return False
    if not (triton_cell.available() and torch.cuda.is_available()):
        return False
    try:  # a triton that cannot compile here (no ptxas, an unsupported GPU) leaves the torch cell
        return _layers_agree("cuda", "triton")
    except Exception:  # noqa: BLE001 — any failure of the probe means: not this backend
        return False


# --- what the model runs -----------------------------------------------------------------------------

def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """F.linear, by oneDNN where the backend has it."""
    if backend_of(x).onednn:
        return onednn.Linear.apply(x, weight, bias)
    return F.linear(x, weight, bias)


def layer(x_gates, w_hh, h0, c0, chunk_size: int, master_input: str, prepared: "PreparedWeights | None" = None):
    """One ON-LSTM layer over x_gates (T, B, G) from (h0, c0): outputs (T, B, H), last cell, master forget
    and input gates (T, B, n). With gradients wanted it keeps what the backward pass needs; without, it
    keeps nothing and uses `prepared`'s cached step weight when w_hh is that cache's weight."""
    backend = backend_of(x_gates)
    if torch.is_grad_enabled() and (x_gates.requires_grad or w_hh.requires_grad):
        return LayerFunction.apply(x_gates, w_hh, h0, c0, chunk_size, master_input, backend)
    w_step = prepared.recurrent(w_hh, x_gates.shape[1]) if prepared is not None else None
    return inference_layer(x_gates, w_hh, h0, c0, chunk_size, master_input, backend, w_step)


def packed_layer(prepared: "PreparedWeights", x_gates, x, batch_sizes: list[int], h0, c0, chunk_size: int,
                 master_input: str, bias: torch.Tensor, top: bool):
    """A layer over packed sequences (see `recurrence.packed_inference_layer`): from x_gates, the input
    projections, when given; else from x with the joined weight. `top`: only master gates at the end."""
    if x_gates is not None:
        w_step = prepared.recurrent(prepared.hh, batch_sizes[0])
        return packed_inference_layer(x_gates, batch_sizes, w_step, h0, c0, chunk_size, master_input)
    return packed_inference_layer(None, batch_sizes, prepared.joined(batch_sizes[0]), h0, c0, chunk_size,
                                  master_input, x=x, bias=bias,
                                  w_masters=prepared.joined(batch_sizes[0], masters_only=True) if top else None)


class PreparedWeights:
    """A layer's weights prepared for step products (packing costs a copy of the weight), kept between
    calls at inference, where the weights are unchanged from batch to batch, and redone when either
    changes (tensor versions count every in-place update, an optimizer step included)."""

    def __init__(self, ih: torch.Tensor, hh: torch.Tensor, n_levels: int):
        self.ih, self.hh, self.n_levels = ih, hh, n_levels
        self._recurrent = None  # (key, w_hh prepared)
        self._joined = None     # (key, [W_ih | W_hh] prepared, its first 2n rows prepared)

    def __getstate__(self):
        # A copy or a saved module leaves the prepared weights behind (oneDNN's packed layout is an opaque
        # tensor that can be neither copied nor pickled); they are prepared again on first use.
        return {**self.__dict__, "_recurrent": None, "_joined": None}

    @staticmethod
    def _key(*weights):
        return tuple((w.data_ptr(), w._version, w.device, w.dtype) for w in weights) + (backend_of(weights[0]),)

    def recurrent(self, w_hh: torch.Tensor, batch_size: int):
        use_onednn = backend_of(w_hh).onednn
        if w_hh is not self.hh:  # DropConnect drew a fresh matrix
            return onednn.step_weight(w_hh, batch_size, use_onednn)
        key = self._key(self.hh)
        if self._recurrent is None or self._recurrent[0] != key:
            self._recurrent = (key, onednn.step_weight(self.hh, batch_size, use_onednn))
        return self._recurrent[1]

    def joined(self, batch_size: int, masters_only: bool = False):
        """[W_ih | W_hh] prepared, or its first 2n rows alone (the master gates')."""
        key = self._key(self.ih, self.hh)
        if self._joined is None or self._joined[0] != key:
            use_onednn = backend_of(self.ih).onednn
            joined = torch.cat([self.ih.detach(), self.hh.detach()], 1)
            self._joined = (key, onednn.step_weight(joined, batch_size, use_onednn),
                            onednn.step_weight(joined[:2 * self.n_levels], batch_size, use_onednn))
        return self._joined[2 if masters_only else 1]


def drop_mask(like: torch.Tensor, p: float) -> torch.Tensor:
    """A mask shaped (and laid out) like `like`: 0 with probability p, else 1/(1 − p).

    The C kernel draws it where it runs (counter-based random numbers seeded from torch's generator, so
    torch.manual_seed still reproduces a run): torch's uniform_ plus a comparison took four times as long.
    """
    if backend_of(like).cell != "c":
        return torch.rand_like(like).ge_(p).div_(1 - p)
    mask = torch.empty_like(like)  # the same memory layout, so that weight * mask keeps it
    ckernel.load().drop_mask(mask, int(torch.randint(0, 2 ** 62, (1,)).item()), p)
    return mask


def decoder_loss(hidden: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, targets: torch.Tensor,
                 reduction: str = "mean") -> torch.Tensor:
    """cross_entropy(hidden·weightᵀ + bias, targets) for hidden (rows × E) and targets (rows,): the tied
    decoder's training loss, on CPU without keeping the logits (fast/loss.py). reduction: "mean" or "sum"."""
    vocab = weight.shape[0]
    if targets.numel() and not 0 <= int(targets.min()) <= int(targets.max()) < vocab:
        raise IndexError(f"target word ids must lie in [0, {vocab})")
    backend = backend_of(hidden)
    if backend.onednn and backend.cell == "c" and targets.dtype == torch.int64:
        from onlstm_cli.fast.loss import DecoderCrossEntropy
        # (needs_input_grad inside forward says True under no_grad too: validation would form gradients)
        want_grad = torch.is_grad_enabled() and any(t.requires_grad for t in (hidden, weight, bias))
        total = DecoderCrossEntropy.apply(hidden.contiguous(), weight, bias, targets, want_grad)
    else:
        total = F.cross_entropy(linear(hidden, weight, bias), targets, reduction="sum")
    return total if reduction == "sum" else total / max(targets.numel(), 1)


def recurrent_parameter(weight: torch.Tensor) -> torch.nn.Parameter:
    """A recurrent layer's weight as a parameter, in the layout its gradients come in (`onednn.column_major`)."""
    return torch.nn.Parameter(onednn.column_major(weight.detach()))


__all__ = ["FORBIDDEN", "denormals_flushed", "logsumexp", "pcfg_inside", "pcfg_marginals", "Backend", "select", "backend_of", "forced", "linear", "layer", "packed_layer", "PreparedWeights",
           "drop_mask", "decoder_loss", "recurrent_parameter", "size_kernel_cache", "PARSE_KERNEL_CACHE",
           "PACKED_ROWS", "span_trees"]
