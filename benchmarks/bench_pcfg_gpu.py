"""The neural PCFG on a GPU: the inside and outside passes (fast/inside.py) on CUDA against the same on the CPU, and
a training step of the default PCFG, side by side in one run.

    python benchmarks/bench_pcfg_gpu.py                 # on the CUDA device (exits 2 without one)
    python benchmarks/bench_pcfg_gpu.py --device cpu --quick   # smoke run: tiny, on CPU

Prints (1) the largest differences between CUDA and CPU (float64) of log Z and of every gradient, on random rules,
without and with a span mask (parse-focusing);
(2) the inside pass forward + backward in words/s at the default sizes (PcfgConfig), 32 sentences of 20 and of 40
words, on the device and on this machine's CPU (all its threads), and the ratio; (3) a whole training step
(NeuralPCFG.log_likelihood, backward, Adam) in words/s on the device.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import torch

from onlstm_cli import fast
from onlstm_cli.config import PcfgConfig
from onlstm_cli.pcfg.model import NeuralPCFG, focus_mask


def sync(device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def words_per_s(run, words: int, device, repeats: int) -> float:
    run()  # warm-up: kernels and allocator
    times = []
    for _ in range(repeats):
        sync(device)
        start = time.perf_counter()
        run()
        sync(device)
        times.append(time.perf_counter() - start)
    return words / statistics.median(times)


def inside_step(model: NeuralPCFG, ids, lengths):
    terms = [t.detach().requires_grad_() for t in model.terms(ids)]

    def run():
        fast.pcfg_inside(*terms, lengths).sum().backward()
    return run


def agreement(device, focused: bool = False) -> tuple[float, float]:
    """max |Δ log Z| and max |Δ gradient| between `device` and the CPU, in float64; `focused`: with a span mask
    (parse-focusing, `focus_mask`) that allows each sentence's right-branching spans and a few random ones."""
    torch.manual_seed(0)
    model = NeuralPCFG(PcfgConfig(vocab_size=50, nonterminals=6, preterminals=8, rank=12, symbol_size=16)).double()
    ids, lengths = torch.randint(2, 50, (4, 15)), torch.tensor([15, 11, 7, 2])
    mask = None
    if focused:
        spans = [{(i, n) for i in range(n - 1)} | {tuple(sorted(map(int, torch.randint(0, n + 1, (2,)))))
                                                   for _ in range(5)} for n in lengths.tolist()]
        mask = focus_mask([{(i, j) for i, j in s if j - i >= 2} for s in spans], lengths.tolist()).double()
    results = []
    for where in (torch.device("cpu"), device):
        model.to(where).zero_grad()
        log_z = model.log_likelihood(ids.to(where), lengths.to(where), None if mask is None else mask.to(where))
        log_z.sum().backward()
        results.append((log_z.detach().cpu(), [p.grad.detach().cpu() for p in model.parameters()]))
    (z_cpu, g_cpu), (z_dev, g_dev) = results
    return float((z_cpu - z_dev).abs().max()), max(float((a - b).abs().max()) for a, b in zip(g_cpu, g_dev))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        print("no CUDA device", file=sys.stderr)
        return 2
    device = torch.device(args.device)
    name = torch.cuda.get_device_name(0) if device.type == "cuda" else "cpu"
    print(f"torch {torch.__version__}, {name}, CPU threads {torch.get_num_threads()} of {os.cpu_count()} cores")
    dz, dg = agreement(device)
    print(f"{'pcfg device vs CPU, float64: max |Δ log Z|':72s} {dz:10.2e}")
    print(f"{'pcfg device vs CPU, float64: max |Δ gradient|':72s} {dg:10.2e}")
    dz, dg = agreement(device, focused=True)
    print(f"{'pcfg focused (span mask), device vs CPU, float64: max |Δ log Z|':72s} {dz:10.2e}")
    print(f"{'pcfg focused (span mask), device vs CPU, float64: max |Δ gradient|':72s} {dg:10.2e}")
    sizes = PcfgConfig(vocab_size=200 if args.quick else 10000, **({"rank": 8} if args.quick else {}))
    repeats = 1 if args.quick else args.repeats
    for n in ((6,) if args.quick else (20, 40)):
        rates = {}
        for where in (device, torch.device("cpu")):
            torch.manual_seed(1)
            model = NeuralPCFG(sizes).to(where)
            ids, lengths = torch.randint(2, sizes.vocab_size, (32, n), device=where), torch.full((32,), n, device=where)
            rates[where.type] = words_per_s(inside_step(model, ids, lengths), 32 * n, where, repeats)
            print(f"{f'pcfg inside fwd+bwd 32x{n} on {where.type}, words/s':72s} {rates[where.type]:10.0f}")
        print(f"{f'pcfg inside fwd+bwd 32x{n}, {device.type} / cpu':72s} {rates[device.type] / rates['cpu']:10.2f} x")
        model = NeuralPCFG(sizes).to(device)
        optimizer = torch.optim.Adam(model.parameters(), 2e-3)
        ids, lengths = torch.randint(2, sizes.vocab_size, (32, n), device=device), torch.full((32,), n, device=device)

        def step():
            optimizer.zero_grad()
            (-model.log_likelihood(ids, lengths).mean()).backward()
            optimizer.step()
        print(f"{f'pcfg training step 32x{n} on {device.type}, words/s':72s} "
              f"{words_per_s(step, 32 * n, device, repeats):10.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
