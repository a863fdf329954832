"""The Triton cell: each time step's elementwise work as one GPU kernel, forward and backward.

`triton_steps` and `triton_backward` have the contracts of `recurrence.torch_steps` / `torch_backward`
and compute the same maths as `cell_kernel.c` (forward_row, backward_row), which the kernels below mirror
line for line. A step is the recurrent product (`step_linear`: cuBLAS on a GPU) followed by ONE kernel
launch for everything else, where the torch cell launches about a dozen small kernels per step, each
reading and writing its intermediate results through GPU memory.

Layout of one program's work (one program per batch row): the H = n·chunk neurons of the row are loaded
as a 2-D block (levels × chunk), so a master gate, which lives at level resolution, broadcasts over its
chunk as `m[:, None]` and no expanded copy is ever written. `tl.arange` needs powers of two: n and chunk
are padded up to BLOCK_N and BLOCK_C and the padding is masked (loads give the softmax −inf, everything
else 0, so padded lanes add nothing to any sum or cumsum).

Without a GPU the kernels run on CPU tensors in Triton's interpreter (TRITON_INTERPRET=1, set before
triton is first imported: tests/conftest.py does), which is how the tests hold them to
`cell.reference_layer`.

triton is optional (the `gpu` extra): without it this module still imports and `available()` is False.
"""
from __future__ import annotations

import torch

from onlstm_cli.config import MASTER_INPUT_RULES
from onlstm_cli.fast.onednn import step_linear, step_weight, weight_grad
from onlstm_cli.fast.shared_backward import next_dh

try:
    import triton
    import triton.language as tl
except ImportError:  # the CPU install: the selector falls back to the torch cell
    triton = None


def available() -> bool:
    """Whether triton is importable (not whether a GPU is there: see fast.triton_cell_works)."""
    return triton is not None


def interpreted() -> bool:
    """Whether the kernels were defined under Triton's interpreter (TRITON_INTERPRET=1 at import), so that
    they run on CPU tensors (slowly) instead of being compiled for a GPU."""
    if triton is None:
        return False
    try:
        from triton.runtime.interpreter import InterpretedFunction
    except ImportError:
        return False
    return isinstance(_forward_step, InterpretedFunction)


if triton is not None:

    @triton.jit
    def _tanh(x):
        # 2σ(2x) − 1: tl's only tanh is in the backends' libdevice, which the interpreter does not run; this
        # form saturates to ±1 cleanly for large |x| (exp overflows to inf, 1/inf is 0)
        return 2.0 / (1.0 + tl.exp(-2.0 * x)) - 1.0

    @triton.jit
    def _softmax(x):
        """Softmax of a (BLOCK_N,) row whose padding lanes hold −inf (they come out 0)."""
        e = tl.exp(x - tl.max(x, axis=0))
        return e / tl.sum(e, axis=0)

    @triton.jit
    def _forward_step(gates, gate_stride, c_prev, c_out, h_out, masters, probs, acts, tanh_c,
                      N: tl.constexpr, CHUNK: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_C: tl.constexpr,
                      SYMMETRIC: tl.constexpr, SAVE: tl.constexpr):
        """One step of one batch row (program_id 0): forward_row of cell_kernel.c.

        gates: the row's pre-activations [m_i (n) | m_f (n) | o | ĉ | i | f (H each)] at `gates + row ·
        gate_stride`; c_prev, c_out, h_out (B, H); masters (B, 2n) gets [ĩ | f̃]. With SAVE, also what the
        backward needs: probs (B, 2n) the two softmaxes, acts (B, 4H) [σ(o) | tanh(ĉ) | σ(i) | σ(f)],
        tanh_c (B, H). Without SAVE those three pointers are not touched.
        """
        H: tl.constexpr = N * CHUNK
        row = tl.program_id(0)
        levels = tl.arange(0, BLOCK_N)
        level_ok = levels < N
        g = gates + row * gate_stride

        # The master gates, at level resolution: softmax, then a cumsum (f̃ = cumax) or, for ĩ, the paper's
        # 1 − cumax or the symmetric rule's reverse cumsum. Padding lanes sit past level n, so neither
        # direction of cumsum picks them up.
        p_i = _softmax(tl.load(g + levels, mask=level_ok, other=-float("inf")))
        p_f = _softmax(tl.load(g + N + levels, mask=level_ok, other=-float("inf")))
        m_f = tl.cumsum(p_f, axis=0)
        if SYMMETRIC:
            m_i = tl.cumsum(p_i, axis=0, reverse=True)
        else:
            m_i = 1.0 - tl.cumsum(p_i, axis=0)
        m_row = masters + row * 2 * N
        tl.store(m_row + levels, m_i, mask=level_ok)
        tl.store(m_row + N + levels, m_f, mask=level_ok)

        # The neurons as a (levels × chunk) block: neuron k·chunk + j is level k's j-th.
        cols = tl.arange(0, BLOCK_C)
        offs = levels[:, None] * CHUNK + cols[None, :]
        ok = level_ok[:, None] & (cols < CHUNK)[None, :]
        o = tl.sigmoid(tl.load(g + 2 * N + offs, mask=ok, other=0.0))
        c_hat = _tanh(tl.load(g + 2 * N + H + offs, mask=ok, other=0.0))
        i = tl.sigmoid(tl.load(g + 2 * N + 2 * H + offs, mask=ok, other=0.0))
        f = tl.sigmoid(tl.load(g + 2 * N + 3 * H + offs, mask=ok, other=0.0))
        mi = m_i[:, None]
        mf = m_f[:, None]
        w = mi * mf  # ω, where the two master gates overlap: a plain LSTM there
        cell = row * H + offs
        c = (mf - w + f * w) * tl.load(c_prev + cell, mask=ok, other=0.0) + (mi - w + i * w) * c_hat
        t = _tanh(c)
        tl.store(c_out + cell, c, mask=ok)
        tl.store(h_out + cell, o * t, mask=ok)
        if SAVE:
            p_row = probs + row * 2 * N
            tl.store(p_row + levels, p_i, mask=level_ok)
            tl.store(p_row + N + levels, p_f, mask=level_ok)
            a_row = acts + row * 4 * H + offs
            tl.store(a_row, o, mask=ok)
            tl.store(a_row + H, c_hat, mask=ok)
            tl.store(a_row + 2 * H, i, mask=ok)
            tl.store(a_row + 3 * H, f, mask=ok)
            tl.store(tanh_c + cell, t, mask=ok)

    @triton.jit
    def _backward_step(dh, dc, dc_prev, acts, tanh_c, c_prev, masters, probs, d_gates, dg_stride,
                       N: tl.constexpr, CHUNK: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_C: tl.constexpr,
                       SYMMETRIC: tl.constexpr):
        """The backward of `_forward_step` for one batch row: backward_row of cell_kernel.c.

        dh (B, H): all of dL/dh_t; dc (B, H): dL/dc_t from later steps; writes dL/dc_{t−1} to dc_prev and
        dL/dgates at `d_gates + row · dg_stride`. (dc_prev is another buffer, not dc updated in place as
        the C kernel does: where a layout holds an element in two warps, one warp's store could land
        before the other's load.)
        """
        H: tl.constexpr = N * CHUNK
        row = tl.program_id(0)
        levels = tl.arange(0, BLOCK_N)
        level_ok = levels < N
        cols = tl.arange(0, BLOCK_C)
        offs = levels[:, None] * CHUNK + cols[None, :]
        ok = level_ok[:, None] & (cols < CHUNK)[None, :]
        cell = row * H + offs
        a_row = acts + row * 4 * H + offs
        o = tl.load(a_row, mask=ok, other=0.0)
        c_hat = tl.load(a_row + H, mask=ok, other=0.0)
        i = tl.load(a_row + 2 * H, mask=ok, other=0.0)
        f = tl.load(a_row + 3 * H, mask=ok, other=0.0)
        t = tl.load(tanh_c + cell, mask=ok, other=0.0)
        d = tl.load(dh + cell, mask=ok, other=0.0)
        m_row = masters + row * 2 * N
        m_i = tl.load(m_row + levels, mask=level_ok, other=0.0)
        m_f = tl.load(m_row + N + levels, mask=level_ok, other=0.0)
        mi = m_i[:, None]
        mf = m_f[:, None]
        w = mi * mf

        # h = o∘tanh(c), c = F∘c_{t−1} + I∘ĉ with I = ĩ − ω + i∘ω, F = f̃ − ω + f∘ω
        dcj = tl.load(dc + cell, mask=ok, other=0.0) + d * o * (1.0 - t * t)
        d_in = dcj * c_hat                                      # dL/dI
        d_forget = dcj * tl.load(c_prev + cell, mask=ok, other=0.0)  # dL/dF
        dw = d_in * (i - 1.0) + d_forget * (f - 1.0)           # dL/dω
        dg = d_gates + row * dg_stride + 2 * N
        tl.store(dg + offs, d * t * o * (1.0 - o), mask=ok)
        tl.store(dg + H + offs, dcj * (mi - w + i * w) * (1.0 - c_hat * c_hat), mask=ok)
        tl.store(dg + 2 * H + offs, d_in * w * i * (1.0 - i), mask=ok)
        tl.store(dg + 3 * H + offs, d_forget * w * f * (1.0 - f), mask=ok)
        tl.store(dc_prev + cell, dcj * (mf - w + f * w), mask=ok)

        # A master gate is shared by its chunk: sum the chunk's gradients to level resolution (padding is
        # zeroed so the sums and the cumsums below see nothing of it).
        dm_i = tl.sum(tl.where(ok, d_in + dw * mf, 0.0), axis=1)
        dm_f = tl.sum(tl.where(ok, d_forget + dw * mi, 0.0), axis=1)
        # through the cumsums: each one's transpose is the cumsum in the other direction
        dp_f = tl.cumsum(dm_f, axis=0, reverse=True)
        if SYMMETRIC:
            dp_i = tl.cumsum(dm_i, axis=0)
        else:
            dp_i = -tl.cumsum(dm_i, axis=0, reverse=True)
        # through the softmaxes: p∘(dp − ⟨p, dp⟩); padded p are 0
        p_row = probs + row * 2 * N
        p_i = tl.load(p_row + levels, mask=level_ok, other=0.0)
        p_f = tl.load(p_row + N + levels, mask=level_ok, other=0.0)
        dg_m = d_gates + row * dg_stride
        tl.store(dg_m + levels, p_i * (dp_i - tl.sum(p_i * dp_i, axis=0)), mask=level_ok)
        tl.store(dg_m + N + levels, p_f * (dp_f - tl.sum(p_f * dp_f, axis=0)), mask=level_ok)


def _meta(n: int, chunk: int, master_input: str) -> dict:
    """The kernels' compile-time parameters. The block is (next power of two ≥ n) × (next ≥ chunk)."""
    if master_input not in MASTER_INPUT_RULES:
        raise ValueError(f"unknown master input rule {master_input!r}")
    if triton is None:
        raise RuntimeError("the Triton cell needs triton (pip install 'onlstm[gpu]')")
    block_n, block_c = triton.next_power_of_2(n), triton.next_power_of_2(chunk)
    # a warp is 32 lanes; about 8 elements a lane, between 1 and 8 warps
    warps = min(8, max(1, block_n * block_c // 256))
    # enable_fp_fusion (multiply-adds fused, Triton's default) is passed to say so: Triton 3.9 warns when it
    # is left to a default that its next version changes
    return dict(N=n, CHUNK=chunk, BLOCK_N=block_n, BLOCK_C=block_c, SYMMETRIC=master_input == "symmetric",
                num_warps=warps, enable_fp_fusion=True)


def triton_steps(x_gates, w_hh, h0, c0, chunk_size: int, master_input: str, saved: list | None, w_step):
    """`recurrence.torch_steps` with each step's elementwise work done by one Triton kernel.

    Training (`saved` a list) keeps, per step, c_t, the softmaxes, the activations and tanh(c_t) and
    extends `saved` with (w_hh, outputs, cells, probs, masters, acts, tanh_c): outputs (T+1, B, H) holds
    h_0 … h_T, which LayerFunction reads as saved[1]. Inference (`saved` None) keeps nothing but the
    outputs and master gates: its cell state alternates between two rows.
    """
    T, B, _ = x_gates.shape
    H = w_hh.shape[1]
    n = H // chunk_size
    meta = _meta(n, chunk_size, master_input)
    new = x_gates.new_empty
    train = saved is not None
    outputs = new(T + 1, B, H)                     # index t+1 holds h_t; training needs h_0 too, for dW_hh
    cells = new(T + 1 if train else 2, B, H)       # c_0 … c_T for training; inference alternates two rows
    masters = new(T, B, 2, n)                      # [ĩ, f̃]
    if train:
        probs, acts, tanh_c = new(T, B, 2, n), new(T, B, 4, H), new(T, B, H)
    outputs[0] = h0
    cells[0] = c0
    hs, xs, ms, cs = outputs.unbind(0), x_gates.unbind(0), masters.unbind(0), cells.unbind(0)
    for t in range(T):
        gates = step_linear(hs[t], w_step, xs[t])
        if train:
            prev, out, keep = cs[t], cs[t + 1], (probs[t], acts[t], tanh_c[t])
        else:  # the three pointers are not touched without SAVE: any tensor will do
            prev, out, keep = cs[t % 2], cs[(t + 1) % 2], (gates, gates, gates)
        _forward_step[(B,)](gates, gates.stride(0), prev, out, hs[t + 1], ms[t], *keep, SAVE=train, **meta)
    c_last = cells[T if train else T % 2]
    if train:
        saved.extend((w_hh, outputs, cells, probs, masters, acts, tanh_c))
    return outputs[1:], c_last.clone(), masters[:, :, 1], masters[:, :, 0]


def triton_backward(saved, d_out, d_c, chunk: int, master_input: str, need_h0: bool, onednn: bool):
    """The backward pass of `triton_steps` (the contract of `recurrence.torch_backward`): per step one
    kernel for the gate gradients and dL/dc_{t−1}, then the product giving dL/dh_{t−1}; dW_hh as one
    matmul over all steps at the end. Returns (d_gates, d_w_hh, d_h0 or None, d_c0)."""
    w_hh, hs, cells, probs, masters, acts, tanh_c = saved
    T, B, H = tanh_c.shape
    n, G = H // chunk, w_hh.shape[0]
    meta = _meta(n, chunk, master_input)
    d_gates = hs.new_empty(T, B, G)
    w_back = step_weight(w_hh.t(), B, onednn)  # for d_h = dg·W_hh
    dgs = d_gates.unbind(0)
    dcs = (d_c, torch.empty_like(d_c))  # dL/dc_t and dL/dc_{t−1}, alternating
    dh = d_out[T - 1].contiguous()
    for t in range(T - 1, -1, -1):
        # c_{t−1} is cells[t]
        k = (T - 1 - t) % 2
        _backward_step[(B,)](dh, dcs[k], dcs[1 - k], acts[t], tanh_c[t], cells[t], masters[t], probs[t], dgs[t],
                             dgs[t].stride(0), **meta)
        dh = next_dh(dgs[t], w_back, d_out, t, need_h0)
        if dh is not None:
            dh = dh.contiguous()
    d_c = dcs[T % 2]
    d_w_hh = weight_grad(d_gates.view(T * B, G), hs[:-1].reshape(T * B, H), w_hh, onednn)
    return d_gates, d_w_hh, dh, d_c
