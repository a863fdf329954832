"""benchmarks/bench_gpu.py runs end to end: its CPU smoke mode here, its refusal without a GPU."""
from __future__ import annotations

import importlib.util

import pytest
import torch

from conftest import REPO


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_gpu", REPO / "benchmarks" / "bench_gpu.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA device")
def test_without_a_gpu_it_says_so_in_one_line_and_exits_2(bench, capsys):
    assert bench.main([]) == 2
    captured = capsys.readouterr()
    assert captured.err == "no CUDA device: this benchmark needs a GPU\n" and captured.out == ""


def test_the_cpu_smoke_mode_prints_every_part(bench, capsys):
    state = torch.random.get_rng_state()
    try:
        assert bench.main(["--device", "cpu", "--quick"]) == 0
    finally:
        torch.random.set_rng_state(state)
    out = capsys.readouterr().out
    for needle in ("onlstm backend: cpu", "train 20/40 batch 4: onlstm ", "ratio onlstm / nn.LSTM",
                   "ratio onlstm / original-code structure (re-implemented)", "distances (layer 2), 40 lines, 200/400, batch 32",
                   "distances (span parser), 40 lines, 200/400, batch 32",
                   "best (batch", "trees (span parser) on cpu, torch cell, vs cpu, 40 lines: sentences whose trees differ",
                   "trees (layer 2) on cpu, torch cell, vs cpu, 40 lines: sentences whose trees differ",
                   "only where two distances tie within 1e-4"):
        assert needle in out, needle


def test_the_original_code_structure_computes_the_onlstm_cell(bench):
    """The re-implemented original cell (overlap formulation, cumsoftmax) is the paper's cell: the same
    outputs as cell.reference_layer with the gate rows permuted into onlstm's layout."""
    from onlstm_cli.lm.cell import reference_layer
    torch.manual_seed(0)
    cell = bench.OriginalONLSTMCell(6, 20, 4).eval()
    x, h, c = torch.randn(3, 2, 6), torch.zeros(2, 20), torch.zeros(2, 5, 4)
    outputs = []
    for t in range(3):
        h, c, _ = cell(x[t], (h, c))
        outputs.append(h)
    # same gate layout [master i | master f | o | ĉ | i | f]; the original's bias on hh folds into x_gates
    x_gates = cell.ih(x) + cell.hh.bias
    weight = cell.hh.weight * (1 - cell.hh.dropout)
    want, *_ = reference_layer(x_gates, weight, torch.zeros(2, 20), torch.zeros(2, 20), 4, "paper")
    assert torch.allclose(torch.stack(outputs), want, atol=1e-6)


def test_tree_differences_are_told_apart_from_ties(bench):
    """A pair of words whose order flips between two runs counts as a tie when within 1e-4 on a side."""
    assert bench.order_flips([1.0, 2.0, 3.0], [1.0, 2.0, 3.0]) == (0, True)
    assert bench.order_flips([1.0, 1.00005, 0.0], [1.0, 0.99996, 0.0]) == (1, True)
    assert bench.order_flips([1.0, 2.0], [2.0, 1.0]) == (1, False)


def test_the_pcfg_gpu_benchmark_smoke_mode_checks_the_focused_inside_pass_too(capsys):
    """benchmarks/bench_pcfg_gpu.py --device cpu --quick: every line it prints on a GPU, the span mask's included
    (on CPU against CPU, so each difference is 0)."""
    spec = importlib.util.spec_from_file_location("bench_pcfg_gpu", REPO / "benchmarks" / "bench_pcfg_gpu.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["--device", "cpu", "--quick"]) == 0
    lines = capsys.readouterr().out.splitlines()
    agreements = [line for line in lines if "device vs CPU, float64" in line]
    assert len(agreements) == 4 and sum("focused (span mask)" in line for line in agreements) == 2
    assert all(float(line.split()[-1]) == 0.0 for line in agreements)
    assert any(line.startswith("pcfg training step 32x6 on cpu, words/s") for line in lines)
