"""The tied decoder's softmax cross-entropy on CPU, without ever holding the (tokens × vocabulary) logits.

F.cross_entropy on the logits allocates and passes over the whole (rows × vocabulary) matrix five times
(log_softmax, nll_loss, the zero-filled gradient, their backward), and each fresh matrix of that size is
paid for again in page faults. Here the logits are formed a chunk of rows at a time and the C kernel turns
each chunk, while it is in cache, into its losses and its gradient softmax − onehot, kept for the backward
pass in one buffer that is reused from step to step. The backward pass is two products and a column sum.
"""
from __future__ import annotations

import threading

import torch

from onlstm_cli.fast import ckernel
from onlstm_cli.fast.onednn import mm, weight_grad

LOSS_CHUNK_ROWS = 512  # logits are formed this many rows at a time (20 MB at a 10k vocabulary)


class DecoderCrossEntropy(torch.autograd.Function):
    """Σ over rows of cross_entropy(hidden·weightᵀ + bias, targets), for CPU float32 with the C kernel."""

    # the gradient buffer, handed back by backward for the next step; one per thread, so that two threads
    # training at once never take the same buffer
    _spare = threading.local()

    @staticmethod
    def forward(ctx, hidden, weight, bias, targets, want_grad: bool):
        kernel = ckernel.load()
        rows, vocab = hidden.shape[0], weight.shape[0]
        buffer = DecoderCrossEntropy._take_buffer(rows * vocab) if want_grad else None
        d_logits = None if buffer is None else buffer[:rows * vocab].view(rows, vocab)
        losses = hidden.new_empty(rows)
        targets = targets.contiguous()
        for start in range(0, rows, LOSS_CHUNK_ROWS):
            end = min(start + LOSS_CHUNK_ROWS, rows)
            logits = mm(hidden[start:end], weight, bias)
            kernel.softmax_xent(logits, targets[start:end], losses[start:end],
                                None if d_logits is None else d_logits[start:end])
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
            d_hidden = mm(d_logits, weight.t()).mul_(d_loss)
        if ctx.needs_input_grad[1]:
            d_weight = weight_grad(d_logits, hidden, None, True).mul_(d_loss)
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
