"""The neural PCFG's inside pass, forward and backward (issue 52), beside the two public ones, on the same rules:

    ours           pcfg/model.py's `rank_terms` and fast.pcfg_inside (its outside pass written by hand)
    TN-PCFG        sustcsonglin/TN-PCFG at d4bcbaf, its last pure-PyTorch version, run from a checkout (--tn-pcfg):
                   `TDPCFG`, the inside its TN-PCFG model trains with, and `Fastest_TDPCFG`, its FastTNPCFG's
    torch-struct   0.5 (PyPI), `SentCFG` on the dense rule tensor (B, NT, NT+PT, NT+PT), built before the timing

at PcfgConfig's default sizes, on random rules and on a trained grammar's (the bundled `en-pcfg` on the first words
of PTB validation lines: its charts' terms lie far below their sums' largest, where a CPU's exp and products are
slowest, docs/experiments/pcfg.md entry 164). Each step is log Z of every sentence and the gradient of their sum
with respect to the rules, which are leaf tensors (each implementation's own, in its own format, holding the same
values). torch-struct's autograd keeps a (NT·(NT+PT) × NT) tensor of every span: it runs a batch a few sentences at
a time.
"""
from __future__ import annotations

import importlib.util
import statistics
import sys
import time
import warnings
from pathlib import Path

import torch

from onlstm_cli import fast
from onlstm_cli.config import PcfgConfig
from onlstm_cli.modelfile import load_model
from onlstm_cli.pcfg.model import rank_terms

DEFAULT_TN_PCFG = Path("/tmp/TN-PCFG-d4bcbaf")
SHAPES = ((32, 20), (32, 40))  # sentences × words
TRAINED_SHAPES = ((32, 20),)  # on the trained grammar: torch-struct takes minutes a step at 40 words
ROOT = Path(__file__).resolve().parents[1]
TRAINED = ROOT / "models" / "en-pcfg.onlstm"
TRAINED_TEXT = ROOT.parent / "shared" / "data" / "ptb-lm" / "ptb.valid.txt"
VOCAB = 10000  # the emissions are a vocabulary's log-probabilities, as in a model: about −9 a word
TOLERANCE = 1e-3  # nats, float32: the largest |log Z − ours| the comparison accepts
# torch-struct's sentences at a time: its memory grows as sentences × n² (about 15 GiB for 32 × 40 words at once, beside
# a training job on a 24 GiB machine); its work is large elementwise tensors either way, so the rate is the same
STRUCT_CHUNK = 8


def random_rules(batch: int, words: int, config: PcfgConfig, seed: int = 0) -> tuple[torch.Tensor, ...]:
    """log p(S → A) (NT,), log U (NT, r), log V and log W (NT+PT, r), log p(w_i | P) (B, n, PT), normalized
    as pcfg/model.py's `rules` and `emissions` give them."""
    gen = torch.Generator().manual_seed(seed)
    nt, pt, rank = config.nonterminals, config.preterminals, config.rank

    def normal(*shape):
        return torch.randn(*shape, generator=gen)

    ids = torch.randint(0, VOCAB, (batch, words), generator=gen)
    return (torch.log_softmax(normal(nt), 0), torch.log_softmax(normal(nt, rank), 1),
            torch.log_softmax(normal(nt + pt, rank), 0), torch.log_softmax(normal(nt + pt, rank), 0),
            torch.log_softmax(normal(pt, VOCAB), 1).T[ids])


def trained_rules(batch: int, words: int) -> tuple[torch.Tensor, ...]:
    """random_rules's five, of the bundled English PCFG, with the emissions of the first `words` words of the first
    `batch` lines of PTB's validation text that have as many."""
    loaded = load_model(TRAINED)
    with open(TRAINED_TEXT, encoding="utf-8") as text:
        lines = [loaded.vocab.encode(line.split()[:words]) for line in text if len(line.split()) >= words]
    if len(lines) < batch:
        raise SystemExit(f"{TRAINED_TEXT} has {len(lines)} lines of {words} words or more, not {batch}")
    with torch.no_grad():
        return (*loaded.pcfg.rules(), loaded.pcfg.emissions(torch.tensor(lines[:batch])))


def leaves(*tensors: torch.Tensor) -> list[torch.Tensor]:
    return [t.detach().clone().requires_grad_(True) for t in tensors]


def with_backward(log_z: torch.Tensor) -> torch.Tensor:
    log_z.sum().backward()
    return log_z.detach()


def ours(rules):
    params = leaves(*rules)
    lengths = torch.full((rules[-1].shape[0],), rules[-1].shape[1], dtype=torch.long)
    return params, lambda: with_backward(fast.pcfg_inside(*rank_terms(*params), lengths))


def tn_pcfg(rules, fastest: bool):
    """Their model's `forward` output (parser/model/TN_PCFG.py): the rules expanded to the batch, in a dict; the
    Fastest_TDPCFG's head, left and right as probabilities (FastTNPCFG's softmax), the rest as log-probabilities.
    Their root and preterminals are ours: root over nonterminals, a word's span is a preterminal, V and W over
    all symbols, nonterminals first. Fastest_TDPCFG reads no lengths (the whole width): every sentence here is
    as long as the batch."""
    from parser.pcfgs.tdpcfg import TDPCFG, Fastest_TDPCFG
    root, head, left, right, emit = rules
    params = leaves(root, *(r.exp() if fastest else r for r in (head, left, right)), emit)
    batch, words = emit.shape[:2]
    lens = torch.full((batch,), words, dtype=torch.long)
    pcfg = Fastest_TDPCFG() if fastest else TDPCFG()

    def step():
        log_root, h, lf, rt, unary = params
        given = {"unary": unary, "root": log_root.expand(batch, -1).contiguous(),
                 "head": h.unsqueeze(0).expand(batch, *h.shape), "left": lf.unsqueeze(0).expand(batch, *lf.shape),
                 "right": rt.unsqueeze(0).expand(batch, *rt.shape), "kl": 0}
        return with_backward(pcfg._inside(rules=given, lens=lens)["partition"])
    return params, step


def dense_rules(log_head: torch.Tensor, log_left: torch.Tensor, log_right: torch.Tensor) -> torch.Tensor:
    """log p(A → B C) = log Σ_r U[A, r] V[B, r] W[C, r]: (NT, NT+PT, NT+PT)."""
    return torch.logsumexp(log_head[:, None, None] + log_left[None, :, None] + log_right[None, None], -1)


def torch_struct(rules):
    """torch-struct's grammar is ours written out: rules[A, B, C] over symbols nonterminals first, a word's span a
    preterminal (its `terms`), roots over nonterminals."""
    from torch_struct import SentCFG
    root, head, left, right, emit = rules
    batch, words = emit.shape[:2]
    with torch.no_grad():
        dense = dense_rules(head, left, right).expand(batch, -1, -1, -1)
    params = leaves(emit, dense, root.expand(batch, -1))
    lengths = torch.full((batch,), words, dtype=torch.long)

    def step():
        parts = (slice(start, start + STRUCT_CHUNK) for start in range(0, batch, STRUCT_CHUNK))
        return torch.cat([with_backward(SentCFG(tuple(p[part] for p in params), lengths[part]).partition)
                          for part in parts])
    return params, step


def timed(params, step) -> tuple[float, torch.Tensor]:
    """Seconds of one log Z forward and backward, and the log Z."""
    for p in params:
        p.grad = None
    start = time.perf_counter()
    log_z = step()
    return time.perf_counter() - start, log_z


def import_theirs(tn_pcfg_dir: Path) -> None:
    if not (tn_pcfg_dir / "parser" / "pcfgs" / "tdpcfg.py").is_file():
        raise SystemExit(f"no TN-PCFG checkout at {tn_pcfg_dir} (--tn-pcfg): benchmarks/README.md says how to "
                         "make one")
    sys.path.insert(0, str(tn_pcfg_dir))  # their package is `parser`, from the checkout's root
    if importlib.util.find_spec("torch_struct") is None:
        raise SystemExit("torch-struct is not installed: pip install torch-struct==0.5 (benchmarks only)")


def check(label: str, log_z: dict[str, torch.Tensor]) -> None:
    """Print the largest |log Z − ours| of each; a wider gap means the sides do not compute the same thing."""
    for name, theirs in log_z.items():
        if name != "ours":
            gap = (theirs - log_z["ours"]).abs().max().item()
            print(f"{label + ', largest |log Z - ours|, ' + name:80s} {gap:10.1e} nats", flush=True)
            if not gap <= TOLERANCE:
                raise SystemExit(f"{name}'s log Z differs from ours by {gap:.2e} nats (tolerance {TOLERANCE})")


def compare(batch: int, words: int, repeats: int, trained: bool = False) -> list[tuple[str, float, str]]:
    """Each one's tokens/s (the median of the repeats, the four alternating) and ours over each, on random rules or
    on the trained grammar's."""
    rules = trained_rules(batch, words) if trained else random_rules(batch, words, PcfgConfig(vocab_size=VOCAB))
    runs = {"ours": ours(rules), "TN-PCFG TDPCFG": tn_pcfg(rules, fastest=False),
            "TN-PCFG Fastest_TDPCFG": tn_pcfg(rules, fastest=True), "torch-struct SentCFG": torch_struct(rules)}
    label = f"pcfg inside fwd+bwd {batch}x{words}" + (" trained en-pcfg" if trained else "")
    check(label, {name: timed(*run)[1] for name, run in runs.items()})  # also the warm-up
    seconds = {name: [] for name in runs}
    for _ in range(repeats):
        for name, run in runs.items():
            seconds[name].append(timed(*run)[0])
    rate = {name: batch * words / statistics.median(s) for name, s in seconds.items()}
    theirs = [name for name in rate if name != "ours"]
    fastest = max(theirs, key=rate.get)
    return ([(f"{label}: {name}", value, "tokens/s") for name, value in rate.items()]
            + [(f"{label}, ratio ours / {name}", rate["ours"] / rate[name], "x") for name in theirs]
            + [(f"{label}, ratio ours / the fastest of theirs ({fastest})", rate["ours"] / rate[fastest], "x")])


def bench_pcfg(repeats: int, tn_pcfg_dir: Path | None = None) -> list[tuple[str, float, str]]:
    import_theirs(tn_pcfg_dir or DEFAULT_TN_PCFG)
    with warnings.catch_warnings():
        # torch 2.13 still runs TN-PCFG's checkpoint without use_reentrant, and torch-struct's distributions
        # without arg_constraints: each only warns, as is
        warnings.filterwarnings("ignore", message=".*use_reentrant.*")
        warnings.filterwarnings("ignore", message=".*arg_constraints.*")
        return ([row for batch, words in SHAPES for row in compare(batch, words, repeats)]
                + [row for batch, words in TRAINED_SHAPES for row in compare(batch, words, repeats, trained=True)])
