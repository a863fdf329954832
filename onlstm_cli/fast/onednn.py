"""Matrix products on CPU by oneDNN, through torch's private `torch.ops.mkldnn` ops.

Each op is used only after `works()` has probed it on a tiny product; where the probe fails (a torch
build without oneDNN, an op that changed) the selector picks plain torch products instead. Why oneDNN:
at this tool's shapes torch's default CPU matmul (MKL) ran at about two thirds of oneDNN's rate, and at
the few rows of one time step a plain matmul reached a third of what the machine can do, where oneDNN's
blocked layout, packed once per sequence, ran the same product faster (figures: benchmarks/README.md).
"""
from __future__ import annotations

import functools
import os

import torch

STEP_ROWS = 64

# oneDNN (the CPU matmuls) and torch's layer over it each keep a compiled kernel with its buffers for every
# matrix shape they meet, up to 1024 of them. Training's window lengths vary from batch to batch, and a
# training run's memory grew by a gigabyte that way; the shapes that recur every step are a handful, so 16 costs
# training no speed. Parsing is the other way round (see `size_kernel_cache`). Both are read when the
# first matmul runs; a user's own setting wins.
KERNEL_CACHE_VARIABLES = ("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "LRU_CACHE_CAPACITY")
TRAIN_KERNEL_CACHE = 16
PARSE_KERNEL_CACHE = 256


def default_kernel_cache() -> None:
    """Training's cap, set when the CPU backend is first chosen, unless a command or the user chose first."""
    for name in KERNEL_CACHE_VARIABLES:
        if name not in os.environ:
            os.environ[name] = str(TRAIN_KERNEL_CACHE)
            os.environ["_ONLSTM_SET_" + name] = "1"


def size_kernel_cache(capacity: int) -> None:
    """Keep up to `capacity` compiled oneDNN kernels in this process, unless the user has chosen.

    oneDNN reads it at the process's first CPU matmul, so only a call before that counts. Packed parsing
    steps through batch sizes 64, 63, … 1 and the products' shapes change with them: with 16 kernels kept,
    each batch compiled most of its kernels again.
    """
    name = "ONEDNN_PRIMITIVE_CACHE_CAPACITY"
    if name not in os.environ or os.environ.get("_ONLSTM_SET_" + name):
        os.environ[name] = str(capacity)
        os.environ["_ONLSTM_SET_" + name] = "1"  # ours, so a later call may change it


@functools.lru_cache(maxsize=None)
def works() -> bool:
    """Whether this torch build runs oneDNN's packed linear correctly (probed once, on a tiny product)."""
    g = torch.Generator().manual_seed(0)  # not torch's global stream: a probe must not move a seeded run's weights
    try:
        weight, x, add = (torch.randn(*shape, generator=g) for shape in ((5, 3), (2, 3), (2, 5)))
        packed = torch.ops.mkldnn._reorder_linear_weight(weight, 2)
        result = torch.ops.mkldnn._linear_pointwise.binary(x, add, packed, None, "add")
        return torch.backends.mkldnn.is_available() and torch.allclose(result, add + x @ weight.t(), atol=1e-5)
    except (AttributeError, RuntimeError, NotImplementedError):
        return False


def step_weight(weight: torch.Tensor, batch_size: int, onednn: bool):
    """`weight` (out, in) prepared for the per-time-step products `add + x·weightᵀ` of a recurrence.

    With `onednn`, packed into oneDNN's blocked layout, chosen for at least STEP_ROWS rows: the one oneDNN
    picks for a single row made products of 20–256 rows slower, while the layouts for 20 or more rows all
    run a single row as fast. Otherwise the weight is used as it is.
    """
    if onednn:
        return ("onednn", torch.ops.mkldnn._reorder_linear_weight(weight.detach().contiguous(),
                                                                  max(batch_size, STEP_ROWS)))
    return ("plain", weight.t())


def step_linear(x: torch.Tensor, prepared, add: torch.Tensor | None = None,
                bias: torch.Tensor | None = None) -> torch.Tensor:
    """add + x·weightᵀ, or x·weightᵀ + bias (either may be None), with a weight from `step_weight`.

    The sum is a separate add_: oneDNN's fused "add" post-op made the product itself slower.
    """
    kind, w = prepared
    if kind == "onednn":
        product = torch.ops.mkldnn._linear_pointwise(x, w, bias if add is None else None, "none", [], "")
        return product if add is None else product.add_(add)
    if add is None:
        return torch.mm(x, w) if bias is None else torch.addmm(bias, x, w)
    return torch.addmm(add, x, w)


def mm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """x·weightᵀ + bias for 2-D x by oneDNN (weight may be a transposed view)."""
    return torch.ops.mkldnn._linear_pointwise(x, weight, bias, "none", [], "")


def weight_grad(d_out: torch.Tensor, x: torch.Tensor, like: torch.Tensor | None, onednn: bool) -> torch.Tensor:
    """d_outᵀ·x for 2-D (rows × out) and (rows × in): the gradient of a weight (out × in), laid out in
    memory like `like` (the weight) where that is column-major (see `column_major`)."""
    if onednn:
        product = mm(x.contiguous().t(), d_out.t())  # xᵀ·d_out, both operands read transposed in place
    else:
        product = x.t() @ d_out
    return product.t() if like is not None and is_column_major(like) else product.t().contiguous()


class Linear(torch.autograd.Function):
    """x·weightᵀ + bias with the product and both its gradients run by oneDNN."""

    @staticmethod
    def forward(ctx, x, weight, bias):
        ctx.save_for_backward(x, weight)
        ctx.has_bias = bias is not None
        flat = x.reshape(-1, x.shape[-1])
        return mm(flat, weight, bias).view(*x.shape[:-1], weight.shape[0])

    @staticmethod
    def backward(ctx, d_out):
        x, weight = ctx.saved_tensors
        d_flat = d_out.reshape(-1, d_out.shape[-1])
        d_x = d_weight = d_bias = None
        if ctx.needs_input_grad[0]:
            d_x = mm(d_flat, weight.t()).view(x.shape)
        if ctx.needs_input_grad[1]:
            d_weight = weight_grad(d_flat, x.reshape(-1, x.shape[-1]), weight, True)
        if ctx.has_bias and ctx.needs_input_grad[2]:
            d_bias = d_flat.sum(0)
        return d_x, d_weight, d_bias


def column_major(weight: torch.Tensor) -> torch.Tensor:
    """`weight` (out × in) with the same values, stored column by column (strides (1, out)).

    oneDNN writes weight gradients column-major, and autograd copies a gradient whose layout differs from
    its parameter's; kept in that layout, the recurrent weights' gradients need no copy. The products read
    either layout at the same speed.
    """
    return weight.t().contiguous().t()


def is_column_major(weight: torch.Tensor) -> bool:
    return weight.dim() == 2 and weight.stride() == (1, weight.shape[0])
