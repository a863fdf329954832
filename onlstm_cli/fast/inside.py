"""The neural PCFG's inside pass over its low-rank rules (pcfg/model.py, `rank_terms`), with the outside pass written
by hand: the charts are O(B·n²·rank), where autograd through the inside loop would keep an (n − w)·w·rank tensor
for every width w, O(B·n³·rank) in all.

Charts are indexed [sentence, start, width, rank]. For a span of width w ≥ 2 the inside pass sums, over its
splits t, left part (start, t) ⊙ right part (start + t, w − t), in log space:

    β[i, w] = logsumexp_t  L[i, t] + R[i + t, w − t]           L[i, w] = log(exp β[i, w] @ mix_left)

(R likewise, by mix_right), and the sentence's log-likelihood is logsumexp_r β[0, n](r) + log_root(r). The right
parts of one width's spans, by split, are a strided view of R (`_right_parts`): no gather, no copy.

The outside pass goes from the widest span down in expected counts μ (the marginals, ∂ log Z / ∂ log X), each
share a ratio in [0, 1] (L + R − β ≤ 0), so it never overflows; the span marginals MBR parsing reads are
Σ_r μβ. Both passes are checked against autograd through pcfg/model.py's `inside_reference` (tests/pcfg).
"""
from __future__ import annotations

import contextlib
import sys

import torch

TINY = 1e-30  # where a mixed probability underflows, its log is this small's, not −inf
# A forbidden span's log weight: finite, so that no logsumexp meets only −inf (NaN), and far below any sentence's
# log-likelihood, so that its share is at most e^−60 (EXP_FLOOR) of the others'
FORBIDDEN = -1e9
# torch's vectorized exp on a CPU takes a path many times slower wherever its result underflows (an input below
# about −87): a trained grammar's charts are full of such terms, a fresh one's are not, so a run slowed as it learned
# (the figures: docs/experiments/pcfg.md). A term below e^−60 of a sum's largest changes no float32 sum (its
# epsilon is about e^−16), so the exponents are floored there first.
EXP_FLOOR = -60.0


def exp_floored(log_ratios: torch.Tensor) -> torch.Tensor:
    """exp of values ≤ 0 (logs of ratios to a largest term), with each below EXP_FLOOR raised to it. Where autograd
    does not watch (the passes below), in place: `log_ratios` must be a temporary the caller drops."""
    if log_ratios.requires_grad:
        return log_ratios.clamp_min(EXP_FLOOR).exp()
    return log_ratios.clamp_min_(EXP_FLOOR).exp_()


def logsumexp(values: torch.Tensor, dim: int) -> torch.Tensor:
    """torch.logsumexp(values, dim) through exp_floored, for finite values; differentiable (the largest term is a
    constant to autograd, as the sum does not depend on it)."""
    top = values.detach().amax(dim, keepdim=True)
    return exp_floored(values - top).sum(dim).log() + top.squeeze(dim)


@contextlib.contextmanager
def denormals_flushed():
    """Within it, this thread's CPU float results and inputs too small to be normal (below about 1e-38) are 0: the
    CPU computes with them many times slower, and a trained grammar's products make many. A pool of threads that
    torch starts within it inherits it. Set back after, unless it was set before (Python's floats and libraries
    such as hypothesis need them)."""
    already = sys.float_info.min / 2 == 0.0  # a subnormal double is 0 where this thread flushes them
    if not already:
        torch.set_flush_denormal(True)
    try:
        yield
    finally:
        if not already:
            torch.set_flush_denormal(False)


def _right_parts(chart: torch.Tensor, width: int, spans: int) -> torch.Tensor:
    """The view (B, spans, width − 1, r) of `chart` whose [b, i, t] is the entry (start i + t + 1, width
    width − t − 1): the right part of span (i, width) split after its first t + 1 words."""
    batch, _, _, rank = chart.shape
    sb, ss, sw, sr = chart.stride()
    return chart.as_strided((batch, spans, width - 1, rank), (sb, ss, ss - sw, sr),
                            chart.storage_offset() + ss + (width - 1) * sw)


def log_mix(log_values: torch.Tensor, mix: torch.Tensor) -> torch.Tensor:
    """log(exp(log_values) @ mix), scaled by each row's largest value so that nothing overflows."""
    top = log_values.amax(-1, keepdim=True)
    return top + (exp_floored(log_values - top) @ mix).clamp_min(TINY).log()


def inside_charts(leaf_left, leaf_right, mix_left, mix_right, log_mask=None):
    """The charts L, R (every width) and β (widths ≥ 2) of a batch (B, n_max, r) of leaves' log terms.
    `log_mask` (B, n_max, n_max + 1), by start and width, 0 or FORBIDDEN: a forbidden span is no one's part, so the
    sentence's likelihood is summed over the trees of the allowed spans alone (parse-focusing). β keeps each span's
    own sum; only L and R, the span as a part, carry the mask (a constant over ranks, so the outside pass, which
    reads β, needs no change: a forbidden part's share of every parent is 0)."""
    batch, n, rank = leaf_left.shape
    # no entry is read before it is written (a span's parts are narrower), nor beyond a sentence's chart
    left = leaf_left.new_empty(batch, n, n + 1, rank)
    right, beta = torch.empty_like(left), torch.empty_like(left)
    left[:, :, 1], right[:, :, 1] = leaf_left, leaf_right
    for width in range(2, n + 1):
        spans = n - width + 1
        joined = logsumexp(left[:, :spans, 1:width] + _right_parts(right, width, spans), 2)
        beta[:, :spans, width] = joined
        if width < n:  # the widest spans are no one's part
            as_part = joined if log_mask is None else joined + log_mask[:, :spans, width, None]
            left[:, :spans, width] = log_mix(as_part, mix_left)
            right[:, :spans, width] = log_mix(as_part, mix_right)
    return left, right, beta


def _roots(beta: torch.Tensor, lengths: torch.Tensor, log_root: torch.Tensor) -> torch.Tensor:
    """(B, r): each sentence's whole span's β, plus the root's log weights."""
    return beta[torch.arange(beta.shape[0], device=beta.device), 0, lengths] + log_root


def outside(left, right, beta, mix_left, mix_right, log_root, lengths, scale):
    """The expected counts of the inside charts, each sentence's scaled by `scale` (B,): the gradients of
    Σ scale · log Z with respect to the leaves' log terms, the mixes, the root's log weights, and the span
    marginals (B, n_max, n_max + 1) by start and width."""
    batch, n, _, rank = beta.shape
    from_root = torch.softmax(_roots(beta, lengths, log_root), -1) * scale[:, None]
    counts_left, counts_right = torch.zeros_like(left), torch.zeros_like(right)
    grad_mix_left, grad_mix_right = torch.zeros_like(mix_left), torch.zeros_like(mix_right)
    marginals = beta.new_zeros(batch, n, n + 1)
    for width in range(n, 1, -1):
        spans = n - width + 1
        joined = beta[:, :spans, width]
        counts = torch.zeros_like(joined)
        if width < n:
            scaled = exp_floored(joined - joined.amax(-1, keepdim=True))
            for chart, mix, grad in ((counts_left, mix_left, grad_mix_left), (counts_right, mix_right, grad_mix_right)):
                ratio = chart[:, :spans, width] / (scaled @ mix).clamp_min(TINY)
                counts += scaled * (ratio @ mix.T)
                grad += scaled.reshape(-1, rank).T @ ratio.reshape(-1, rank)
        ends_here = lengths == width
        counts[ends_here, 0] += from_root[ends_here]
        marginals[:, :spans, width] = counts.sum(-1)
        shares = exp_floored(left[:, :spans, 1:width] + _right_parts(right, width, spans) - joined[:, :, None])
        shares *= counts[:, :, None]
        counts_left[:, :spans, 1:width] += shares
        _right_parts(counts_right, width, spans).add_(shares)  # each (start, width) once: a view, added in place
    return counts_left[:, :, 1], counts_right[:, :, 1], grad_mix_left, grad_mix_right, from_root.sum(0), marginals


class Inside(torch.autograd.Function):
    """log Z (B,) of each sentence, differentiable by the outside pass."""

    @staticmethod
    def forward(ctx, leaf_left, leaf_right, mix_left, mix_right, log_root, lengths, log_mask):
        with denormals_flushed():
            left, right, beta = inside_charts(leaf_left, leaf_right, mix_left, mix_right, log_mask)
        ctx.save_for_backward(left, right, beta, mix_left, mix_right, log_root, lengths)
        return torch.logsumexp(_roots(beta, lengths, log_root), -1)

    @staticmethod
    def backward(ctx, grad):
        left, right, beta, mix_left, mix_right, log_root, lengths = ctx.saved_tensors
        with denormals_flushed():  # backward may run on another thread
            *grads, _ = outside(left, right, beta, mix_left, mix_right, log_root, lengths, grad)
        return (*grads, None, None)


def inside(leaf_left, leaf_right, mix_left, mix_right, log_root, lengths, log_mask=None) -> torch.Tensor:
    """Each sentence's log-likelihood (B,); sentences of at least two words. With `log_mask` (inside_charts), the
    log of the sum over the trees made of the allowed spans alone."""
    return Inside.apply(leaf_left, leaf_right, mix_left, mix_right, log_root, lengths, log_mask)


@torch.no_grad()
def marginals(leaf_left, leaf_right, mix_left, mix_right, log_root, lengths) -> tuple[torch.Tensor, torch.Tensor]:
    """(log Z (B,), span marginals (B, n_max, n_max + 1) by start and width): the expected count of each span."""
    with denormals_flushed():
        left, right, beta = inside_charts(leaf_left, leaf_right, mix_left, mix_right)
        log_z = torch.logsumexp(_roots(beta, lengths, log_root), -1)
        *_, spans = outside(left, right, beta, mix_left, mix_right, log_root, lengths, torch.ones_like(log_z))
    return log_z, spans
