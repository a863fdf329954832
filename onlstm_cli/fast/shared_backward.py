"""The part of a layer's backward pass that every cell shares (recurrence.py's torch and C cells,
triton_cell.py's Triton cell). It lives apart from both so that neither cell module imports the other:
recurrence.py picks the Triton cell, and the Triton cell must not need recurrence.py to be importable."""
from __future__ import annotations

from onlstm_cli.fast.onednn import step_linear


def next_dh(dg, w_back, d_out, t: int, need_h0: bool):
    """The gradient reaching h_{t−1}: through the recurrence plus from its own output; none reaches a start
    state that needs none (training detaches it between batches)."""
    if t > 0:
        return step_linear(dg, w_back, d_out[t - 1])
    return step_linear(dg, w_back) if need_h0 else None
