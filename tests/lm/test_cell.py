"""The ON-LSTM maths (onlstm_cli/lm/cell.py): cumax, the master gates, the cell update, distances."""
from __future__ import annotations

import itertools

import pytest
import torch

from onlstm_cli.lm.cell import cell_update, cumax, forget_distance, master_input_gate

SHAPES = [(7,), (3, 5), (2, 4, 10), (1, 1, 1, 3)]
HARD = 1000.0  # softmax of HARD·onehot is an exact one-hot in float64 (exp(−1000) underflows to 0)


def hard_logits(n: int, d: int) -> torch.Tensor:
    return torch.nn.functional.one_hot(torch.tensor(d), n).double() * HARD


# --- cumax and the master gates ----------------------------------------------------------------

@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("scale", [0.1, 1.0, 10.0])
def test_cumax_is_monotone_and_ends_at_one(shape, scale):
    g = torch.Generator().manual_seed(hash((shape, scale)) % 2**31)
    x = torch.randn(*shape, generator=g, dtype=torch.float64) * scale
    y = cumax(x)
    assert y.shape == x.shape
    assert (y[..., 1:] - y[..., :-1] >= -1e-12).all()
    assert torch.allclose(y[..., -1], torch.ones_like(y[..., -1]), atol=1e-12)
    assert (y >= 0).all() and (y <= 1 + 1e-12).all()


def test_cumax_along_another_dim():
    x = torch.randn(6, 4, dtype=torch.float64)
    y = cumax(x, dim=0)
    assert (y[1:] - y[:-1] >= -1e-12).all()
    assert torch.allclose(y[-1], torch.ones(4, dtype=torch.float64))


@pytest.mark.parametrize("shape", SHAPES)
def test_master_input_paper_decreases_from_about_one_to_zero(shape):
    x = torch.randn(*shape, dtype=torch.float64)
    y = master_input_gate(x, "paper")
    p = torch.softmax(x, -1)
    assert (y[..., 1:] - y[..., :-1] <= 1e-12).all()
    assert torch.allclose(y[..., 0], 1 - p[..., 0])  # "~1": one minus the first level's probability
    assert (y[..., 0] <= 1).all()
    assert torch.allclose(y[..., -1], torch.zeros_like(y[..., -1]), atol=1e-12)


@pytest.mark.parametrize("shape", SHAPES)
def test_master_input_symmetric_decreases_and_starts_at_one(shape):
    x = torch.randn(*shape, dtype=torch.float64)
    y = master_input_gate(x, "symmetric")
    p = torch.softmax(x, -1)
    assert (y[..., 1:] - y[..., :-1] <= 1e-12).all()
    assert torch.allclose(y[..., 0], torch.ones_like(y[..., 0]), atol=1e-12)
    assert torch.allclose(y[..., -1], p[..., -1])
    # It is the mirror image of cumax.
    assert torch.allclose(y, torch.flip(cumax(torch.flip(x, [-1])), [-1]))


def test_master_input_unknown_rule():
    with pytest.raises(ValueError):
        master_input_gate(torch.zeros(3), "other")


@pytest.mark.parametrize("n", [1, 4, 6])
def test_paper_input_gate_at_d_equals_symmetric_at_d_minus_one(n):
    for d in range(1, n):
        paper = master_input_gate(hard_logits(n, d), "paper")
        assert torch.equal(paper, 1 - cumax(hard_logits(n, d)))
        symmetric = master_input_gate(hard_logits(n, d - 1), "symmetric")
        assert torch.equal(paper, symmetric)
        # and as a step vector: ones strictly below d
        assert paper.tolist() == [1.0] * d + [0.0] * (n - d)
    # d = 0 is all zeros for the paper rule: nothing is written.
    assert master_input_gate(hard_logits(n, 0), "paper").abs().sum() == 0


def test_hard_master_gates_are_step_vectors():
    n = 6
    for d in range(n):
        assert cumax(hard_logits(n, d)).tolist() == [0.0] * d + [1.0] * (n - d)
        assert master_input_gate(hard_logits(n, d), "symmetric").tolist() == [1.0] * (d + 1) + [0.0] * (n - d - 1)


# --- the cell update, case by case -------------------------------------------------------------

def expected_cell(c_prev, c_hat, f, i, d_f, d_i):
    """The seed's piecewise update per level (levels 0..n−1), written out independently.

    f̃ has ones on [d_f, n−1], ĩ (symmetric) has ones on [0, d_i].
    """
    n = c_prev.shape[0]
    out = torch.empty_like(c_prev)
    for k in range(n):
        if d_f <= d_i:
            if k < d_f:
                out[k] = c_hat[k]
            elif k <= d_i:
                out[k] = f[k] * c_prev[k] + i[k] * c_hat[k]
            else:
                out[k] = c_prev[k]
        else:
            if k <= d_i:
                out[k] = c_hat[k]
            elif k < d_f:
                out[k] = 0.0
            else:
                out[k] = c_prev[k]
    return out


@pytest.mark.parametrize("n", [1, 2, 5])
def test_cell_update_with_hard_gates_matches_piecewise_formulas(n):
    chunk = 3
    g = torch.Generator().manual_seed(n)
    c_prev, c_hat = (torch.randn(n, chunk, generator=g, dtype=torch.float64) for _ in range(2))
    f, i = (torch.rand(n, chunk, generator=g, dtype=torch.float64) for _ in range(2))
    for d_f, d_i in itertools.product(range(n), range(n)):
        master_f = cumax(hard_logits(n, d_f))[:, None]
        master_i = master_input_gate(hard_logits(n, d_i), "symmetric")[:, None]
        got = cell_update(c_prev, c_hat, f, i, master_f, master_i)
        want = expected_cell(c_prev, c_hat, f, i, d_f, d_i)
        assert torch.allclose(got, want, atol=1e-14), (d_f, d_i)


def test_cell_update_with_all_ones_master_gates_is_plain_lstm():
    """With all-ones master gates the update is the plain LSTM one."""
    c_prev, c_hat = torch.randn(4, 3), torch.randn(4, 3)
    f, i = torch.rand(4, 3), torch.rand(4, 3)
    ones = torch.ones(4, 1)
    assert torch.allclose(cell_update(c_prev, c_hat, f, i, ones, ones), f * c_prev + i * c_hat)


# --- distances ------------------------------------------------------------------------------------

@pytest.mark.parametrize("n", [1, 3, 8])
def test_forget_distance_is_expected_split_level(n):
    logits = torch.randn(5, 2, n, dtype=torch.float64)
    p = torch.softmax(logits, -1)
    k = torch.arange(1, n + 1, dtype=torch.float64)
    expected = (k * p).sum(-1)
    d = forget_distance(cumax(logits))
    assert torch.allclose(d, expected, atol=1e-12)
    assert (d >= 1 - 1e-12).all() and (d <= n + 1e-12).all()


def test_forget_distance_of_hard_gate_is_split_level_plus_one():
    n = 5
    for d in range(n):
        assert forget_distance(cumax(hard_logits(n, d))).item() == pytest.approx(d + 1)
