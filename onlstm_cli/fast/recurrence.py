"""A whole ON-LSTM layer over a sequence, fast: one autograd Function with a hand-written backward.

The input projection is one matmul outside (the caller's); inside, each time step is one recurrent
product (`onednn.step_linear`, with a weight prepared once per sequence) and the step's elementwise work,
done by one of the cells: "c" (cell_kernel.c, CPU float32), "triton" (fast/triton_cell.py, CUDA) or
"torch" (a dozen torch kernels; anywhere). The backward pass loops only over the recurrent part and forms
the recurrent weight gradient as one large matmul at the end. `inference_layer` is the forward pass
without saved activations; `packed_inference_layer` steps through sentences of different lengths packed
longest first (C cell only). All of them compute `cell.reference_layer`, which the tests hold them to.
"""
from __future__ import annotations

import torch

from onlstm_cli.config import MASTER_INPUT_RULES
from onlstm_cli.fast import ckernel
from onlstm_cli.fast.onednn import step_linear, step_weight, weight_grad
from onlstm_cli.fast.shared_backward import next_dh

PACKED_ROWS = 64


def cumsum_matrix(n: int, master_input: str, like: torch.Tensor):
    """The master gates of both kinds in one small product: [ĩ | f̃] = [p_i | p_f]·M + b.

    M is block-diagonal: the f̃ block is cumsum (upper-triangular ones); the ĩ block is −cumsum with b = 1
    for the paper's 1 − cumax, or the reverse cumsum (lower-triangular ones) for the symmetric rule.
    One (B × 2n)(2n × 2n) product replaces a cumsum, a flip or two and a subtraction per step.
    """
    if master_input not in MASTER_INPUT_RULES:
        raise ValueError(f"unknown master input rule {master_input!r}")
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
    """tanh(x) = 2σ(2x) − 1, written to `out`: on CPU torch's tanh is several times slower than its sigmoid."""
    if x.device.type != "cpu":
        return torch.tanh(x, out=out)
    torch.mul(x, 2.0, out=out)
    return torch.sigmoid(out, out=out).mul_(2.0).sub_(1.0)


def torch_steps(x_gates, w_hh, h0, c0, chunk_size: int, master_input: str, saved: list | None, w_step):
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


def torch_backward(saved, d_out, d_c, chunk: int, master_input: str, need_h0: bool, onednn: bool):
    """The backward pass of `torch_steps`: everything in the loop is at neuron resolution, (B, H) or pairs
    (B, 2, H), so no elementwise op broadcasts over chunks, and the derivatives of the nonlinearities are
    fused aten kernels written straight into the gate-gradient buffer."""
    w_hh, hs, pair, p, masters, acts, omega, big, tanh_c, matrix = saved
    T, B, H = tanh_c.shape
    n = H // chunk
    G = w_hh.shape[0]
    d_gates = hs.new_empty(T, B, G)
    w_back = step_weight(w_hh.t(), B, onednn)  # for d_h = dg·W_hh
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
        dh = next_dh(dg, w_back, d_out, t, need_h0)
    d_w_hh = weight_grad(d_gates.view(T * B, G), hs[:-1].reshape(T * B, H), w_hh, onednn)
    return d_gates, d_w_hh, dh, d_c


def c_steps(x_gates, w_hh, h0, c0, chunk_size: int, master_input: str, saved: list | None, w_step):
    """`torch_steps` with each step's elementwise work done by the C kernel (CPU, float32)."""
    kernel = ckernel.load()
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
    h_rows, c_rows, m_rows = ckernel.Rows(outputs, H), ckernel.Rows(cells, H), ckernel.Rows(masters, 2 * n)
    p_rows, a_rows, tc_rows = ((ckernel.Rows(probs, 2 * n), ckernel.Rows(acts, 4 * H), ckernel.Rows(tanh_c, H))
                               if train else (None, None, None))
    symmetric = master_input == "symmetric"
    for t in range(T):
        gates = step_linear(hs[t], w_step, xs[t])
        prev, out = (t, t + 1) if train else (t % 2, (t + 1) % 2)
        kernel.forward_step(n, chunk_size, symmetric, gates, (c_rows, prev * B), (c_rows, out * B),
                            (h_rows, (t + 1) * B), (m_rows, t * B),
                            *((rows, t * B) if train else None for rows in (p_rows, a_rows, tc_rows)))
    c_last = cells[T if train else T % 2]
    if train:
        saved.extend((w_hh, outputs, cells, probs, masters, acts, tanh_c))
    return outputs[1:], c_last.clone(), masters[:, :, 1], masters[:, :, 0]


def c_backward(saved, d_out, d_c, chunk: int, master_input: str, need_h0: bool, onednn: bool):
    kernel = ckernel.load()
    w_hh, hs, cells, probs, masters, acts, tanh_c = saved
    T, B, H = tanh_c.shape
    n, G = H // chunk, w_hh.shape[0]
    d_gates = hs.new_empty(T, B, G)
    w_back = step_weight(w_hh.t(), B, onednn)  # for d_h = dg·W_hh
    c_rows, m_rows, p_rows = ckernel.Rows(cells, H), ckernel.Rows(masters, 2 * n), ckernel.Rows(probs, 2 * n)
    a_rows, tc_rows, dc_rows = ckernel.Rows(acts, 4 * H), ckernel.Rows(tanh_c, H), ckernel.Rows(d_c, H)
    dgs = d_gates.unbind(0)
    symmetric = master_input == "symmetric"
    dh = d_out[T - 1].contiguous()
    for t in range(T - 1, -1, -1):
        # c_{t−1} is cells[t]; d_c becomes dL/dc_{t−1} in place
        kernel.backward_step(n, chunk, symmetric, (ckernel.Rows(dh, H), 0), (dc_rows, 0), (a_rows, t * B),
                             (tc_rows, t * B), (c_rows, t * B), (m_rows, t * B), (p_rows, t * B), dgs[t])
        dh = next_dh(dgs[t], w_back, d_out, t, need_h0)
    d_w_hh = weight_grad(d_gates.view(T * B, G), hs[:-1].reshape(T * B, H), w_hh, onednn)
    return d_gates, d_w_hh, dh, d_c


def cell_functions(cell: str):
    """(forward steps, backward) of a cell."""
    if cell == "c":
        return c_steps, c_backward
    if cell == "triton":
        from onlstm_cli.fast import triton_cell
        return triton_cell.triton_steps, triton_cell.triton_backward
    return torch_steps, torch_backward


class LayerFunction(torch.autograd.Function):
    """A whole ON-LSTM layer over a sequence (x_gates (T, B, G) with the input projection and bias), with
    the backward pass written by hand; `backend` (fast.Backend) says which cell and products run."""

    @staticmethod
    def forward(ctx, x_gates, w_hh, h0, c0, chunk_size: int, master_input: str, backend):
        saved = []
        steps, _ = cell_functions(backend.cell)
        w_step = step_weight(w_hh, x_gates.shape[1], backend.onednn)
        out, c_last, master_f, master_i = steps(x_gates.contiguous(), w_hh, h0, c0, chunk_size, master_input,
                                                saved, w_step)
        ctx.save_for_backward(*saved)
        ctx.chunk_size, ctx.master_input, ctx.backend = chunk_size, master_input, backend
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
        _, backward = cell_functions(ctx.backend.cell)
        grads = backward(saved, d_out, d_c, ctx.chunk_size, ctx.master_input, ctx.needs_input_grad[2],
                         ctx.backend.onednn)
        return (*grads, None, None, None)


def inference_layer(x_gates, w_hh, h0, c0, chunk_size: int, master_input: str, backend, w_step=None):
    """The forward pass of `LayerFunction` without the saved activations (parsing, validation).
    `w_step`: w_hh already prepared by `step_weight`, if the caller keeps it."""
    steps, _ = cell_functions(backend.cell)
    w_step = step_weight(w_hh, x_gates.shape[1], backend.onednn) if w_step is None else w_step
    return steps(x_gates.contiguous(), w_hh, h0, c0, chunk_size, master_input, None, w_step)


def packed_inference_layer(x_gates, batch_sizes: list[int], w_step, h0, c0, chunk_size: int,
                           master_input: str = "paper", x=None, bias=None, w_masters=None):
    """`inference_layer` over sequences of different lengths packed time-major, longest first (the layout of
    torch.nn.utils.rnn.PackedSequence): rows off_t … off_t + batch_sizes[t] of x_gates (N, G) are step t of
    the batch_sizes[t] longest sequences. No step computes padding, so a batch may mix lengths freely.
    C cell only; `w_step` from `step_weight`. x_gates may have rows past N = sum(batch_sizes), ignored.

    Or, with x_gates None: `x` (N, I), the layer's inputs packed the same way, `w_step` the joined weight
    [W_ih | W_hh] prepared by `step_weight` and `bias` the input bias. Each step is then one product of
    [x_t | h_{t−1}] with the joined weight: at a batch of 64 that runs at the rate of a large matmul, where
    the input projection as one matmul plus recurrent steps with K = H ran slower.

    `w_masters`, in that mode, is the joined weight's first 2n rows alone, those of the master gates.
    Given, the layer is the last one a parse runs, whose outputs nothing reads past its own recurrence:
    each sequence's last step computes only its master gates. The outputs are then None.

    Returns the outputs, N rows rounded up to a multiple of PACKED_ROWS (zero past N), and the master forget
    gates (N, n), packed the same way. The rounding keeps the next layer's input projection to few matrix
    shapes, so oneDNN's kernel cache stays small however much is parsed.
    """
    if w_masters is not None and x_gates is not None:
        raise ValueError("w_masters goes with the joined weight (x_gates None)")
    kernel = ckernel.load()
    N, B = sum(batch_sizes), batch_sizes[0]
    H = h0.shape[1]
    n = H // chunk_size
    outputs, masters = h0.new_empty(-(-N // PACKED_ROWS) * PACKED_ROWS, H), h0.new_empty(N, 2, n)
    outputs[N:] = 0
    cells = h0.new_empty(2, B, H)  # c_{t−1} and c_t, alternating
    cells[0] = c0
    c_rows, h_rows, m_rows = ckernel.Rows(cells, H), ckernel.Rows(outputs, H), ckernel.Rows(masters, 2 * n)
    symmetric = master_input == "symmetric"
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
                kernel.master_gates(n, symmetric, logits, (m_rows, offset + full))
            gates = step_linear(joined[offset:offset + full], w_step, bias=bias) if full else None
        else:
            gates = step_linear(prev_h[:size], w_step, x_gates[offset:offset + size])
        if full:
            kernel.forward_step(n, chunk_size, symmetric, gates, (c_rows, (t % 2) * B), (c_rows, ((t + 1) % 2) * B),
                                (h_rows, offset), (m_rows, offset))
        prev_h = outputs[offset:offset + full]
        offset += size
    return None if w_masters is not None else outputs, masters[:, 1]
