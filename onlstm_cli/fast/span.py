"""The span parser's trees at inference (span_parser.py): span scores and CKY, by the C kernel where it runs
(cell_kernel.c, `onlstm_span_tree`: one pass per sentence that keeps only the (n + 1)² best sums, never a
(n, n, width) tensor), else by torch, in blocks of sentences whose span tensors fit a fixed budget. Both
find the same tree (probed once, as the cell is)."""
from __future__ import annotations

import functools
from typing import Callable

import torch

from onlstm_cli.fast import ckernel

# The torch path's (sentences, n + 1, n + 1, width) hidden layer is built a few rows of spans at a time,
# and its batches are cut so that their (n + 1)² tables stay under this many entries.
TORCH_BLOCK_ENTRIES = 1 << 22


def span_trees(fenceposts: torch.Tensor, lengths: list[int], bias: torch.Tensor, weight: torch.Tensor,
               out_bias: float, cky: Callable) -> list[list[int]]:
    """The split heights of each sentence's best tree: fenceposts (B, ≥ n + 1, width) are the fenceposts'
    first-layer activations g, a span i…j scores weight · relu(g_j − g_i + bias) + out_bias. `cky` is the
    span parser's own CKY (span/model.py), which the torch path runs and the C kernel is checked against:
    the backend is given the definition instead of reaching up for it."""
    fenceposts = fenceposts.detach().float().cpu().contiguous()
    bias, weight = bias.detach().float().cpu().contiguous(), weight.detach().float().cpu().contiguous().view(-1)
    if not c_span_works(cky):
        return _torch_trees(fenceposts, lengths, bias, weight, out_bias, cky)
    return _c_trees(ckernel.load(), fenceposts, lengths, bias, weight, out_bias)


def _c_trees(kernel, fenceposts, lengths, bias, weight, out_bias) -> list[list[int]]:
    """One C call a sentence (a sentence of fewer than two words has no split to choose)."""
    return [kernel.span_tree(fenceposts[b], bias, weight, out_bias, n) if n >= 2 else [0] * n
            for b, n in enumerate(lengths)]


def _torch_trees(fenceposts, lengths, bias, weight, out_bias, cky) -> list[list[int]]:
    trees: list[list[int]] = []
    start = 0
    while start < len(lengths):
        size = max(lengths[start:], default=0) + 1  # sentences come shortest first, but need not
        count = max(1, TORCH_BLOCK_ENTRIES // (size * size))
        block = slice(start, min(start + count, len(lengths)))
        size = max(lengths[block]) + 1
        scores = _torch_scores(fenceposts[block, :size], bias, weight, out_bias)
        trees.extend(cky(scores, lengths[block]))
        start = block.stop
    return trees


def _torch_scores(g: torch.Tensor, bias, weight, out_bias) -> torch.Tensor:
    """(B, size, size) span scores, rows of spans a block at a time."""
    batch, size, width = g.shape
    scores = torch.empty(batch, size, size)
    rows = max(1, TORCH_BLOCK_ENTRIES // max(batch * size * width, 1))
    shifted = g + bias
    for i in range(0, size, rows):
        hidden = torch.relu_(shifted[:, None, :, :] - g[:, i:i + rows, None, :])  # [b, i, j] = g_j − g_i + bias
        scores[:, i:i + rows] = hidden @ weight + out_bias
    return scores


@functools.lru_cache(maxsize=None)
def c_span_works(cky: Callable) -> bool:
    """Whether the C kernel is built and finds the torch path's trees (by `cky`) on random scores (probed once)."""
    kernel = ckernel.load()
    if kernel is None:
        return False
    g = torch.Generator().manual_seed(0)
    lengths = [2, 5, 9, 1]
    fenceposts = torch.randn(len(lengths), 10, 7, generator=g)
    bias, weight = torch.randn(7, generator=g), torch.randn(7, generator=g)
    return _torch_trees(fenceposts, lengths, bias, weight, 0.5, cky) == _c_trees(kernel, fenceposts, lengths, bias,
                                                                             weight, 0.5)
