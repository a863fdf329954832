"""The fast backends (onlstm_cli/fast): every cell and kind of product against the reference layer,
the selector, the C kernel's build, cache and checked entry points, packed inference, the decoder's loss."""
from __future__ import annotations

import os
import shutil

import pytest
import torch

from onlstm_cli import fast
from onlstm_cli.lm.cell import reference_layer
from onlstm_cli.fast import ckernel, onednn, recurrence, shared_backward
from onlstm_cli.fast.loss import LOSS_CHUNK_ROWS, DecoderCrossEntropy
from onlstm_cli.fast.recurrence import LayerFunction
from onlstm_cli.lm.model import ONLSTMLayer, drop_connect


def fast_layer(x_gates, w_hh, h0, c0, chunk, rule):
    """The layer Function on whatever backend the selector gives these tensors."""
    return LayerFunction.apply(x_gates, w_hh, h0, c0, chunk, rule, fast.backend_of(x_gates))


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


@pytest.mark.parametrize("dtype,tol,fused,use_onednn", LAYER_PATHS)
@pytest.mark.parametrize("rule", ["paper", "symmetric"])
@pytest.mark.parametrize("T,B", [(1, 1), (7, 3)])
def test_fast_layer_matches_reference(rule, dtype, tol, T, B, fused, use_onednn):
    H, chunk = 20, 5
    inputs = layer_inputs(T, B, H, chunk, dtype, seed=T * 10 + B)
    with fast.forced(cell="c" if fused else "torch", onednn=use_onednn):
        assert fast.backend_of(inputs[0]).cell == ("c" if fused else "torch")
        fast_run = run_both(fast_layer, inputs, chunk, rule, upstream_for(T, B, H, dtype))
    compare_with_reference(fast_run, inputs, chunk, rule, upstream_for(T, B, H, dtype), tol)


def upstream_for(T, B, H, dtype):
    g = torch.Generator().manual_seed(99)
    return torch.randn(T, B, H, generator=g, dtype=dtype), torch.randn(B, H, generator=g, dtype=dtype)


def compare_with_reference(fast_run, inputs, chunk, rule, upstream, tol):
    """A layer's outputs, master gates and gradients against the reference layer's, to `tol`."""
    fast, fast_grads = fast_run
    ref, ref_grads = run_both(reference_layer, inputs, chunk, rule, upstream)
    for name, a, b in zip(["outputs", "last cell", "master forget", "master input"], fast, ref):
        assert a.shape == b.shape, name
        assert torch.allclose(a, b, atol=tol, rtol=0), f"{name}: max diff {(a - b).abs().max()}"
    for name, a, b in zip(["x_gates", "w_hh", "h0", "c0"], fast_grads, ref_grads):
        assert a.abs().sum() > 0, name
        assert torch.allclose(a, b, atol=tol, rtol=0), f"d {name}: max diff {(a - b).abs().max()}"


@needs_kernel
@pytest.mark.parametrize("rule", ["paper", "symmetric"])
def test_fused_cell_with_saturated_gates_matches_torch(rule):
    """Pre-activations far past where sigmoid saturates (and beyond expf's range) stay exact, not NaN."""
    x, w, h0, c0 = (t.detach() for t in layer_inputs(5, 3, 20, 5, torch.float32, seed=8))
    x = x * 300
    runs = []
    for cell in ("c", "torch"):
        runs.append(recurrence.inference_layer(x, w, h0, c0, 5, rule, fast.Backend("cpu", cell, False)))
    for a, b in zip(*runs):
        assert torch.isfinite(a).all()
        assert torch.allclose(a, b, atol=1e-5, rtol=0)


@needs_kernel
def test_cell_kernel_is_built_once_and_cached(tmp_path):
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    directory = tmp_path / "cache"
    first = ckernel.build(compiler, directory)
    stamp = first.stat().st_mtime_ns
    assert ckernel.build(compiler, directory) == first and first.stat().st_mtime_ns == stamp
    assert [p.name for p in directory.iterdir()] == [first.name]  # no temporary file left behind
    assert directory.stat().st_mode & 0o777 == 0o700
    assert fast.c_cell_works()


def test_cell_kernel_can_be_switched_off(monkeypatch):
    monkeypatch.setenv("ONLSTM_NO_KERNEL", "1")
    ckernel.load.cache_clear()
    try:
        assert ckernel.load() is None
    finally:
        ckernel.load.cache_clear()


@pytest.mark.parametrize("with_bias", [True, False])
def test_linear_matches_torch_with_gradients(with_bias):
    g = torch.Generator().manual_seed(4)
    x = torch.randn(7, 3, 12, generator=g, requires_grad=True)
    w = torch.randn(30, 12, generator=g, requires_grad=True)
    b = torch.randn(30, generator=g, requires_grad=True) if with_bias else None
    upstream = torch.randn(7, 3, 30, generator=g)
    results = []
    for fn in (fast.linear, torch.nn.functional.linear):
        out = fn(x, w, b)
        wrt = [x, w] + ([b] if with_bias else [])
        results.append((out, *torch.autograd.grad((out * upstream).sum(), wrt)))
    for a, e in zip(*results):
        assert a.shape == e.shape
        assert torch.allclose(a, e, atol=1e-4, rtol=1e-5)
    # oneDNN where torch has it, so the test above compared the two implementations
    assert fast.backend_of(x).onednn == onednn.works()


@pytest.mark.parametrize("fused", [True, False])
def test_drop_connect_zeroes_a_fraction_p_and_rescales_the_rest(fused):
    w = torch.ones(400, 501, requires_grad=True)  # an odd count: the C mask draws two numbers at a time
    if fused and not fast.c_cell_works():
        pytest.skip("no C kernel here")
    with fast.forced(cell="c" if fused else "torch"):
        dropped = drop_connect(w, 0.3, training=True)
    zero = dropped == 0
    assert abs(zero.float().mean().item() - 0.3) < 0.01
    assert torch.allclose(dropped[~zero], torch.tensor(1 / 0.7))
    (grad,) = torch.autograd.grad(dropped.sum(), w)
    assert torch.equal(grad, dropped.detach())  # the gradient flows through the kept weights only
    assert drop_connect(w, 0.3, training=False) is w
    assert drop_connect(w, 0.0, training=True) is w


@pytest.mark.skipif(ckernel.load() is None, reason="no C compiler here")
def test_c_drop_mask_is_uniform_independent_and_seeded_by_torch():
    like = torch.empty(1000, 1001)
    torch.manual_seed(5)
    a = fast.drop_mask(like, 0.45)
    b = fast.drop_mask(like, 0.45)
    torch.manual_seed(5)
    assert torch.equal(fast.drop_mask(like, 0.45), a)  # torch.manual_seed reproduces a run
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
        assert abs((fast.drop_mask(like, p) != 0).float().mean().item() - (1 - p)) < 0.002


def test_step_linear_paths_agree():
    g = torch.Generator().manual_seed(3)
    x, w, add = torch.randn(5, 12, generator=g), torch.randn(30, 12, generator=g), torch.randn(5, 30, generator=g)
    expected = add + x @ w.t()
    for batch in (5, 64):  # a weight packed for another batch size still gives the same product
        for use_onednn in {False, onednn.works()}:
            prepared = onednn.step_weight(w, batch, use_onednn)
            assert prepared[0] == ("onednn" if use_onednn else "plain")
            assert torch.allclose(onednn.step_linear(x, prepared, add), expected, atol=1e-5)
            assert torch.allclose(onednn.step_linear(x, prepared), x @ w.t(), atol=1e-5)
    assert not fast.select("cpu", torch.float64).onednn


def test_fast_tanh_matches_tanh():
    x = torch.linspace(-30, 30, 10001)
    out = torch.empty_like(x)
    assert torch.allclose(recurrence.fast_tanh(x, out=out), torch.tanh(x), atol=2e-7, rtol=0)
    assert out[0] == -1.0 and out[-1] == 1.0


@pytest.mark.parametrize("rule", ["paper", "symmetric"])
def test_fast_layer_gradcheck(rule):
    x, w, h0, c0 = layer_inputs(3, 2, 10, 5, torch.float64, seed=5)
    assert torch.autograd.gradcheck(lambda *a: fast_layer(*a, 5, rule)[:2], (x, w, h0, c0))


def test_fast_layer_gradient_when_only_outputs_are_used():
    """The last cell unused (its gradient is None or zeros) must still give reference gradients."""
    inputs = layer_inputs(4, 2, 10, 5, torch.float64, seed=3)
    grads = []
    for fn in (fast_layer, reference_layer):
        x, w, h0, c0 = [t.detach().clone().requires_grad_() for t in inputs]
        out = fn(x, w, h0, c0, 5, "paper")[0]
        grads.append(torch.autograd.grad(out.sum(), [x, w, h0, c0]))
    for a, b in zip(*grads):
        assert torch.allclose(a, b, atol=1e-10)


@pytest.mark.parametrize("dtype,tol,fused,use_onednn", LAYER_PATHS)
def test_a_start_state_without_gradient_is_skipped_and_changes_no_other_gradient(dtype, tol, fused, use_onednn,
                                                                              monkeypatch):
    """Training detaches the state between batches: the backward pass then leaves out the last recurrent
    product, which would only give dL/dh_0, and every other gradient stays the same."""
    T, chunk = 5, 5
    inputs = layer_inputs(T, 3, 20, chunk, dtype, seed=8)
    products = []
    step_linear = recurrence.step_linear
    counted = lambda *a, **k: products.append(1) or step_linear(*a, **k)  # noqa: E731
    monkeypatch.setattr(recurrence, "step_linear", counted)  # the forward steps
    monkeypatch.setattr(shared_backward, "step_linear", counted)  # the backward's products giving dL/dh
    monkeypatch.setattr(fast, "_FORCED", {"cell": "c" if fused else "torch", "onednn": use_onednn})
    grads = {}
    for h0_grad in (True, False):
        x, w, h0, c0 = [t.detach().clone().requires_grad_(h0_grad or k != 2) for k, t in enumerate(inputs)]
        products.clear()
        out, c_last, _, _ = fast_layer(x, w, h0, c0, chunk, "paper")
        wrt = [x, w, c0] + ([h0] if h0_grad else [])
        grads[h0_grad] = torch.autograd.grad(out.sum() + c_last.sum(), wrt)
        assert len(products) == 2 * T - (0 if h0_grad else 1)  # T forward steps, T or T − 1 backward
    for a, b in zip(grads[True], grads[False]):
        assert torch.equal(a, b)


def test_weight_grad_comes_out_in_the_weights_layout():
    g = torch.Generator().manual_seed(6)
    d_out, x = torch.randn(50, 30, generator=g), torch.randn(50, 12, generator=g)
    expected = d_out.t() @ x
    for use_onednn in {False, onednn.works()}:
        column = onednn.weight_grad(d_out, x, onednn.column_major(torch.empty(30, 12)), use_onednn)
        row = onednn.weight_grad(d_out, x, torch.empty(30, 12), use_onednn)
        assert onednn.is_column_major(column) and row.is_contiguous()
        for got in (column, row, onednn.weight_grad(d_out, x, None, use_onednn)):
            assert torch.allclose(got, expected, atol=1e-5)


def kernel_cache_settings(code: str, **env_vars) -> list[str]:
    """The two kernel-cache variables after running `code` in a fresh interpreter."""
    import subprocess
    import sys
    names = ("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "LRU_CACHE_CAPACITY")
    env = {k: v for k, v in os.environ.items() if k not in names and not k.startswith("_ONLSTM_SET_")}
    script = (f"import os, torch, onlstm_cli.lm.model, onlstm_cli.fast as f; {code}; "
              f"print(*(os.environ.get(n, '-') for n in {names!r}))")
    run = subprocess.run([sys.executable, "-c", script], env={**env, **env_vars}, capture_output=True, text=True,
                         check=True)
    return run.stdout.split()


def test_importing_sets_nothing_and_the_cpu_backend_caps_the_kernel_caches_unless_the_user_chose():
    assert kernel_cache_settings("pass") == ["-", "-"]  # no import-time side effects
    assert kernel_cache_settings("f.select('cpu', torch.float32)") == ["16", "16"]
    assert kernel_cache_settings("f.select('cpu', torch.float32)", LRU_CACHE_CAPACITY="300") == ["16", "300"]


def test_parsing_asks_for_a_larger_kernel_cache_unless_the_user_chose():
    parse = "f.size_kernel_cache(f.PARSE_KERNEL_CACHE); f.select('cpu', torch.float32)"
    assert kernel_cache_settings(parse) == [str(fast.PARSE_KERNEL_CACHE), "16"]
    assert kernel_cache_settings(parse, ONEDNN_PRIMITIVE_CACHE_CAPACITY="7") == ["7", "16"]


def step_weight(weight):
    return onednn.step_weight(weight, 4, fast.backend_of(weight).onednn)


def packed_layer_and_batch(lengths: list[int], seed: int):
    """A small layer (6 → 20, chunk 5) and the batch sizes of sequences of `lengths`, packed longest first."""
    torch.manual_seed(seed)
    if not fast.backend_of(torch.zeros(1)).packs_sentences:
        pytest.skip("no C kernel here")
    return ONLSTMLayer(6, 20, 5, weight_drop=0.0).eval(), [sum(1 for n in lengths if n > t) for t in range(lengths[0])]


def test_packed_layer_rounds_its_output_rows_and_zeroes_the_extra_ones():
    """The next layer's input projection then meets few matrix shapes (oneDNN compiles one per shape)."""
    from onlstm_cli.fast.recurrence import PACKED_ROWS, packed_inference_layer
    lengths = [7, 5, 5, 2]
    layer, batch_sizes = packed_layer_and_batch(lengths, seed=0)
    N = sum(lengths)
    x_gates = torch.randn(N, 4 * 20 + 2 * 4)
    zeros = torch.zeros(4, 20)
    with torch.no_grad():
        out, master_f = packed_inference_layer(x_gates, batch_sizes, step_weight(layer.hh.weight), zeros, zeros,
                                               5)
        padded, _ = packed_inference_layer(torch.cat([x_gates, torch.randn(3, x_gates.shape[1])]), batch_sizes,
                                           step_weight(layer.hh.weight), zeros, zeros, 5)
    assert out.shape == (PACKED_ROWS, 20) and master_f.shape == (N, 4)
    assert torch.all(out[N:] == 0) and torch.any(out[:N] != 0)
    assert torch.equal(out, padded)  # rows of x_gates past N are ignored


def test_packed_layer_from_its_inputs_with_the_joined_weight_equals_the_projected_path():
    from onlstm_cli.fast.recurrence import packed_inference_layer
    lengths = [6, 6, 3, 1]
    layer, batch_sizes = packed_layer_and_batch(lengths, seed=1)
    x = torch.randn(sum(lengths), 6)
    h0, c0 = torch.randn(4, 20), torch.randn(4, 20)
    with torch.no_grad():
        x_gates = x @ layer.ih.weight.t() + layer.ih.bias
        projected = packed_inference_layer(x_gates, batch_sizes, step_weight(layer.hh.weight), h0, c0, 5)
        joined_weight = layer.prepared.joined(4)
        joined = packed_inference_layer(None, batch_sizes, joined_weight, h0, c0, 5, x=x, bias=layer.ih.bias)
        assert layer.prepared.joined(2) is joined_weight  # kept while the weights stay the same
        layer.hh.weight.mul_(0.5)
        assert layer.prepared.joined(4) is not joined_weight
    for a, b in zip(projected, joined):
        assert torch.allclose(a, b, atol=1e-5)


def test_a_layer_that_has_parsed_can_be_copied_and_saved_whole():
    """Its prepared weights (oneDNN's packed layout is an opaque tensor, which can be neither copied nor
    pickled) are left behind and prepared again by the copy: `copy.deepcopy(model).cuda()` after a parse on
    CPU failed on a GPU machine."""
    import copy
    import io
    layer, _ = packed_layer_and_batch([3, 2], seed=2)
    with torch.no_grad():
        kept = layer.prepared.joined(4)
        twin = copy.deepcopy(layer)
        torch.save(layer, io.BytesIO())
    assert layer.prepared.joined(4) is kept  # the original keeps its own
    assert twin.prepared.ih is twin.ih.weight and twin.prepared.hh is twin.hh.weight
    x = torch.randn(2, 6 + 20)  # a step's input beside its hidden state, as the joined weight reads them
    with torch.no_grad():
        assert torch.equal(onednn.step_linear(x, twin.prepared.joined(4)), onednn.step_linear(x, kept))


def test_packed_top_layer_computes_only_the_master_gates_at_each_sequences_last_step():
    """A parse's last layer: the same master forget gates, with fewer rows in the full step products."""
    from onlstm_cli.fast.recurrence import packed_inference_layer
    lengths = [6, 4, 4, 1]
    layer, batch_sizes = packed_layer_and_batch(lengths, seed=4)
    x = torch.randn(sum(lengths), 6)
    h0, c0 = torch.randn(4, 20), torch.randn(4, 20)
    rows = []
    step_linear = recurrence.step_linear

    def counting(inputs, *args, **kwargs):
        rows.append(inputs.shape[0])
        return step_linear(inputs, *args, **kwargs)

    results = {}
    with torch.no_grad(), pytest.MonkeyPatch.context() as patch:
        patch.setattr(recurrence, "step_linear", counting)
        for top in (False, True):
            rows.clear()
            masters = layer.prepared.joined(4, masters_only=True) if top else None
            results[top] = packed_inference_layer(None, batch_sizes, layer.prepared.joined(4), h0, c0, 5, x=x,
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
@pytest.mark.parametrize("rows", [1, 37, LOSS_CHUNK_ROWS + 3])  # one chunk, a partial one, two
def test_decoder_loss_matches_cross_entropy_and_its_gradients(rows, reduction):
    if fast.backend_of(torch.zeros(1)).cell != "c":
        pytest.skip("no C compiler: decoder_loss is F.cross_entropy itself")
    args = loss_inputs(rows)
    fused = loss_and_grads(lambda h, w, b, y: fast.decoder_loss(h, w, b, y, reduction), *args)
    plain = loss_and_grads(plain_loss(reduction), *args)
    for a, b in zip(fused, plain):
        assert torch.allclose(a, b, rtol=1e-5, atol=1e-5)


def test_decoder_loss_reuses_its_buffer_without_mixing_up_steps():
    """Windows of changing length reuse one gradient buffer; two losses alive at once must not share it."""
    if fast.backend_of(torch.zeros(1)).cell != "c":
        pytest.skip("no C compiler")
    for rows in (40, 25, 49):
        args = loss_inputs(rows, seed=rows)
        fused = loss_and_grads(fast.decoder_loss, *args)
        for a, b in zip(fused, loss_and_grads(plain_loss("mean"), *args)):
            assert torch.allclose(a, b, atol=1e-5)
    first, second = loss_inputs(30, seed=1), loss_inputs(30, seed=2)
    params = [[t.detach().clone().requires_grad_() for t in args[:3]] for args in (first, second)]
    losses = [fast.decoder_loss(*p, args[3]) for p, args in zip(params, (first, second))]
    (losses[0] + losses[1]).backward()  # both forwards ran before either backward
    for p, args in zip(params, (first, second)):
        expected = loss_and_grads(plain_loss("mean"), *args)[1:]
        for got, want in zip((t.grad for t in p), expected):
            assert torch.allclose(got, want, atol=1e-5)


def test_decoder_loss_without_gradients_keeps_no_gradient_buffer():
    if fast.backend_of(torch.zeros(1)).cell != "c":
        pytest.skip("no C compiler")
    hidden, weight, bias, targets = loss_inputs(20)
    fast.decoder_loss(hidden, weight, bias, targets).backward()
    spare = DecoderCrossEntropy._spare.buffer
    assert spare is not None  # with gradients the buffer is handed back for the next step
    with torch.no_grad():  # validation: parameters still require grad, yet no gradient is formed
        loss = fast.decoder_loss(hidden, weight, bias, targets, "sum")
    assert DecoderCrossEntropy._spare.buffer is spare and not loss.requires_grad
    expected = torch.nn.functional.cross_entropy(hidden @ weight.t() + bias, targets, reduction="sum")
    assert torch.allclose(loss, expected, rtol=1e-5)


def test_decoder_loss_rejects_targets_outside_the_vocabulary():
    hidden, weight, bias, targets = loss_inputs(5)
    targets[2] = weight.shape[0]
    with pytest.raises(IndexError, match="target word ids"):
        fast.decoder_loss(hidden, weight, bias, targets)


# --- the selector ------------------------------------------------------------------------------

def test_the_selector_picks_per_device_and_dtype_and_can_be_pinned():
    cpu32 = fast.select("cpu", torch.float32)
    assert cpu32.cell == ("c" if fast.c_cell_works() else "torch") and cpu32.onednn == onednn.works()
    assert fast.select("cpu", torch.float64) == fast.Backend("cpu", "torch", False)
    with fast.forced(cell="torch", onednn=False):
        assert fast.select("cpu", torch.float32) == fast.Backend("cpu", "torch", False)
    assert fast.select("cpu", torch.float32) == cpu32  # unpinned again
    with pytest.raises(ValueError, match="cannot run"), fast.forced(cell="triton"):
        fast.select("cpu", torch.float32)
    with pytest.raises(ValueError, match="cannot run"), fast.forced(cell="c"):
        fast.select("cpu", torch.float64)


def test_choosing_a_backend_draws_nothing_from_torchs_random_stream():
    """Each probe runs on its own generator: a seeded run's weights must not depend on whether the backend was
    chosen before or after the seed was set."""
    from conftest import forget_backend_probes
    from onlstm_cli.fast import span
    from onlstm_cli.span.model import cky
    probes = forget_backend_probes()
    torch.manual_seed(5)
    fast.select("cpu", torch.float32)
    span.c_span_works(cky)
    after_probes = torch.rand(4)
    torch.manual_seed(5)
    assert torch.equal(after_probes, torch.rand(4))
    assert all(probe.cache_info().currsize for probe in probes)  # each one did run


def test_onlstm_backend_torch_in_the_environment_pins_the_torch_path(monkeypatch):
    monkeypatch.setenv("ONLSTM_BACKEND", "torch")
    assert fast.select("cpu", torch.float32) == fast.Backend("cpu", "torch", False)


def test_no_module_outside_fast_probes_backends_or_uses_private_torch_ops():
    """The seam: which backend runs is decided in onlstm_cli/fast alone."""
    from pathlib import Path
    package = Path(fast.__file__).parents[1]
    for path in package.glob("*.py"):
        text = path.read_text()
        for needle in ("torch.ops.", "mkldnn", "ckernel", "triton", "FUSED_CELL"):
            assert needle not in text, f"{path.name} uses {needle}"


# --- the C kernel's checked entry points and its cache ---------------------------------------------

@needs_kernel
def test_c_entry_points_refuse_bad_buffers_instead_of_crashing():
    kernel = ckernel.load()
    n, chunk = 2, 3
    H = n * chunk
    gates, cells, h, m = torch.zeros(4, 2 * n + 4 * H), torch.zeros(2, 4, H), torch.zeros(4, H), torch.zeros(4, 2 * n)
    c_rows, h_rows, m_rows = ckernel.Rows(cells, H), ckernel.Rows(h, H), ckernel.Rows(m, 2 * n)
    kernel.forward_step(n, chunk, False, gates, (c_rows, 0), (c_rows, 4), (h_rows, 0), (m_rows, 0))
    assert torch.allclose(m[:, -1], torch.ones(4))  # f̃ ends at 1
    bad_calls = {
        "rows past the end": lambda: kernel.forward_step(n, chunk, False, gates, (c_rows, 0), (c_rows, 5),
                                                         (h_rows, 0), (m_rows, 0)),
        "too few gate columns": lambda: kernel.forward_step(n, chunk, False, gates[:, :-1], (c_rows, 0),
                                                            (c_rows, 4), (h_rows, 0), (m_rows, 0)),
        "a buffer of another width": lambda: kernel.forward_step(n, chunk, False, gates, (c_rows, 0), (c_rows, 4),
                                                                 (m_rows, 0), (h_rows, 0)),
        "float64 gates": lambda: kernel.forward_step(n, chunk, False, gates.double(), (c_rows, 0), (c_rows, 4),
                                                     (h_rows, 0), (m_rows, 0)),
        "strided gates": lambda: kernel.master_gates(n, False, gates.t(), (m_rows, 0)),
        "a float64 buffer": lambda: ckernel.Rows(torch.zeros(4, H, dtype=torch.float64), H),
        "a non-contiguous buffer": lambda: ckernel.Rows(torch.zeros(H, 4).t(), H),
        "targets outside the vocabulary": lambda: kernel.softmax_xent(torch.zeros(2, 5), torch.tensor([0, 5]),
                                                                      torch.zeros(2), None),
        "int32 targets": lambda: kernel.softmax_xent(torch.zeros(2, 5), torch.tensor([0, 1], dtype=torch.int32),
                                                     torch.zeros(2), None),
        "a mask probability of 1": lambda: kernel.drop_mask(torch.zeros(3), 0, 1.0),
    }
    for name, call in bad_calls.items():
        with pytest.raises(ckernel.KernelArgumentError):
            call()
            pytest.fail(name)


@needs_kernel
def test_a_library_in_a_directory_open_to_others_is_never_loaded(tmp_path):
    """Another local user could plant a library there: refuse it and build in a private directory."""
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    planted = shared / f"cell_kernel-{ckernel.cache_key(compiler)}.so"
    planted.write_bytes(b"not a library")
    assert not ckernel.private_dir(shared)
    with pytest.raises(OSError, match="not a private directory"):
        ckernel.build(compiler, shared)
    private = tmp_path / "private"
    planted_private = private / planted.name
    private.mkdir(mode=0o700)
    planted_private.write_bytes(b"not a library")
    planted_private.chmod(0o666)  # ours, but writable by anyone: rebuilt, not loaded
    built = ckernel.build(compiler, private)
    assert built == planted_private and built.read_bytes()[:4] == b"\x7fELF"


def test_the_cache_key_covers_the_cpu_features(monkeypatch):
    compiler = "cc"
    key = ckernel.cache_key(compiler)
    monkeypatch.setattr(ckernel, "_cpu_features", lambda: "model name: AMD EPYC\nflags: avx2\n")
    avx2 = ckernel.cache_key(compiler)
    monkeypatch.setattr(ckernel, "_cpu_features", lambda: "model name: AMD EPYC\nflags: avx2 avx512f\n")
    assert len({key, avx2, ckernel.cache_key(compiler)}) == 3


@needs_kernel
def test_a_library_that_fails_its_probe_is_not_kept(tmp_path, monkeypatch):
    """A kernel that would crash the process (an illegal instruction) is caught in a child process."""
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    monkeypatch.setattr(ckernel, "_PROBE", "import os; os.abort()")
    with pytest.raises(OSError, match="probe"):
        ckernel.build(compiler, tmp_path / "cache")
    assert list((tmp_path / "cache").iterdir()) == []


# --- the package's own structure -----------------------------------------------------------------

def fast_module_imports() -> dict[str, set[str]]:
    """Which modules of onlstm_cli/fast each one imports, at its top or inside a function."""
    import ast
    from pathlib import Path
    folder = Path(fast.__file__).parent
    names = {p.stem for p in folder.glob("*.py")}
    graph = {}
    for path in folder.glob("*.py"):
        imported = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom):
                continue
            module = node.module or ""
            if node.level == 1 or module == "onlstm_cli.fast" or module.startswith("onlstm_cli.fast."):
                inside = module.removeprefix("onlstm_cli.fast").lstrip(".") if node.level == 0 else module
                imported |= {inside.split(".")[0]} if inside else {alias.name for alias in node.names}
        graph[path.stem] = imported & names
    return graph


def test_no_module_of_fast_imports_itself_through_another():
    graph = fast_module_imports()
    assert "shared_backward" in graph["recurrence"] and "shared_backward" in graph["triton_cell"]

    def reaches(start, goal, seen=()):
        return any(m == goal or (m not in seen and reaches(m, goal, (*seen, m))) for m in graph.get(start, ()))

    cycles = [name for name in graph if reaches(name, name)]
    assert cycles == [], f"import cycles through {cycles}"
