"""The Triton cell (onlstm_cli/fast/triton_cell.py), the GPU's fused step, held to `cell.reference_layer`.

Without a CUDA device the kernels run on CPU tensors in Triton's interpreter (TRITON_INTERPRET=1, which
tests/conftest.py sets before anything imports triton). With a CUDA device the same checks run compiled on
the GPU, and the CPU ones are skipped.
Sizes are tiny: the interpreter runs a kernel as numpy, row by row.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
import torch

HAS_CUDA = torch.cuda.is_available()
if not HAS_CUDA:
    # (tests/conftest.py has set this already: it must come before the session's first `import triton`)
    os.environ.setdefault("TRITON_INTERPRET", "1")

pytest.importorskip("triton", reason="triton is not installed (pip install 'onlstm[gpu]'): the Triton cell is optional")

from onlstm_cli.fast import triton_cell  # noqa: E402
from onlstm_cli import fast  # noqa: E402
from onlstm_cli.lm.cell import reference_layer  # noqa: E402
from onlstm_cli.fast import Backend  # noqa: E402
from onlstm_cli.fast.recurrence import LayerFunction, inference_layer  # noqa: E402

needs_cuda = pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA device: the compiled Triton kernels run on a GPU")
DEVICES = [
    pytest.param("cpu", marks=pytest.mark.skipif(
        not triton_cell.interpreted(),
        reason="the Triton cell runs on CPU tensors only in Triton's interpreter, which this module uses only "
               "where there is no CUDA device")),
    pytest.param("cuda", marks=needs_cuda),
]

# (T, B, H, chunk): n = H / chunk levels, not a power of two in most (the kernels pad and mask)
SHAPES = [(1, 1, 30, 5), (5, 3, 30, 5), (4, 3, 20, 4), (3, 2, 6, 2)]


def layer_inputs(T, B, H, chunk, device, seed=0):
    g = torch.Generator().manual_seed(seed)
    n = H // chunk
    G = 2 * n + 4 * H
    shapes = ((T, B, G), (G, H), (B, H), (B, H))
    scales = (1.0, 0.4, 1.0, 1.0)
    return [(torch.randn(*s, generator=g) * k).to(device) for s, k in zip(shapes, scales)]


def run_layer(inputs, chunk, rule, backend):
    """Outputs, last cell, both master gates and the gradients of x_gates, w_hh, h0, c0 of a loss that
    weighs every output differently (so no gradient is accidentally symmetric)."""
    x, w, h0, c0 = [t.clone().requires_grad_() for t in inputs]
    if backend is None:
        out, c_last, master_f, master_i = reference_layer(x, w, h0, c0, chunk, rule)
    else:
        out, c_last, master_f, master_i = LayerFunction.apply(x, w, h0, c0, chunk, rule, backend)
    weights = torch.linspace(-1, 1, out.numel(), device=out.device).view_as(out)
    loss = (out * weights).sum() + (c_last * c_last).sum()
    grads = torch.autograd.grad(loss, (x, w, h0, c0))
    return [out, c_last, master_f, master_i, *grads]


NAMES = ["outputs", "last cell", "master forget", "master input", "d x_gates", "d w_hh", "d h0", "d c0"]


def assert_close(got, want, atol=1e-5):
    for name, a, b in zip(NAMES, got, want):
        assert a.shape == b.shape, name
        err = (a.cpu() - b.cpu()).abs().max().item()
        assert err <= atol, f"{name}: off by {err:.2e}"


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("rule", ["paper", "symmetric"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "T{}-B{}-H{}-chunk{}".format(*s))
def test_triton_layer_matches_the_reference(device, rule, shape):
    T, B, H, chunk = shape
    inputs = layer_inputs(T, B, H, chunk, device)
    want = run_layer([t.cpu() for t in inputs], chunk, rule, None)
    got = run_layer(inputs, chunk, rule, Backend(device, "triton", False))
    assert_close(got, want)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("rule", ["paper", "symmetric"])
def test_triton_inference_keeps_nothing_and_matches(device, rule):
    """saved None: the inference path (two alternating cell rows, no activations kept)."""
    T, B, H, chunk = 5, 3, 30, 5
    inputs = layer_inputs(T, B, H, chunk, device, seed=1)
    want = reference_layer(*[t.cpu() for t in inputs], chunk, rule)
    with torch.no_grad():
        got = inference_layer(*inputs, chunk, rule, Backend(device, "triton", False))
    assert_close(got, want)


@pytest.mark.parametrize("device", DEVICES)
def test_triton_layer_from_a_column_major_weight_and_state_without_gradient(device):
    """The layout the model keeps recurrent weights in (`fast.recurrent_parameter`), and h0 needing no
    gradient (training detaches the state: the last backward product is skipped, d_h0 is None)."""
    T, B, H, chunk = 3, 2, 20, 4
    x, w, h0, c0 = layer_inputs(T, B, H, chunk, device, seed=2)
    w = fast.recurrent_parameter(w)
    results = []
    for backend in (None, Backend(device, "triton", False)):
        xs, ws = x.clone().requires_grad_(), w.detach().clone().requires_grad_()  # clone keeps the layout
        assert ws.stride() == (1, ws.shape[0])
        if backend is None:
            out, c_last, _, _ = reference_layer(xs.cpu(), ws.cpu(), h0.cpu(), c0.cpu(), chunk)
        else:
            out, c_last, _, _ = LayerFunction.apply(xs, ws, h0, c0, chunk, "paper", backend)
        results.append([out, c_last, *torch.autograd.grad(out.sum() + c_last.sum(), (xs, ws))])
    for a, b in zip(*results):
        assert (a.cpu() - b.cpu()).abs().max().item() <= 1e-5


def test_kernels_compile_for_a_gpu_without_one():
    """Triton compiles the kernels to sm_90 machine code without a GPU (in a fresh process, where the
    interpreter is off): catches what the interpreter lets through but the compiler would reject."""
    from triton.backends import backends
    if "nvidia" not in backends:
        pytest.skip("this triton has no NVIDIA backend to compile with")
    script = textwrap.dedent("""
        import triton
        from triton.backends.compiler import GPUTarget
        from triton.compiler import ASTSource
        from onlstm_cli.fast import triton_cell as tc
        assert not tc.interpreted()
        meta = tc._meta(6, 5, "symmetric")  # n = 6 levels: padded to 8
        options = {"num_warps": meta.pop("num_warps"), "enable_fp_fusion": meta.pop("enable_fp_fusion")}
        pointers = lambda names: {name: "*fp32" for name in names.split()}
        constants = lambda extra: dict(meta, **extra)
        forward = dict(pointers("gates"), gate_stride="i32", **pointers("c_prev c_out h_out masters probs acts tanh_c"))
        backward = dict(pointers("dh dc dc_prev acts tanh_c c_prev masters probs d_gates"), dg_stride="i32")
        for fn, signature, consts in ((tc._forward_step, forward, constants({"SAVE": True})),
                                      (tc._forward_step, forward, constants({"SAVE": False})),
                                      (tc._backward_step, backward, constants({}))):
            signature = dict(signature, **{name: "constexpr" for name in consts})
            kernel = triton.compile(ASTSource(fn, signature, consts), target=GPUTarget("cuda", 90, 32),
                                    options=options)
            assert kernel.asm["cubin"]
        print("compiled")
    """)
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and "compiled" in proc.stdout, proc.stderr[-3000:]


# --- the whole model through the Triton cell -----------------------------------------------------

def tiny_config(**overrides):
    from onlstm_cli.lm.model import ModelConfig
    options = dict(vocab_size=17, emb_size=12, hidden_size=20, n_layers=3, chunk_size=4, dropout=0.0,
                   dropout_h=0.0, dropout_i=0.0, dropout_e=0.0, weight_drop=0.0)
    options.update(overrides)
    return ModelConfig(**options)


def loss_and_grads(model, tokens, reference=False):
    model.zero_grad()
    out = model(tokens[:-1], targets=tokens[1:], reference=reference)
    out.loss.backward()
    return out.loss.detach().cpu(), {k: p.grad.detach().cpu() for k, p in model.named_parameters()}


@pytest.mark.skipif(not triton_cell.interpreted(), reason="runs the Triton cell on CPU: needs the interpreter")
def test_the_gpu_path_of_the_model_on_cpu(monkeypatch):
    """What `--device cuda` runs (Triton cell, plain products, torch dropout masks and loss), here on CPU
    through the interpreter: a tiny LM's loss and gradients against the step-by-step reference, and
    parsing's distances (the padded, unpacked path) against the C or torch cell's."""
    from onlstm_cli.lm.model import ONLSTMLanguageModel
    from onlstm_cli.modelfile import LoadedModel
    from onlstm_cli.induction.distances import sentence_distances
    from onlstm_cli.text.tokenizers import Tokenizer
    from onlstm_cli.text.vocab import Vocabulary
    torch.manual_seed(0)
    model = ONLSTMLanguageModel(tiny_config()).train()
    tokens = torch.randint(0, 17, (6, 2))
    want_loss, want_grads = loss_and_grads(model, tokens, reference=True)
    vocab = Vocabulary([f"w{k}" for k in range(12)])
    model_for_vocab = ONLSTMLanguageModel(tiny_config(vocab_size=len(vocab))).eval()
    loaded = LoadedModel(model_for_vocab, vocab, Tokenizer("whitespace"), "en", 2)
    sentences = [["w1", "w2", "w3"], ["w4"], [], ["w5", "w6", "w7", "w8", "w2"]]
    want_distances = sentence_distances(loaded, sentences, batch_size=2)

    triton_cpu = Backend("cpu", "triton", False)
    monkeypatch.setattr(fast, "select", lambda device, dtype: triton_cpu)
    loss, grads = loss_and_grads(model, tokens)
    assert abs(loss.item() - want_loss.item()) <= 1e-5
    for name, grad in grads.items():
        assert (grad - want_grads[name]).abs().max().item() <= 1e-5, name
    distances = sentence_distances(loaded, sentences, batch_size=2)
    assert [len(d) for d in distances] == [len(s) for s in sentences]
    for got, want in zip(distances, want_distances):
        assert got == pytest.approx(want, abs=1e-4)


@needs_cuda
def test_the_selector_picks_the_triton_cell_on_cuda():
    assert fast.triton_cell_works()
    assert fast.select("cuda", torch.float32).cell == "triton"
    assert fast.select("cuda", torch.float64).cell == "torch"


@needs_cuda
def test_a_tiny_lm_on_cuda_matches_cpu():
    """loss.backward of a tiny LM on the GPU (Triton cell) against the same LM on CPU, to 1e-4."""
    import copy

    from onlstm_cli.lm.model import ONLSTMLanguageModel
    torch.manual_seed(0)
    cpu_model = ONLSTMLanguageModel(tiny_config(emb_size=10, hidden_size=30, chunk_size=5)).train()
    gpu_model = copy.deepcopy(cpu_model).cuda()
    tokens = torch.randint(0, 17, (8, 3))
    want_loss, want_grads = loss_and_grads(cpu_model, tokens)
    loss, grads = loss_and_grads(gpu_model, tokens.cuda())
    assert abs(loss.item() - want_loss.item()) <= 1e-4
    for name, grad in grads.items():
        assert (grad - want_grads[name]).abs().max().item() <= 1e-4, name


@needs_cuda
def test_distances_on_cuda_match_cpu():
    """Parsing's distances (the padded path, through the Triton cell's inference steps) on the GPU against
    CPU (the C cell's packed path, or the torch cell) for a tiny model, to 1e-4."""
    import copy

    from onlstm_cli.lm.model import ONLSTMLanguageModel
    from onlstm_cli.modelfile import LoadedModel
    from onlstm_cli.induction.distances import sentence_distances
    from onlstm_cli.text.tokenizers import Tokenizer
    from onlstm_cli.text.vocab import Vocabulary
    torch.manual_seed(0)
    vocab = Vocabulary([f"w{k}" for k in range(12)])
    model = ONLSTMLanguageModel(tiny_config(vocab_size=len(vocab), emb_size=10, hidden_size=30, chunk_size=5))
    sentences = [["w1", "w2", "w3"], ["w4"], [], ["w5", "w6", "w7", "w8", "w2"], ["w9", "w10"]]
    want = sentence_distances(LoadedModel(model.eval(), vocab, Tokenizer("whitespace"), "en", 2), sentences,
                              batch_size=2)
    on_gpu = LoadedModel(copy.deepcopy(model).cuda().eval(), vocab, Tokenizer("whitespace"), "en", 2)
    got = sentence_distances(on_gpu, sentences, batch_size=2)
    for g, w in zip(got, want):
        assert g == pytest.approx(w, abs=1e-4)
