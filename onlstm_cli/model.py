"""The ON-LSTM cell and the stacked ON-LSTM language model (Shen et al., ICLR 2019).

Two implementations of one layer live here:

* `reference_layer` — the cell written out step by step exactly as in the paper; autograd does the rest.
  It is the readable definition and the oracle the tests compare against.
* `ONLSTMLayerFunction` — the same maths as a hand-written `autograd.Function` over a whole sequence:
  the input projection is one matmul outside the loop, the per-step recurrent products use a weight
  packed once per sequence (oneDNN on CPU), the backward pass loops only over the recurrent part and
  forms the recurrent weight gradient as a single large matmul. This is what training uses;
  `inference_layer` is its forward pass without the saved activations (parsing, validation).
  The elementwise part of each step runs either as torch kernels (`_torch_steps`, `_torch_backward`)
  or, on CPU in float32, as one fused C pass per step (`_fused_steps`, `_fused_backward`; see
  cell_kernel.py), which is several times faster and falls back to torch where it cannot be built.
  Parsing with the C cell runs `packed_inference_layer`, which steps through sentences of different
  lengths packed longest first instead of padded.

The LM trains on `decoder_loss`: the tied decoder's softmax cross-entropy computed a chunk of rows at a
time by the same C file, never holding the whole (tokens × vocabulary) logits (`forward(..., targets=)`).

Cell state layout: the hidden size H is cut into n = H / chunk_size levels; master gates live at level
resolution and are repeated over the chunk_size neurons of each level.
"""
from __future__ import annotations

import functools
import os
import threading
from dataclasses import asdict, dataclass, field

import torch
import torch.nn as nn
import torch.nn.functional as F

from . import cell_kernel
from .errors import OnlstmError

MASTER_INPUT_RULES = ("paper", "symmetric")

# oneDNN (the CPU matmuls) and torch's layer over it each keep a compiled kernel with its buffers for every
# matrix shape they meet, up to 1024 of them. Training's window lengths vary from batch to batch: a training
# run grew to 1.7 GB that way (750 MB with 16), and the shapes that recur every step are a handful, so 16
# costs training no speed. Parsing is the other way round (see `size_kernel_cache`). Both are read when the
# first matmul runs, so setting them here is in time; a user's own setting wins.
_USER_KERNEL_CACHE = "ONEDNN_PRIMITIVE_CACHE_CAPACITY" in os.environ
for _cache in ("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "LRU_CACHE_CAPACITY"):
    os.environ.setdefault(_cache, "16")

PARSE_KERNEL_CACHE = 256


def size_kernel_cache(capacity: int) -> None:
    """Keep up to `capacity` compiled oneDNN kernels in this process (unless the user has set
    ONEDNN_PRIMITIVE_CACHE_CAPACITY). oneDNN reads it at the process's first CPU matmul, so only a call
    before that counts; `onlstm parse` and `evaluate` call it with PARSE_KERNEL_CACHE first thing.

    Packed parsing steps through batch sizes 64, 63, … 1 and the products' shapes change with them: with 16
    kernels kept, each batch compiled most of its kernels again, and distances ran about 10% slower.
    """
    if not _USER_KERNEL_CACHE:
        os.environ["ONEDNN_PRIMITIVE_CACHE_CAPACITY"] = str(capacity)


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


@functools.lru_cache(maxsize=None)
def onednn_linear_works() -> bool:
    """Whether this torch build runs oneDNN's packed linear correctly (probed once, on a tiny product)."""
    try:
        weight, x, add = torch.randn(5, 3), torch.randn(2, 3), torch.randn(2, 5)
        packed = torch.ops.mkldnn._reorder_linear_weight(weight, 2)
        result = torch.ops.mkldnn._linear_pointwise.binary(x, add, packed, None, "add")
        return torch.backends.mkldnn.is_available() and torch.allclose(result, add + x @ weight.t(), atol=1e-5)
    except (AttributeError, RuntimeError, NotImplementedError):
        return False


ONEDNN_LINEAR = True  # tests switch it off to run the plain matmul path
STEP_ROWS = 64


def step_weight(weight: torch.Tensor, batch_size: int):
    """`weight` (out, in) prepared for the per-time-step products `add + x·weightᵀ` of a recurrence.

    At the few rows of one time step (a batch of 20–64) a plain CPU matmul reaches a third of what the
    machine can do; oneDNN's blocked layout, packed once per sequence, runs the same float32 product
    1.3–3× faster. Elsewhere (GPU, float64, torch builds without oneDNN) the weight is used as it is.
    The layout is chosen for at least STEP_ROWS rows: the one oneDNN picks for a single row made products
    of 20–256 rows 10–25% slower, while the layouts for 20 or more rows all run a single row as fast.
    """
    if (ONEDNN_LINEAR and weight.device.type == "cpu" and weight.dtype == torch.float32
            and onednn_linear_works()):
        return ("onednn", torch.ops.mkldnn._reorder_linear_weight(weight.detach().contiguous(),
                                                                  max(batch_size, STEP_ROWS)))
    return ("plain", weight.t())


def step_linear(x: torch.Tensor, prepared, add: torch.Tensor | None = None,
                bias: torch.Tensor | None = None) -> torch.Tensor:
    """add + x·weightᵀ, or x·weightᵀ + bias (either may be None), with a weight from `step_weight`.

    The sum is a separate add_: oneDNN's fused "add" post-op made the product itself slower: 1.34 against
    1.17 ms at 20 × 1150 → 4830 (400/1150 training), and in the parsing loop the step products of 1,000
    sentences took 496 ms with the post-op against 445 with add_.
    """
    kind, w = prepared
    if kind == "onednn":
        product = torch.ops.mkldnn._linear_pointwise(x, w, bias if add is None else None, "none", [], "")
        return product if add is None else product.add_(add)
    if add is None:
        return torch.mm(x, w) if bias is None else torch.addmm(bias, x, w)
    return torch.addmm(add, x, w)


def use_onednn(x: torch.Tensor) -> bool:
    return ONEDNN_LINEAR and x.device.type == "cpu" and x.dtype == torch.float32 and onednn_linear_works()


def _onednn_mm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """x·weightᵀ + bias for 2-D x by oneDNN (weight may be a transposed view)."""
    return torch.ops.mkldnn._linear_pointwise(x, weight, bias, "none", [], "")


def weight_grad(d_out: torch.Tensor, x: torch.Tensor, like: torch.Tensor | None = None) -> torch.Tensor:
    """d_outᵀ·x for 2-D (rows × out) and (rows × in): the gradient of a weight (out × in), laid out in
    memory like `like` (the weight) where that is column-major (see `column_major`)."""
    if use_onednn(x):
        product = _onednn_mm(x.contiguous().t(), d_out.t())  # xᵀ·d_out, both operands read transposed in place
    else:
        product = x.t() @ d_out
    return product.t() if like is not None and is_column_major(like) else product.t().contiguous()


class OneDNNLinear(torch.autograd.Function):
    """x·weightᵀ + bias with the product and both its gradients run by oneDNN.

    torch's default CPU matmul (MKL) reaches 110–165 GFLOP/s at this tool's shapes on the AMD machines it
    is developed on, oneDNN 180–220, the rate torch.nn.LSTM's own fused kernel runs at.
    """

    @staticmethod
    def forward(ctx, x, weight, bias):
        ctx.save_for_backward(x, weight)
        ctx.has_bias = bias is not None
        flat = x.reshape(-1, x.shape[-1])
        return _onednn_mm(flat, weight, bias).view(*x.shape[:-1], weight.shape[0])

    @staticmethod
    def backward(ctx, d_out):
        x, weight = ctx.saved_tensors
        d_flat = d_out.reshape(-1, d_out.shape[-1])
        d_x = d_weight = d_bias = None
        if ctx.needs_input_grad[0]:
            d_x = _onednn_mm(d_flat, weight.t()).view(x.shape)
        if ctx.needs_input_grad[1]:
            d_weight = weight_grad(d_flat, x.reshape(-1, x.shape[-1]), weight)
        if ctx.has_bias and ctx.needs_input_grad[2]:
            d_bias = d_flat.sum(0)
        return d_x, d_weight, d_bias


def column_major(weight: torch.Tensor) -> torch.Tensor:
    """`weight` (out × in) with the same values, stored column by column (strides (1, out)).

    The recurrent layers keep their weights so. Their gradients come out of oneDNN column-major, and
    autograd copies a gradient whose layout differs from its parameter's: stored row-major, that copy
    took 7–15 ms per 4830 × 1150 weight, three of them per 400/1150 training step. The products read
    either layout at the same speed.
    """
    return weight.t().contiguous().t()


def is_column_major(weight: torch.Tensor) -> bool:
    return weight.dim() == 2 and weight.stride() == (1, weight.shape[0])


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """F.linear, by oneDNN on CPU in float32 where it works."""
    if use_onednn(x):
        return OneDNNLinear.apply(x, weight, bias)
    return F.linear(x, weight, bias)


def drop_connect(weight: torch.Tensor, p: float, training: bool) -> torch.Tensor:
    """DropConnect: each weight zeroed with probability p, the rest scaled by 1/(1 − p)."""
    if not training or p == 0:
        return weight
    return weight * drop_mask(weight, p)


def drop_mask(like: torch.Tensor, p: float) -> torch.Tensor:
    """A mask shaped like `like`: 0 with probability p, else 1/(1 − p).

    On CPU the C kernel draws it (counter-based random numbers seeded from torch's generator, so
    torch.manual_seed still reproduces a run): drawing 5.5M uniforms with torch took 3% of a 400/1150
    training step, torch's bernoulli (what F.dropout uses) four times that. Elsewhere: uniform ≥ p.
    """
    kernel = cell_kernel.load() if FUSED_CELL and like.device.type == "cpu" and like.dtype == torch.float32 else None
    if kernel is None:
        return torch.rand_like(like).ge_(p).div_(1 - p)
    mask = torch.empty_like(like)  # the same memory layout, so that weight * mask keeps it
    seed = int(torch.randint(0, 2 ** 62, (1,)).item())
    threshold = min(round(p * 2 ** 32), 2 ** 32 - 1)
    kernel.onlstm_drop_mask(mask.numel(), seed, threshold, 1.0 / (1 - p), mask.data_ptr())
    return mask


def cumsum_matrix(n: int, master_input: str, like: torch.Tensor):
    """The master gates of both kinds in one small product: [ĩ | f̃] = [p_i | p_f]·M + b.

    M is block-diagonal: the f̃ block is cumsum (upper-triangular ones); the ĩ block is −cumsum with b = 1
    for the paper's 1 − cumax, or the reverse cumsum (lower-triangular ones) for the symmetric rule.
    One (B × 2n)(2n × 2n) product replaces a cumsum, a flip or two and a subtraction per step.
    """
    upper = torch.ones(n, n, dtype=like.dtype, device=like.device).triu()
    matrix = like.new_zeros(2 * n, 2 * n)
    bias = like.new_zeros(2 * n)
    matrix[n:, n:] = upper
    if master_input == "symmetric":
        matrix[:n, :n] = upper.t()
    else:
        matrix[:n, :n] = -upper
        bias[:n] = 1.0
    return matrix, bias


_sigmoid_backward = torch.ops.aten.sigmoid_backward.grad_input
_tanh_backward = torch.ops.aten.tanh_backward.grad_input
_softmax_backward = torch.ops.aten._softmax_backward_data
_softmax = torch.ops.aten._softmax.out


def fast_tanh(x: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """tanh(x) = 2σ(2x) − 1, written to `out`: on CPU torch's tanh is about five times slower than its sigmoid."""
    if x.device.type != "cpu":
        return torch.tanh(x, out=out)
    torch.mul(x, 2.0, out=out)
    return torch.sigmoid(out, out=out).mul_(2.0).sub_(1.0)


FUSED_CELL = True  # tests switch it off to run the torch path (and torch's DropConnect masks)


@functools.lru_cache(maxsize=None)
def fused_cell_works() -> bool:
    """Whether the C cell kernel was built and agrees with the torch path (probed once, on tiny inputs,
    forward and backward, both master-input rules)."""
    if cell_kernel.load() is None:
        return False
    g = torch.Generator().manual_seed(0)
    n, chunk = 3, 2
    H, G = n * chunk, 2 * n + 4 * n * chunk
    inputs = [torch.randn(*shape, generator=g) for shape in ((3, 2, G), (G, H), (2, H), (2, H))]
    with torch.inference_mode(False), torch.enable_grad():  # the first caller may be parsing
        return all(_fused_matches_torch(inputs, chunk, rule) for rule in MASTER_INPUT_RULES)


def _fused_matches_torch(inputs, chunk: int, rule: str) -> bool:
    results = []
    for fused in (True, False):
        x, w, h0, c0 = [t.clone().requires_grad_() for t in inputs]
        out, c_last, master_f, master_i = ONLSTMLayerFunction.apply(x, w, h0, c0, chunk, rule, fused)
        grads = torch.autograd.grad((out * out).sum() + c_last.sum(), (x, w, h0, c0))
        results.append((out, c_last, master_f, master_i, *grads))
    return all(torch.allclose(a, b, atol=1e-5) for a, b in zip(*results))


def use_fused_cell(x: torch.Tensor) -> bool:
    return FUSED_CELL and x.device.type == "cpu" and x.dtype == torch.float32 and fused_cell_works()


def _run_steps(x_gates, w_hh, h0, c0, chunk_size: int, master_input: str, saved: list | None,
               fused: bool, w_step=None):
    """The forward recurrence shared by training (`saved` collects what the backward needs) and inference.
    `w_step`: w_hh already prepared by `step_weight`, if the caller keeps it."""
    steps = _fused_steps if fused else _torch_steps
    w_step = step_weight(w_hh, x_gates.shape[1]) if w_step is None else w_step
    return steps(x_gates, w_hh, h0, c0, chunk_size, master_input, saved, w_step)


def _fused_steps(x_gates, w_hh, h0, c0, chunk_size: int, master_input: str, saved: list | None, w_step):
    """`_torch_steps` with each step's elementwise work done by the C kernel (CPU, float32)."""
    kernel = cell_kernel.load()
    T, B, _ = x_gates.shape
    H = w_hh.shape[1]
    n = H // chunk_size
    new = x_gates.new_empty
    train = saved is not None
    outputs = new(T + 1, B, H)                     # index t+1 holds h_t; training needs h_0 too, for dW_hh
    cells = new(T + 1 if train else 2, B, H)       # c_0 … c_T for training; inference alternates two rows
    masters = new(T, B, 2, n)                      # [ĩ, f̃]
    probs, acts, tanh_c = (new(T, B, 2, n), new(T, B, 4, H), new(T, B, H)) if train else (None, None, None)
    outputs[0] = h0
    cells[0] = c0
    hs, xs = outputs.unbind(0), x_gates.unbind(0)
    h_at, c_at, m_at, p_at, a_at, tc_at = (_row_pointer(t) for t in (outputs, cells, masters, probs, acts, tanh_c))
    symmetric = int(master_input == "symmetric")
    for t in range(T):
        gates = step_linear(hs[t], w_step, xs[t])
        prev, out = (t, t + 1) if train else (t % 2, (t + 1) % 2)
        if kernel.onlstm_forward_step(B, n, chunk_size, symmetric, gates.data_ptr(), gates.stride(0),
                                      c_at(prev), c_at(out), h_at(t + 1), m_at(t), p_at(t), a_at(t), tc_at(t)):
            raise MemoryError("out of memory in the ON-LSTM cell kernel")
    c_last = cells[T if train else T % 2]
    if train:
        saved.extend((w_hh, outputs, cells, probs, masters, acts, tanh_c))
    return outputs[1:], c_last.clone(), masters[:, :, 1], masters[:, :, 0]


def _row_pointer(buffer: torch.Tensor | None):
    """t → address of buffer[t] (None for no buffer), without making a view per step."""
    if buffer is None:
        return lambda t: None
    base, step = buffer.data_ptr(), buffer.stride(0) * buffer.element_size()
    return lambda t: base + t * step


def _fused_backward(saved, d_out, d_c, chunk: int, master_input: str, need_h0: bool = True):
    kernel = cell_kernel.load()
    w_hh, hs, cells, probs, masters, acts, tanh_c = saved
    T, B, H = tanh_c.shape
    n, G = H // chunk, w_hh.shape[0]
    d_gates = hs.new_empty(T, B, G)
    w_back = step_weight(w_hh.t(), B)  # for d_h = dg·W_hh
    c_at, m_at, p_at, a_at, tc_at, dg_at = (_row_pointer(t) for t in (cells, masters, probs, acts, tanh_c, d_gates))
    d_outs, dgs = d_out.unbind(0), d_gates.unbind(0)
    symmetric = int(master_input == "symmetric")
    dh = d_outs[T - 1]
    for t in range(T - 1, -1, -1):
        # c_{t−1} is cells[t]; d_c becomes dL/dc_{t−1} in place
        if kernel.onlstm_backward_step(B, n, chunk, symmetric, dh.data_ptr(), d_c.data_ptr(), a_at(t), tc_at(t),
                                       c_at(t), m_at(t), p_at(t), dg_at(t), G):
            raise MemoryError("out of memory in the ON-LSTM cell kernel")
        # the gradient reaching h_{t−1}: through the recurrence plus from its own output; none reaches a
        # start state that needs none (training detaches it between batches)
        if t > 0:
            dh = step_linear(dgs[t], w_back, d_outs[t - 1])
        else:
            dh = step_linear(dgs[t], w_back) if need_h0 else None
    d_w_hh = weight_grad(d_gates.view(T * B, G), hs[:-1].reshape(T * B, H), w_hh)
    return d_gates, d_w_hh, dh, d_c


def _torch_steps(x_gates, w_hh, h0, c0, chunk_size: int, master_input: str, saved: list | None, w_step):
    """The forward recurrence as torch kernels.

    Per step it runs about a dozen whole-batch kernels: both master gates' softmaxes share one call and
    their cumsums one small product; the input and forget paths are computed as one pair [I, F], laid out
    like the gates [i, f] and the master gates [ĩ, f̃]:  I = ĩ − ω + i∘ω,  F = f̃ − ω + f∘ω,
    c = F∘c_{t−1} + I∘ĉ, h = o∘tanh(c).
    """
    T, B, _ = x_gates.shape
    H = w_hh.shape[1]
    n = H // chunk_size
    new = x_gates.new_empty
    matrix, bias = cumsum_matrix(n, master_input, x_gates)
    train = saved is not None
    steps = T if train else 1                 # inference reuses one step's buffers
    p = new(steps, B, 2, n)                   # softmaxes [p_i, p_f]
    masters = new(T, B, 2, n)                 # [ĩ, f̃] at level resolution
    outputs = new(T + 1, B, H)                # index t+1 holds h_t; training needs h_0 too, for dW_hh
    pair = new(steps, B, 2, H)                # [ĉ_t, c_{t−1}]; the backward needs both
    acts = new(steps, B, 4, H)                # sigmoid of [o, ·, i, f]
    omega = new(steps, B, H)
    big = new(steps, B, 2, H)                 # [I, F]
    tanh_c = new(steps, B, H)
    m_full = new(B, 2, H)
    c_last = new(B, H)
    outputs[0] = h0
    pair[0][:, 1] = c0
    c_prev = pair[0][:, 1]
    for t in range(T):
        k = t if train else 0
        gates = step_linear(outputs[t], w_step, x_gates[t])
        p_t = _softmax(gates[:, :2 * n].view(B, 2, n), -1, False, out=p[k])
        torch.addmm(bias, p_t.view(B, 2 * n), matrix, out=masters[t].view(B, 2 * n))
        m_full.view(B, 2, n, chunk_size).copy_(masters[t][..., None].expand(B, 2, n, chunk_size))
        a = torch.sigmoid(gates[:, 2 * n:].view(B, 4, H), out=acts[k])
        c_hat = fast_tanh(gates[:, 2 * n + H:2 * n + 2 * H], out=pair[k][:, 0])
        w = torch.mul(m_full[:, 0], m_full[:, 1], out=omega[k])
        bg = torch.addcmul(m_full - w[:, None], a[:, 2:4], w[:, None], out=big[k])
        # training writes c_t where the next step's backward reads c_{t−1}; inference updates c in place
        c_out = c_last if t == T - 1 else pair[t + 1][:, 1] if train else c_prev
        c = torch.mul(bg[:, 1], c_prev, out=c_out).addcmul_(bg[:, 0], c_hat)
        torch.mul(a[:, 0], fast_tanh(c, out=tanh_c[k]), out=outputs[t + 1])
        c_prev = c
    if train:
        saved.extend((w_hh, outputs, pair, p, masters, acts, omega, big, tanh_c, matrix))
    return outputs[1:], c_prev.clone(), masters[:, :, 1], masters[:, :, 0]


class ONLSTMLayerFunction(torch.autograd.Function):
    """A whole ON-LSTM layer over a sequence with a hand-written backward (see module docstring).

    `fused` picks the C cell (`_fused_steps`/`_fused_backward`) or the torch kernels (`_torch_steps`/
    `_torch_backward`); None: the C cell wherever `use_fused_cell` allows it. In the torch path everything
    inside the loop is at neuron resolution, (B, H) or pairs (B, 2, H), so no elementwise op broadcasts
    over chunks, and the derivatives of the nonlinearities are fused aten kernels written straight into
    the gate-gradient buffer.
    """

    @staticmethod
    def forward(ctx, x_gates, w_hh, h0, c0, chunk_size: int, master_input: str, fused: bool | None = None):
        fused = use_fused_cell(x_gates) if fused is None else fused
        saved = []
        out, c_last, master_f, master_i = _run_steps(x_gates.contiguous(), w_hh, h0, c0, chunk_size,
                                                     master_input, saved, fused)
        ctx.save_for_backward(*saved)
        ctx.chunk_size, ctx.master_input, ctx.fused = chunk_size, master_input, fused
        master_f, master_i = master_f.contiguous(), master_i.contiguous()
        ctx.mark_non_differentiable(master_f, master_i)
        return out, c_last, master_f, master_i

    @staticmethod
    def backward(ctx, d_out, d_c_last, _d_mf, _d_mi):
        saved = ctx.saved_tensors
        hs = saved[1]
        T, B, H = hs.shape[0] - 1, hs.shape[1], hs.shape[2]
        d_c = d_c_last.contiguous().clone() if d_c_last is not None else hs.new_zeros(B, H)
        d_out = hs.new_zeros(T, B, H) if d_out is None else d_out.contiguous()
        run = _fused_backward if ctx.fused else _torch_backward
        return (*run(saved, d_out, d_c, ctx.chunk_size, ctx.master_input, ctx.needs_input_grad[2]), None, None, None)


def _torch_backward(saved, d_out, d_c, chunk: int, master_input: str, need_h0: bool = True):
    w_hh, hs, pair, p, masters, acts, omega, big, tanh_c, matrix = saved
    T, B, H = tanh_c.shape
    n = H // chunk
    G = w_hh.shape[0]
    d_gates = hs.new_empty(T, B, G)
    w_back = step_weight(w_hh.t(), B)  # for d_h = dg·W_hh
    tmp = hs.new_empty(B, H)
    dh = d_out[T - 1]
    for t in range(T - 1, -1, -1):
        a, w, bg = acts[t], omega[t], big[t]
        dg = d_gates[t]
        dg_cell = dg[:, 2 * n:].view(B, 4, H)
        # h = o∘tanh(c)
        _sigmoid_backward(torch.mul(dh, tanh_c[t], out=tmp), a[:, 0], grad_input=dg_cell[:, 0])
        d_c.add_(_tanh_backward(torch.mul(dh, a[:, 0], out=tmp), tanh_c[t], grad_input=tmp))
        # c = F∘c_{t−1} + I∘ĉ  →  d[I, F] = d_c∘[ĉ, c_{t−1}]
        d_big = d_c[:, None] * pair[t]
        _tanh_backward(torch.mul(d_c, bg[:, 0], out=tmp), pair[t][:, 0], grad_input=dg_cell[:, 1])
        # [I, F] = [ĩ, f̃] − ω + [i, f]∘ω
        _sigmoid_backward(d_big * w[:, None], a[:, 2:4], grad_input=dg_cell[:, 2:4])
        d_w = torch.mul(d_big, a[:, 2:4]).sub_(d_big).sum(1)
        # ω = ĩ∘f̃; the master gates are constant over a chunk, so sum to level resolution first
        d_m = d_big.view(B, 2, n, chunk).sum(-1)
        d_m.addcmul_(d_w.view(B, 1, n, chunk).sum(-1), masters[t].flip(1))
        d_p = torch.mm(d_m.view(B, 2 * n), matrix.t()).view(B, 2, n)
        # (its out= variant would ignore the strides of a slice of dg)
        dg[:, :2 * n].view(B, 2, n).copy_(_softmax_backward(d_p, p[t], -1, d_p.dtype))
        d_c.mul_(bg[:, 1])
        # the gradient reaching h_{t−1}: through the recurrence plus from its own output (see _fused_backward)
        if t > 0:
            dh = step_linear(dg, w_back, d_out[t - 1])
        else:
            dh = step_linear(dg, w_back) if need_h0 else None
    d_w_hh = weight_grad(d_gates.view(T * B, G), hs[:-1].reshape(T * B, H), w_hh)
    return d_gates, d_w_hh, dh, d_c


def inference_layer(x_gates, w_hh, h0, c0, chunk_size: int, master_input: str = "paper", w_step=None):
    """The forward pass of `ONLSTMLayerFunction` without the saved activations (parsing, validation)."""
    return _run_steps(x_gates.contiguous(), w_hh, h0, c0, chunk_size, master_input, None,
                      use_fused_cell(x_gates), w_step)


PACKED_ROWS = 64


def packed_inference_layer(x_gates, batch_sizes: list[int], w_step, h0, c0, chunk_size: int,
                           master_input: str = "paper", x=None, bias=None, w_masters=None):
    """`inference_layer` over sequences of different lengths packed time-major, longest first (the layout of
    torch.nn.utils.rnn.PackedSequence): rows off_t … off_t + batch_sizes[t] of x_gates (N, G) are step t of
    the batch_sizes[t] longest sequences. No step computes padding, so a batch may mix lengths freely.
    Fused C cell only (see `use_fused_cell`); `w_step` from `step_weight`. x_gates may have rows past
    N = sum(batch_sizes), which are ignored.

    Or, with x_gates None: `x` (N, I), the layer's inputs packed the same way, `w_step` the joined weight
    [W_ih | W_hh] (`ONLSTMLayer.joined_step_weight`) and `bias` the input bias. Each step is then one
    product of [x_t | h_{t−1}] with the joined weight, which at a batch of 64 runs at the rate of a large
    matmul (215 GFLOP/s here), where the input projection as one large matmul plus the recurrent steps
    with K = H ran at 175 (`benchmarks/README.md`).

    `w_masters`, in that mode, is the joined weight's first 2n rows alone, those of the master gates
    (`ONLSTMLayer.joined_step_weight`). Given, the layer is the last one a parse runs, whose outputs nothing
    reads past its own recurrence: each sequence's last step computes only its master gates, which saves a
    twentieth of the layer's products at 20 words a sentence. The outputs are then None.

    Returns the outputs, N rows rounded up to a multiple of PACKED_ROWS (zero past N), and the master forget
    gates (N, n), packed the same way. The rounding keeps the next layer's input projection to few matrix
    shapes, so oneDNN's kernel cache (see `size_kernel_cache`) stays small however much is parsed.
    """
    if w_masters is not None and x_gates is not None:
        raise ValueError("w_masters goes with the joined weight (x_gates None)")
    kernel = cell_kernel.load()
    N, B = sum(batch_sizes), batch_sizes[0]
    H = h0.shape[1]
    n = H // chunk_size
    outputs, masters = h0.new_empty(-(-N // PACKED_ROWS) * PACKED_ROWS, H), h0.new_empty(N, 2, n)
    outputs[N:] = 0
    cells = h0.new_empty(2, B, H)  # c_{t−1} and c_t, alternating
    cells[0] = c0
    c_at, h_at, m_at = _row_pointer(cells), _row_pointer(outputs), _row_pointer(masters)
    symmetric = int(master_input == "symmetric")
    if x_gates is None:
        width = x.shape[1]
        joined = h0.new_empty(N, width + H)  # row of step t: [x_t | h_{t−1}]
        joined[:, :width] = x[:N]
        joined[:B, width:] = h0
    prev_h, offset = h0, 0
    for t, size in enumerate(batch_sizes):
        # the rows whose step is computed in full: all, or in the top layer those that go on to step t + 1
        full = size if w_masters is None else batch_sizes[t + 1] if t + 1 < len(batch_sizes) else 0
        if x_gates is None:
            if t > 0:
                joined[offset:offset + size, width:] = prev_h[:size]
            if full < size:
                logits = step_linear(joined[offset + full:offset + size], w_masters, bias=bias[:2 * n])
                if kernel.onlstm_master_gates(size - full, n, symmetric, logits.data_ptr(), logits.stride(0),
                                              m_at(offset + full)):
                    raise MemoryError("out of memory in the ON-LSTM cell kernel")
            gates = step_linear(joined[offset:offset + full], w_step, bias=bias) if full else None
        else:
            gates = step_linear(prev_h[:size], w_step, x_gates[offset:offset + size])
        if full and kernel.onlstm_forward_step(full, n, chunk_size, symmetric, gates.data_ptr(), gates.stride(0),
                                               c_at(t % 2), c_at((t + 1) % 2), h_at(offset), m_at(offset), None,
                                               None, None):
            raise MemoryError("out of memory in the ON-LSTM cell kernel")
        prev_h = outputs[offset:offset + full]
        offset += size
    return None if w_masters is not None else outputs, masters[:, 1]


LOSS_CHUNK_ROWS = 512  # logits are formed this many rows at a time (20 MB at a 10k vocabulary)


class DecoderCrossEntropy(torch.autograd.Function):
    """Σ over rows of cross_entropy(hidden·weightᵀ + bias, targets), for CPU float32 with the C kernel.

    F.cross_entropy on the logits allocates and passes over the whole (rows × vocabulary) matrix five
    times (log_softmax, nll_loss, the zero-filled gradient, their backward), and each fresh matrix of
    that size (180 MB at 200/400, batch 64) is paid for again in page faults. Here the logits are
    formed a chunk of rows at a time and the kernel turns each chunk, while it is in cache, into its
    losses and its gradient softmax − onehot, kept for the backward pass in one buffer that is reused
    from step to step. The backward pass is the decoder's two weight products and a column sum.
    """

    # the gradient buffer, handed back by backward for the next step; one per thread, so that two threads
    # training at once never take the same buffer
    _spare = threading.local()

    @staticmethod
    def forward(ctx, hidden, weight, bias, targets, want_grad: bool):
        kernel = cell_kernel.load()
        rows, vocab = hidden.shape[0], weight.shape[0]
        buffer = DecoderCrossEntropy._take_buffer(rows * vocab) if want_grad else None
        d_logits = None if buffer is None else buffer[:rows * vocab].view(rows, vocab)
        losses = hidden.new_empty(rows)
        targets = targets.contiguous()
        for start in range(0, rows, LOSS_CHUNK_ROWS):
            logits = _onednn_mm(hidden[start:start + LOSS_CHUNK_ROWS], weight, bias)
            kernel.onlstm_softmax_xent(logits.shape[0], vocab, logits.data_ptr(), targets[start:].data_ptr(),
                                       losses[start:].data_ptr(),
                                       None if d_logits is None else d_logits[start].data_ptr())
        if want_grad:
            ctx.save_for_backward(hidden, weight)
            ctx.buffer = buffer
        return losses.sum()

    @staticmethod
    def backward(ctx, d_loss):
        hidden, weight = ctx.saved_tensors
        d_logits = ctx.buffer[:hidden.shape[0] * weight.shape[0]].view(hidden.shape[0], weight.shape[0])
        d_hidden = d_weight = d_bias = None
        if ctx.needs_input_grad[0]:
            d_hidden = _onednn_mm(d_logits, weight.t()).mul_(d_loss)
        if ctx.needs_input_grad[1]:
            d_weight = weight_grad(d_logits, hidden).mul_(d_loss)
        if ctx.needs_input_grad[2]:
            d_bias = d_logits.sum(0).mul_(d_loss)
        DecoderCrossEntropy._spare.buffer, ctx.buffer = ctx.buffer, None
        return d_hidden, d_weight, d_bias, None, None

    @staticmethod
    def _take_buffer(numel: int) -> torch.Tensor:
        """A flat buffer of at least `numel` floats: the spare one if it is large enough (a second forward
        before the first one's backward finds none and allocates its own)."""
        spare = getattr(DecoderCrossEntropy._spare, "buffer", None)
        DecoderCrossEntropy._spare.buffer = None
        if spare is not None and spare.numel() >= numel:
            return spare
        return torch.empty(numel + numel // 4)  # room for longer windows: training's window length varies


def decoder_loss(hidden: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, targets: torch.Tensor,
                 reduction: str = "mean") -> torch.Tensor:
    """cross_entropy(hidden·weightᵀ + bias, targets) for hidden (rows × E) and targets (rows,), without
    keeping the logits: the training loss of the tied decoder. reduction: "mean" or "sum"."""
    vocab = weight.shape[0]
    if targets.numel() and not 0 <= int(targets.min()) <= int(targets.max()) < vocab:
        raise IndexError(f"target word ids must lie in [0, {vocab})")
    if use_onednn(hidden) and use_fused_cell(hidden) and targets.dtype == torch.int64:
        # (needs_input_grad inside forward says True under no_grad too: validation would form gradients)
        want_grad = torch.is_grad_enabled() and any(t.requires_grad for t in (hidden, weight, bias))
        total = DecoderCrossEntropy.apply(hidden.contiguous(), weight, bias, targets, want_grad)
    else:
        total = F.cross_entropy(linear(hidden, weight, bias), targets, reduction="sum")
    return total if reduction == "sum" else total / max(targets.numel(), 1)


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
        for linear_map in (self.ih, self.hh):  # the same values, kept in the layout of their gradients
            linear_map.weight = nn.Parameter(column_major(linear_map.weight.detach()))
        self.weight_drop = weight_drop
        self.master_input = master_input
        self._packed = None  # (weight version, w_hh prepared by step_weight); see forward
        self._joined = None  # (weight versions, [W_ih | W_hh] and its first 2n rows, prepared); see joined_step_weight

    def forward(self, x, state, reference: bool = False, x_gates: torch.Tensor | None = None):
        """x: (T, B, input) or None when `x_gates`, its input projection, is given instead."""
        h0, c0 = state
        if x_gates is None:
            x_gates = linear(x, self.ih.weight, self.ih.bias)  # the whole sequence's in one matmul
        # DropConnect: one mask on the recurrent weights per forward call, i.e. per batch.
        w_hh = drop_connect(self.hh.weight, self.weight_drop, self.training)
        if reference:
            run = reference_layer
        elif torch.is_grad_enabled() and (x_gates.requires_grad or w_hh.requires_grad):
            run = ONLSTMLayerFunction.apply
        else:
            # nothing to differentiate: keep no activations for a backward pass
            run = functools.partial(inference_layer, w_step=self._packed_weight(w_hh, x_gates.shape[1]))
        out, c_last, master_f, master_i = run(x_gates, w_hh, h0, c0, self.chunk_size, self.master_input)
        return out, (out[-1], c_last), master_f, master_i

    def _packed_weight(self, w_hh: torch.Tensor, batch_size: int):
        """w_hh prepared for the step products; packing costs a copy of the weight, so at inference, where
        the weight is the unchanged parameter from batch to batch, it is done once and kept."""
        weight = self.hh.weight
        if w_hh is not weight:  # DropConnect drew a fresh matrix
            return step_weight(w_hh, batch_size)
        key = (weight.data_ptr(), weight._version, weight.device, weight.dtype, use_onednn(weight))
        if self._packed is None or self._packed[0] != key:
            self._packed = (key, step_weight(weight, batch_size))
        return self._packed[1]

    def joined_step_weight(self, batch_size: int, masters_only: bool = False):
        """[W_ih | W_hh] prepared by `step_weight` for `packed_inference_layer`, or its first 2n rows alone
        (the master gates') with `masters_only`; kept until either weight changes."""
        weights = (self.ih.weight, self.hh.weight)
        key = tuple((w.data_ptr(), w._version, w.device, w.dtype) for w in weights) + (use_onednn(weights[0]),)
        if self._joined is None or self._joined[0] != key:
            joined = torch.cat([w.detach() for w in weights], 1)
            self._joined = (key, step_weight(joined, batch_size), step_weight(joined[:2 * self.n_levels], batch_size))
        return self._joined[2 if masters_only else 1]


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
    loss: torch.Tensor | None = None  # mean cross-entropy, where forward was given targets (logits are None then)


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
        self._gate_table = None  # (parameter versions, table); see first_layer_gates

    def first_layer_gates(self, tokens: torch.Tensor) -> torch.Tensor | None:
        """Layer 1's input projections of `tokens` read from a per-word table, or None where that can't be.

        Without dropout (evaluation, no gradients) a token's projection depends on the word alone, so one
        (vocabulary × gates) table replaces the largest matmul of inference. The table is rebuilt whenever
        a parameter it comes from changes (tensor versions count every in-place update) and is built only
        for batches large enough to pay for it.
        """
        if self.training or torch.is_grad_enabled():
            return None
        params = (self.embedding.weight, self.layers[0].ih.weight, self.layers[0].ih.bias)
        key = tuple((p.data_ptr(), p._version, p.device) for p in params)
        if self._gate_table is None or self._gate_table[0] != key:
            if tokens.numel() * 8 < self.config.vocab_size:
                return None
            ih = self.layers[0].ih
            self._gate_table = (key, linear(self.embedding.weight, ih.weight, ih.bias))
        return F.embedding(tokens, self._gate_table[1])

    def packed_distances(self, tokens: torch.Tensor, batch_sizes: list[int], state: list,
                         up_to_layer: int) -> list[torch.Tensor]:
        """The distances (N,) of layers 1 … up_to_layer for sequences packed as in `packed_inference_layer`
        (`tokens` (N,)), from `state` (per layer (h, c), batch_sizes[0] rows). Inference only, and only
        where the fused C cell runs; `forward` pads instead. Parsing uses it: sorted batches of 64 sentences
        spent a tenth of their work on padding, batches of 256 a third."""
        assert not self.training and not torch.is_grad_enabled(), "packed_distances is for inference"
        x_gates = self.first_layer_gates(tokens)
        x = self.embedding(tokens) if x_gates is None else None
        distances = []
        for k, layer in enumerate(self.layers[:up_to_layer]):
            if k == 0 and x_gates is not None:
                w_step = layer._packed_weight(layer.hh.weight, batch_sizes[0])
                x, master_f = packed_inference_layer(x_gates, batch_sizes, w_step, *state[k], layer.chunk_size,
                                                     layer.master_input)
            else:
                top = k == up_to_layer - 1  # its outputs are not needed: see w_masters
                x, master_f = packed_inference_layer(None, batch_sizes, layer.joined_step_weight(batch_sizes[0]),
                                                     *state[k], layer.chunk_size, layer.master_input, x=x,
                                                     bias=layer.ih.bias,
                                                     w_masters=layer.joined_step_weight(batch_sizes[0], True)
                                                     if top else None)
            distances.append(forget_distance(master_f))
        return distances

    def init_state(self, batch_size: int) -> list:
        w = self.embedding.weight
        return [(w.new_zeros(batch_size, layer.hidden_size), w.new_zeros(batch_size, layer.hidden_size))
                for layer in self.layers]

    def forward(self, tokens: torch.Tensor, state=None, reference: bool = False,
                with_logits: bool = True, up_to_layer: int | None = None,
                targets: torch.Tensor | None = None) -> LMOutput:
        """tokens: (T, B) word ids. Returns logits, the new state, and every layer's distances and gates.

        up_to_layer (1-based) stops after that layer — all that parsing with it needs; no logits then.
        targets (T, B): the next words; then the output has their mean cross-entropy as `loss` instead of
        logits, computed without keeping the (T·B × vocabulary) logits (`decoder_loss`).
        """
        cfg = self.config
        if targets is not None and up_to_layer is not None:
            raise ValueError("a loss needs every layer: give targets or up_to_layer, not both")
        if state is None:
            state = self.init_state(tokens.shape[1])
        x, x_gates = None, None if reference else self.first_layer_gates(tokens)
        if x_gates is None:
            x = embedding_dropout(self.embedding, tokens, cfg.dropout_e, self.training)
            x = self.lockdrop(x, cfg.dropout_i)
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
            loss = decoder_loss(x.reshape(-1, x.shape[-1]), self.embedding.weight, self.decoder_bias,
                                targets.reshape(-1))
            return LMOutput(None, new_state, distances, forget, inputs, loss)
        logits = linear(x, self.embedding.weight, self.decoder_bias) if with_logits else None
        return LMOutput(logits, new_state, distances, forget, inputs)
