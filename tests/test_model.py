"""The ON-LSTM maths: cumax, master gates, the cell update, distances, and fast vs reference layer."""
from __future__ import annotations

import itertools
import os
import shutil

import pytest
import torch

import onlstm_cli.model as model_module
from onlstm_cli import cell_kernel
from onlstm_cli.model import (
    LockedDropout,
    ModelConfig,
    ONLSTMLayer,
    ONLSTMLanguageModel,
    ONLSTMLayerFunction,
    cell_update,
    cumax,
    forget_distance,
    master_input_gate,
    reference_layer,
)

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


# --- the fast layer against the reference --------------------------------------------------------

def layer_inputs(T, B, H, chunk, dtype, seed, scale=0.5):
    n = H // chunk
    g = torch.Generator().manual_seed(seed)
    G = 2 * n + 4 * H

    def r(*shape):
        return (torch.randn(*shape, generator=g, dtype=dtype) * scale).requires_grad_()

    return r(T, B, G), r(G, H), r(B, H), r(B, H)


def run_both(fn, inputs, chunk, rule, upstream):
    x, w, h0, c0 = [t.detach().clone().requires_grad_() for t in inputs]
    out, c_last, mf, mi = fn(x, w, h0, c0, chunk, rule)
    d_out, d_c = upstream
    loss = (out * d_out).sum() + (c_last * d_c).sum()
    grads = torch.autograd.grad(loss, [x, w, h0, c0])
    return (out.detach(), c_last.detach(), mf, mi), grads


HAS_COMPILER = bool(os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc"))
needs_kernel = pytest.mark.skipif(not HAS_COMPILER or bool(os.environ.get("ONLSTM_NO_KERNEL")),
                                  reason="no C compiler to build the fused cell kernel, or it is switched off")

# float32 on CPU takes the C cell and oneDNN's packed matmul where they can be had; the torch kernels
# and the plain matmul are the fallbacks, and the only path in float64
LAYER_PATHS = [  # (dtype, tolerance, fused C cell, oneDNN matmul)
    pytest.param(torch.float32, 1e-5, True, True, id="float32-fused-onednn", marks=needs_kernel),
    pytest.param(torch.float32, 1e-5, False, True, id="float32-torch-onednn"),
    pytest.param(torch.float32, 1e-5, False, False, id="float32-torch-plain-matmul"),
    pytest.param(torch.float64, 1e-10, False, False, id="float64"),
]


@pytest.mark.parametrize("dtype,tol,fused,onednn", LAYER_PATHS)
@pytest.mark.parametrize("rule", ["paper", "symmetric"])
@pytest.mark.parametrize("T,B", [(1, 1), (7, 3)])
def test_fast_layer_matches_reference(rule, dtype, tol, T, B, fused, onednn, monkeypatch):
    monkeypatch.setattr(model_module, "FUSED_CELL", fused)
    monkeypatch.setattr(model_module, "ONEDNN_LINEAR", onednn)
    H, chunk = 20, 5
    inputs = layer_inputs(T, B, H, chunk, dtype, seed=T * 10 + B)
    assert model_module.use_fused_cell(inputs[0]) == fused
    g = torch.Generator().manual_seed(99)
    upstream = (torch.randn(T, B, H, generator=g, dtype=dtype), torch.randn(B, H, generator=g, dtype=dtype))
    fast, fast_grads = run_both(ONLSTMLayerFunction.apply, inputs, chunk, rule, upstream)
    ref, ref_grads = run_both(reference_layer, inputs, chunk, rule, upstream)
    for name, a, b in zip(["outputs", "last cell", "master forget", "master input"], fast, ref):
        assert a.shape == b.shape, name
        assert torch.allclose(a, b, atol=tol, rtol=0), f"{name}: max diff {(a - b).abs().max()}"
    for name, a, b in zip(["x_gates", "w_hh", "h0", "c0"], fast_grads, ref_grads):
        assert a.abs().sum() > 0, name
        assert torch.allclose(a, b, atol=tol, rtol=0), f"d {name}: max diff {(a - b).abs().max()}"


@needs_kernel
@pytest.mark.parametrize("rule", ["paper", "symmetric"])
def test_fused_cell_with_saturated_gates_matches_torch(rule, monkeypatch):
    """Pre-activations far past where sigmoid saturates (and beyond expf's range) stay exact, not NaN."""
    x, w, h0, c0 = (t.detach() for t in layer_inputs(5, 3, 20, 5, torch.float32, seed=8))
    x = x * 300
    runs = []
    for fused in (True, False):
        monkeypatch.setattr(model_module, "FUSED_CELL", fused)
        runs.append(model_module.inference_layer(x, w, h0, c0, 5, rule))
    for a, b in zip(*runs):
        assert torch.isfinite(a).all()
        assert torch.allclose(a, b, atol=1e-5, rtol=0)


@needs_kernel
def test_cell_kernel_is_built_once_and_cached(tmp_path):
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    first = cell_kernel.build(compiler, tmp_path)
    stamp = first.stat().st_mtime_ns
    assert cell_kernel.build(compiler, tmp_path) == first and first.stat().st_mtime_ns == stamp
    assert [p.name for p in tmp_path.iterdir()] == [first.name]  # no temporary file left behind
    assert model_module.fused_cell_works()


def test_cell_kernel_can_be_switched_off(monkeypatch):
    monkeypatch.setenv("ONLSTM_NO_KERNEL", "1")
    cell_kernel.load.cache_clear()
    try:
        assert cell_kernel.load() is None
    finally:
        cell_kernel.load.cache_clear()


@pytest.mark.parametrize("with_bias", [True, False])
def test_linear_matches_torch_with_gradients(with_bias):
    g = torch.Generator().manual_seed(4)
    x = torch.randn(7, 3, 12, generator=g, requires_grad=True)
    w = torch.randn(30, 12, generator=g, requires_grad=True)
    b = torch.randn(30, generator=g, requires_grad=True) if with_bias else None
    upstream = torch.randn(7, 3, 30, generator=g)
    results = []
    for fn in (model_module.linear, torch.nn.functional.linear):
        out = fn(x, w, b)
        wrt = [x, w] + ([b] if with_bias else [])
        results.append((out, *torch.autograd.grad((out * upstream).sum(), wrt)))
    for a, e in zip(*results):
        assert a.shape == e.shape
        assert torch.allclose(a, e, atol=1e-4, rtol=1e-5)
    # oneDNN where torch has it, so the test above compared the two implementations
    assert model_module.use_onednn(x) == model_module.onednn_linear_works()


@pytest.mark.parametrize("fused", [True, False])
def test_drop_connect_zeroes_a_fraction_p_and_rescales_the_rest(monkeypatch, fused):
    monkeypatch.setattr(model_module, "FUSED_CELL", fused)
    w = torch.ones(400, 501, requires_grad=True)  # an odd count: the C mask draws two numbers at a time
    dropped = model_module.drop_connect(w, 0.3, training=True)
    zero = dropped == 0
    assert abs(zero.float().mean().item() - 0.3) < 0.01
    assert torch.allclose(dropped[~zero], torch.tensor(1 / 0.7))
    (grad,) = torch.autograd.grad(dropped.sum(), w)
    assert torch.equal(grad, dropped.detach())  # the gradient flows through the kept weights only
    assert model_module.drop_connect(w, 0.3, training=False) is w
    assert model_module.drop_connect(w, 0.0, training=True) is w


@pytest.mark.skipif(cell_kernel.load() is None, reason="no C compiler here")
def test_c_drop_mask_is_uniform_independent_and_seeded_by_torch():
    like = torch.empty(1000, 1001)
    torch.manual_seed(5)
    a = model_module.drop_mask(like, 0.45)
    b = model_module.drop_mask(like, 0.45)
    torch.manual_seed(5)
    assert torch.equal(model_module.drop_mask(like, 0.45), a)  # torch.manual_seed reproduces a run
    assert not torch.equal(a, b)
    kept = (a != 0).float()
    assert a.unique().tolist() == [0.0, pytest.approx(1 / 0.55)]
    assert abs(kept.mean().item() - 0.55) < 0.003
    # no pattern over rows, columns or the two numbers drawn together, nor between successive masks
    assert (kept.mean(1) - 0.55).abs().max() < 0.07 and (kept.mean(0) - 0.55).abs().max() < 0.07
    flat = kept.flatten()
    assert abs(flat[0::2].mean() - flat[1::2].mean()) < 0.005
    assert abs((flat[:-1] * flat[1:]).mean() - 0.55 ** 2) < 0.003
    assert abs((kept * (b != 0).float()).mean() - 0.55 ** 2) < 0.003
    for p in (0.01, 0.99):
        assert abs((model_module.drop_mask(like, p) != 0).float().mean().item() - (1 - p)) < 0.002


def test_step_linear_paths_agree():
    g = torch.Generator().manual_seed(3)
    x, w, add = torch.randn(5, 12, generator=g), torch.randn(30, 12, generator=g), torch.randn(5, 30, generator=g)
    expected = add + x @ w.t()
    for batch in (5, 64):  # a weight packed for another batch size still gives the same product
        prepared = model_module.step_weight(w, batch)
        assert torch.allclose(model_module.step_linear(x, prepared, add), expected, atol=1e-5)
        assert torch.allclose(model_module.step_linear(x, prepared), x @ w.t(), atol=1e-5)
    assert model_module.step_weight(w, 5)[0] == ("onednn" if model_module.onednn_linear_works() else "plain")
    assert model_module.step_weight(w.double(), 5)[0] == "plain"


def test_fast_tanh_matches_tanh():
    x = torch.linspace(-30, 30, 10001)
    out = torch.empty_like(x)
    assert torch.allclose(model_module.fast_tanh(x, out=out), torch.tanh(x), atol=2e-7, rtol=0)
    assert out[0] == -1.0 and out[-1] == 1.0


@pytest.mark.parametrize("rule", ["paper", "symmetric"])
def test_fast_layer_gradcheck(rule):
    x, w, h0, c0 = layer_inputs(3, 2, 10, 5, torch.float64, seed=5)
    assert torch.autograd.gradcheck(lambda *a: ONLSTMLayerFunction.apply(*a, 5, rule)[:2], (x, w, h0, c0))


def test_fast_layer_gradient_when_only_outputs_are_used():
    """The last cell unused (its gradient is None or zeros) must still give reference gradients."""
    inputs = layer_inputs(4, 2, 10, 5, torch.float64, seed=3)
    grads = []
    for fn in (ONLSTMLayerFunction.apply, reference_layer):
        x, w, h0, c0 = [t.detach().clone().requires_grad_() for t in inputs]
        out = fn(x, w, h0, c0, 5, "paper")[0]
        grads.append(torch.autograd.grad(out.sum(), [x, w, h0, c0]))
    for a, b in zip(*grads):
        assert torch.allclose(a, b, atol=1e-10)


@pytest.mark.parametrize("dtype,tol,fused,onednn", LAYER_PATHS)
def test_a_start_state_without_gradient_is_skipped_and_changes_no_other_gradient(dtype, tol, fused, onednn,
                                                                              monkeypatch):
    """Training detaches the state between batches: the backward pass then leaves out the last recurrent
    product, which would only give dL/dh_0, and every other gradient stays the same."""
    monkeypatch.setattr(model_module, "FUSED_CELL", fused)
    monkeypatch.setattr(model_module, "ONEDNN_LINEAR", onednn)
    T, chunk = 5, 5
    inputs = layer_inputs(T, 3, 20, chunk, dtype, seed=8)
    products = []
    step_linear = model_module.step_linear
    monkeypatch.setattr(model_module, "step_linear", lambda *a, **k: products.append(1) or step_linear(*a, **k))
    grads = {}
    for h0_grad in (True, False):
        x, w, h0, c0 = [t.detach().clone().requires_grad_(h0_grad or k != 2) for k, t in enumerate(inputs)]
        products.clear()
        out, c_last, _, _ = ONLSTMLayerFunction.apply(x, w, h0, c0, chunk, "paper")
        wrt = [x, w, c0] + ([h0] if h0_grad else [])
        grads[h0_grad] = torch.autograd.grad(out.sum() + c_last.sum(), wrt)
        assert len(products) == 2 * T - (0 if h0_grad else 1)  # T forward steps, T or T − 1 backward
    for a, b in zip(grads[True], grads[False]):
        assert torch.equal(a, b)


def test_weight_grad_comes_out_in_the_weights_layout():
    g = torch.Generator().manual_seed(6)
    d_out, x = torch.randn(50, 30, generator=g), torch.randn(50, 12, generator=g)
    expected = d_out.t() @ x
    column = model_module.weight_grad(d_out, x, model_module.column_major(torch.empty(30, 12)))
    row = model_module.weight_grad(d_out, x, torch.empty(30, 12))
    assert model_module.is_column_major(column) and row.is_contiguous()
    for got in (column, row, model_module.weight_grad(d_out, x)):
        assert torch.allclose(got, expected, atol=1e-5)


def test_recurrent_weights_are_column_major_and_train_like_row_major_ones():
    """Their gradients come out of the products column-major, so autograd takes them as they are; a
    model with the same weights stored row by row must get the same gradients."""
    models = [tiny_lm(dropout=0, dropout_h=0, dropout_i=0, dropout_e=0, weight_drop=0).train() for _ in range(2)]
    for layer in models[1].layers:
        for linear_map in (layer.ih, layer.hh):
            linear_map.weight = torch.nn.Parameter(linear_map.weight.detach().contiguous())
    x, y = tokens(T=8, B=4), tokens(T=8, B=4, seed=1)
    for model in models:
        model(x, targets=y).loss.backward()
    for layer, row_major in zip(*(m.layers for m in models)):
        for name in ("ih", "hh"):
            weight, other = getattr(layer, name).weight, getattr(row_major, name).weight
            assert model_module.is_column_major(weight) and torch.equal(weight, other)
            assert weight.grad.stride() == weight.stride(), name  # taken as it came, not copied
            assert torch.allclose(weight.grad, other.grad, atol=1e-5), name


# --- the language model --------------------------------------------------------------------------

def tiny_lm(**overrides) -> ONLSTMLanguageModel:
    torch.manual_seed(0)
    config = dict(vocab_size=30, emb_size=20, hidden_size=40, n_layers=3, chunk_size=5)
    config.update(overrides)
    return ONLSTMLanguageModel(ModelConfig(**config))


def tokens(T=6, B=3, V=30, seed=0):
    return torch.randint(0, V, (T, B), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("rule", ["paper", "symmetric"])
def test_lm_reference_and_fast_agree_in_eval_mode(rule):
    model = tiny_lm(master_input=rule).double().eval()
    x = tokens()
    with torch.no_grad():
        fast = model(x)
        ref = model(x, reference=True)
    assert fast.logits.shape == (6, 3, 30)
    assert torch.allclose(fast.logits, ref.logits, atol=1e-10)
    assert len(fast.distances) == 3
    for a, b in zip(fast.distances, ref.distances):
        assert a.shape == (6, 3)
        assert torch.allclose(a, b, atol=1e-10)
    for (h1, c1), (h2, c2) in zip(fast.state, ref.state):
        assert torch.allclose(h1, h2, atol=1e-10) and torch.allclose(c1, c2, atol=1e-10)


@pytest.mark.parametrize("rule", ["paper", "symmetric"])
def test_lm_all_three_paths_agree(rule):
    """no_grad runs the lean inference layer, grad mode the autograd.Function, reference=True the oracle."""
    model = tiny_lm(master_input=rule).double().eval()
    x = tokens(T=9, B=4, seed=3)
    with torch.no_grad():
        lean = model(x)
        ref = model(x, reference=True)
    fast = model(x)
    assert fast.logits.requires_grad and not lean.logits.requires_grad
    for out in (lean, fast):
        assert torch.allclose(out.logits, ref.logits, atol=1e-10)
        for a, b in zip(out.distances, ref.distances):
            assert torch.allclose(a, b, atol=1e-10)
        for a, b in zip(out.master_input, ref.master_input):
            assert torch.allclose(a, b, atol=1e-10)


def test_up_to_layer_gives_the_same_distances_and_no_logits():
    model = tiny_lm().eval()
    x = tokens(T=7, B=2, seed=4)
    with torch.no_grad():
        full = model(x)
        part = model(x, up_to_layer=2)
    assert part.logits is None
    assert len(part.distances) == 2
    for a, b in zip(part.distances, full.distances[:2]):
        assert torch.equal(a, b)


def test_first_layer_table_gives_the_same_outputs_and_follows_weight_changes():
    model = tiny_lm().eval()
    x = tokens(T=9, B=4, seed=6)
    with torch.no_grad():
        tabled = model(x)
        assert model._gate_table is not None
    direct = model(x)  # with gradients on, the table is not used
    assert torch.allclose(tabled.logits, direct.logits, atol=1e-5)
    for a, b in zip(tabled.distances, direct.distances):
        assert torch.allclose(a, b, atol=1e-5)
    with torch.no_grad():
        model.embedding.weight[3] += 0.5  # an in-place change must not leave a stale table behind
        model.layers[0].ih.bias.mul_(2.0)
        changed = model(x)
    assert torch.allclose(changed.logits, model(x).logits, atol=1e-5)
    assert not torch.allclose(changed.logits, tabled.logits, atol=1e-3)


def test_packed_recurrent_weight_is_kept_at_inference_and_follows_weight_changes():
    model = tiny_lm().eval()
    x = tokens(T=9, B=4, seed=7)
    with torch.no_grad():
        first = model(x, with_logits=False)
        kept = model.layers[1]._packed
        assert kept is not None
        model(tokens(T=5, B=2, seed=8), with_logits=False)  # another batch size reuses it
        assert model.layers[1]._packed is kept
        model.layers[1].hh.weight.mul_(1.5)  # an in-place change (an optimizer step) repacks
        changed = model(x, with_logits=False)
        assert model.layers[1]._packed is not kept
    expected = model(x, reference=True, with_logits=False)
    for a, b in zip(changed.distances, expected.distances):
        assert torch.allclose(a, b, atol=1e-5)
    assert not torch.allclose(changed.distances[1], first.distances[1], atol=1e-4)


def test_first_layer_table_is_not_used_in_training_or_for_few_tokens():
    model = tiny_lm(vocab_size=1000)
    with torch.no_grad():
        model(tokens(T=30, B=10))
        assert model._gate_table is None  # training mode: dropout makes projections differ per token
        model.eval()
        model(tokens(T=3, B=2))
        assert model._gate_table is None  # 6 tokens do not pay for a 1000-row table
        model(tokens(T=30, B=10))
        assert model._gate_table is not None


def test_lm_gradients_reach_every_parameter():
    model = tiny_lm().train()
    out = model(tokens(T=8, B=4))
    loss = torch.nn.functional.cross_entropy(out.logits.reshape(-1, 30), tokens(T=8, B=4, seed=1).reshape(-1))
    loss.backward()
    names = [name for name, _ in model.named_parameters()]
    assert any(name.startswith("layers.2.hh") for name in names)
    for name, p in model.named_parameters():
        assert p.grad is not None, name
        assert torch.isfinite(p.grad).all(), name
        assert p.grad.abs().sum() > 0, name


def test_lm_distances_are_in_level_range():
    model = tiny_lm().eval()
    with torch.no_grad():
        out = model(tokens(), with_logits=False)
    assert out.logits is None
    levels = [layer.n_levels for layer in model.layers]
    assert levels == [8, 8, 4]
    for d, n in zip(out.distances, levels):
        assert (d >= 1 - 1e-5).all() and (d <= n + 1e-5).all()


def test_lm_state_carries_over():
    """Running two halves with the state carried over equals running the whole sequence."""
    model = tiny_lm().double().eval()
    x = tokens(T=8)
    with torch.no_grad():
        whole = model(x)
        first = model(x[:4])
        second = model(x[4:], first.state)
    assert torch.allclose(torch.cat([first.logits, second.logits]), whole.logits, atol=1e-10)


def test_dropout_off_in_eval_and_on_in_train():
    model = tiny_lm()
    x = tokens()
    model.eval()
    with torch.no_grad():
        assert torch.equal(model(x).logits, model(x).logits)
    model.train()
    with torch.no_grad():
        a, b = model(x).logits, model(x).logits
    assert not torch.allclose(a, b)


def test_dropconnect_alone_changes_train_outputs():
    model = tiny_lm(dropout=0.0, dropout_h=0.0, dropout_i=0.0, dropout_e=0.0, weight_drop=0.5)
    x = tokens()
    model.train()
    with torch.no_grad():
        a, b = model(x).logits, model(x).logits
    assert not torch.allclose(a, b)
    model.eval()
    with torch.no_grad():
        assert torch.equal(model(x).logits, model(x).logits)


def test_no_dropout_at_all_makes_train_mode_deterministic():
    model = tiny_lm(dropout=0.0, dropout_h=0.0, dropout_i=0.0, dropout_e=0.0, weight_drop=0.0).train()
    x = tokens()
    with torch.no_grad():
        assert torch.equal(model(x).logits, model(x).logits)


def test_locked_dropout_mask_is_shared_over_time():
    drop = LockedDropout().train()
    x = torch.ones(9, 4, 50)
    y = drop(x, 0.5)
    assert torch.equal(y, y[:1].expand_as(y))  # same mask at every time step
    assert (y == 0).any() and (y == 2).any()   # some dropped, the rest scaled by 1/(1−p)
    drop.eval()
    assert torch.equal(drop(x, 0.5), x)


def test_bad_sizes_are_rejected():
    with pytest.raises(ValueError):
        tiny_lm(hidden_size=42)
    with pytest.raises(ValueError):
        tiny_lm(master_input="other")


def test_onednn_kernel_caches_are_capped_unless_the_user_chose():
    import subprocess
    import sys
    script = ("import os, onlstm_cli.model; "
              "print(os.environ['ONEDNN_PRIMITIVE_CACHE_CAPACITY'], os.environ['LRU_CACHE_CAPACITY'])")
    env = {k: v for k, v in os.environ.items() if k not in ("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "LRU_CACHE_CAPACITY")}
    capped = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    assert capped.stdout.split() == ["16", "16"]
    chosen = subprocess.run([sys.executable, "-c", script], env={**env, "LRU_CACHE_CAPACITY": "300"},
                            capture_output=True, text=True, check=True)
    assert chosen.stdout.split() == ["16", "300"]


def test_parsing_asks_for_a_larger_kernel_cache_unless_the_user_chose():
    import subprocess
    import sys
    script = ("import os, onlstm_cli.model as m; m.size_kernel_cache(m.PARSE_KERNEL_CACHE); "
              "print(os.environ['ONEDNN_PRIMITIVE_CACHE_CAPACITY'], os.environ['LRU_CACHE_CAPACITY'])")
    env = {k: v for k, v in os.environ.items() if k not in ("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "LRU_CACHE_CAPACITY")}
    parsing = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    from onlstm_cli.model import PARSE_KERNEL_CACHE
    assert parsing.stdout.split() == [str(PARSE_KERNEL_CACHE), "16"]
    chosen = subprocess.run([sys.executable, "-c", script], env={**env, "ONEDNN_PRIMITIVE_CACHE_CAPACITY": "7"},
                            capture_output=True, text=True, check=True)
    assert chosen.stdout.split() == ["7", "16"]


def packed_layer_and_batch(lengths: list[int], seed: int):
    """A small layer (6 → 20, chunk 5) and the batch sizes of sequences of `lengths`, packed longest first."""
    torch.manual_seed(seed)
    if not model_module.use_fused_cell(torch.zeros(1)):
        pytest.skip("no C kernel here")
    return ONLSTMLayer(6, 20, 5, weight_drop=0.0).eval(), [sum(1 for n in lengths if n > t) for t in range(lengths[0])]


def test_packed_layer_rounds_its_output_rows_and_zeroes_the_extra_ones():
    """The next layer's input projection then meets few matrix shapes (oneDNN compiles one per shape)."""
    from onlstm_cli.model import PACKED_ROWS, packed_inference_layer, step_weight
    lengths = [7, 5, 5, 2]
    layer, batch_sizes = packed_layer_and_batch(lengths, seed=0)
    N = sum(lengths)
    x_gates = torch.randn(N, 4 * 20 + 2 * 4)
    zeros = torch.zeros(4, 20)
    with torch.no_grad():
        out, master_f = packed_inference_layer(x_gates, batch_sizes, step_weight(layer.hh.weight, 4), zeros, zeros,
                                               5)
        padded, _ = packed_inference_layer(torch.cat([x_gates, torch.randn(3, x_gates.shape[1])]), batch_sizes,
                                           step_weight(layer.hh.weight, 4), zeros, zeros, 5)
    assert out.shape == (PACKED_ROWS, 20) and master_f.shape == (N, 4)
    assert torch.all(out[N:] == 0) and torch.any(out[:N] != 0)
    assert torch.equal(out, padded)  # rows of x_gates past N are ignored


def test_packed_layer_from_its_inputs_with_the_joined_weight_equals_the_projected_path():
    from onlstm_cli.model import packed_inference_layer, step_weight
    lengths = [6, 6, 3, 1]
    layer, batch_sizes = packed_layer_and_batch(lengths, seed=1)
    x = torch.randn(sum(lengths), 6)
    h0, c0 = torch.randn(4, 20), torch.randn(4, 20)
    with torch.no_grad():
        x_gates = x @ layer.ih.weight.t() + layer.ih.bias
        projected = packed_inference_layer(x_gates, batch_sizes, step_weight(layer.hh.weight, 4), h0, c0, 5)
        joined_weight = layer.joined_step_weight(4)
        joined = packed_inference_layer(None, batch_sizes, joined_weight, h0, c0, 5, x=x, bias=layer.ih.bias)
        assert layer.joined_step_weight(2) is joined_weight  # kept while the weights stay the same
        layer.hh.weight.mul_(0.5)
        assert layer.joined_step_weight(4) is not joined_weight
    for a, b in zip(projected, joined):
        assert torch.allclose(a, b, atol=1e-5)


def test_packed_top_layer_computes_only_the_master_gates_at_each_sequences_last_step():
    """A parse's last layer: the same master forget gates, with fewer rows in the full step products."""
    from onlstm_cli.model import packed_inference_layer
    lengths = [6, 4, 4, 1]
    layer, batch_sizes = packed_layer_and_batch(lengths, seed=4)
    x = torch.randn(sum(lengths), 6)
    h0, c0 = torch.randn(4, 20), torch.randn(4, 20)
    rows = []
    step_linear = model_module.step_linear

    def counting(inputs, *args, **kwargs):
        rows.append(inputs.shape[0])
        return step_linear(inputs, *args, **kwargs)

    results = {}
    with torch.no_grad(), pytest.MonkeyPatch.context() as patch:
        patch.setattr(model_module, "step_linear", counting)
        for top in (False, True):
            rows.clear()
            masters = layer.joined_step_weight(4, masters_only=True) if top else None
            results[top] = packed_inference_layer(None, batch_sizes, layer.joined_step_weight(4), h0, c0, 5, x=x,
                                                  bias=layer.ih.bias, w_masters=masters)
            results[top, "rows"] = list(rows)
    assert results[True][0] is None
    assert torch.allclose(results[True][1], results[False][1], atol=1e-6)
    assert results[False, "rows"] == batch_sizes
    # batch sizes 4 3 3 3 1 1: each step's ending rows (1 at step 0, 2 at step 3, 1 at step 5) go through
    # the master gates' product before the rest go through the full one; every row through exactly one
    assert results[True, "rows"] == [1, 3, 3, 3, 2, 1, 1, 1]


# --- the decoder's fused loss ------------------------------------------------------------------

def loss_inputs(rows: int, vocab: int = 700, emb: int = 24, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    hidden = torch.randn(rows, emb, generator=g).requires_grad_()
    weight = (torch.randn(vocab, emb, generator=g) * 0.5).requires_grad_()
    bias = (torch.randn(vocab, generator=g) * 0.1).requires_grad_()
    return hidden, weight, bias, torch.randint(0, vocab, (rows,), generator=g)


def loss_and_grads(loss_fn, hidden, weight, bias, targets):
    params = [t.detach().clone().requires_grad_() for t in (hidden, weight, bias)]
    loss = loss_fn(*params, targets)
    loss.backward()
    return [loss.detach()] + [p.grad for p in params]


def plain_loss(reduction):
    return lambda h, w, b, y: torch.nn.functional.cross_entropy(h @ w.t() + b, y, reduction=reduction)


@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("rows", [1, 37, model_module.LOSS_CHUNK_ROWS + 3])  # one chunk, a partial one, two
def test_decoder_loss_matches_cross_entropy_and_its_gradients(rows, reduction):
    if not model_module.use_fused_cell(torch.zeros(1)):
        pytest.skip("no C compiler: decoder_loss is F.cross_entropy itself")
    args = loss_inputs(rows)
    fused = loss_and_grads(lambda h, w, b, y: model_module.decoder_loss(h, w, b, y, reduction), *args)
    plain = loss_and_grads(plain_loss(reduction), *args)
    for a, b in zip(fused, plain):
        assert torch.allclose(a, b, rtol=1e-5, atol=1e-5)


def test_decoder_loss_reuses_its_buffer_without_mixing_up_steps():
    """Windows of changing length reuse one gradient buffer; two losses alive at once must not share it."""
    if not model_module.use_fused_cell(torch.zeros(1)):
        pytest.skip("no C compiler")
    for rows in (40, 25, 49):
        args = loss_inputs(rows, seed=rows)
        fused = loss_and_grads(model_module.decoder_loss, *args)
        for a, b in zip(fused, loss_and_grads(plain_loss("mean"), *args)):
            assert torch.allclose(a, b, atol=1e-5)
    first, second = loss_inputs(30, seed=1), loss_inputs(30, seed=2)
    params = [[t.detach().clone().requires_grad_() for t in args[:3]] for args in (first, second)]
    losses = [model_module.decoder_loss(*p, args[3]) for p, args in zip(params, (first, second))]
    (losses[0] + losses[1]).backward()  # both forwards ran before either backward
    for p, args in zip(params, (first, second)):
        expected = loss_and_grads(plain_loss("mean"), *args)[1:]
        for got, want in zip((t.grad for t in p), expected):
            assert torch.allclose(got, want, atol=1e-5)


def test_decoder_loss_without_gradients_keeps_no_gradient_buffer():
    if not model_module.use_fused_cell(torch.zeros(1)):
        pytest.skip("no C compiler")
    hidden, weight, bias, targets = loss_inputs(20)
    model_module.decoder_loss(hidden, weight, bias, targets).backward()
    spare = model_module.DecoderCrossEntropy._spare.buffer
    assert spare is not None  # with gradients the buffer is handed back for the next step
    with torch.no_grad():  # validation: parameters still require grad, yet no gradient is formed
        loss = model_module.decoder_loss(hidden, weight, bias, targets, "sum")
    assert model_module.DecoderCrossEntropy._spare.buffer is spare and not loss.requires_grad
    expected = torch.nn.functional.cross_entropy(hidden @ weight.t() + bias, targets, reduction="sum")
    assert torch.allclose(loss, expected, rtol=1e-5)


def test_decoder_loss_rejects_targets_outside_the_vocabulary():
    hidden, weight, bias, targets = loss_inputs(5)
    targets[2] = weight.shape[0]
    with pytest.raises(IndexError, match="target word ids"):
        model_module.decoder_loss(hidden, weight, bias, targets)


def test_lm_loss_equals_cross_entropy_of_its_logits():
    model = tiny_lm().eval()
    x, y = tokens(T=8, B=4), tokens(T=8, B=4, seed=1)
    with torch.no_grad():
        logits = model(x).logits
        out = model(x, targets=y)
    assert out.logits is None
    expected = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
    assert torch.allclose(out.loss, expected, atol=1e-5)
    with pytest.raises(ValueError, match="not both"):
        model(x, targets=y, up_to_layer=2)


def test_embedding_dropout_drops_whole_word_types():
    torch.manual_seed(3)
    embed = torch.nn.Embedding(50, 8)
    tokens = torch.randint(0, 50, (40, 10))
    out = model_module.embedding_dropout(embed, tokens, 0.4, training=True)
    dropped = (out == 0).all(-1)
    kept = ~dropped
    assert torch.allclose(out[kept], embed.weight[tokens][kept] / 0.6)
    for word in tokens.unique():  # every occurrence of a word shares its fate
        assert dropped[tokens == word].all() or kept[tokens == word].all()
    fraction = torch.stack([dropped[tokens == word][0] for word in tokens.unique()]).float().mean()
    assert 0.2 < fraction < 0.6  # of the word types
    assert torch.equal(model_module.embedding_dropout(embed, tokens, 0.4, training=False), embed(tokens))
