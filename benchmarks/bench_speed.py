"""Speed benchmarks: ON-LSTM vs torch.nn.LSTM training throughput, distance and parse throughput, start-up.

    python benchmarks/bench_speed.py                 # everything (about 35 minutes on 2 cores)
    python benchmarks/bench_speed.py --only train    # one part: train, distances, parse, startup, memory
    python benchmarks/bench_speed.py --only parse   # default vs its ON-LSTM, each bundled model, --jobs 1 vs 2
    python benchmarks/bench_speed.py --only parse --model runs/ens.onlstm   # another model file beside the default
    python benchmarks/bench_speed.py --only parse --model runs/zh.onlstm --baseline zh --text ZH_LINES  # beside zh
    python benchmarks/bench_speed.py --only recipe  # train --seeds 2: the two language models side by side or not
    python benchmarks/bench_speed.py --only recipe --seeds 3  # rounds of one model a core, or all three at once
                                                    # (each run also trains its span parser: ~15 min for 2 repeats)
    python benchmarks/bench_speed.py --only pcfg    # the PCFG's inside pass beside TN-PCFG's and torch-struct's
                                                    # (--tn-pcfg DIR: their checkout, see README; 5-15 min)

Each figure is the median of --repeats runs, measured in one process side by side. Prints a table; the
numbers in benchmarks/README.md come from this script.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

from onlstm_cli import fast
from onlstm_cli.fast import PARSE_KERNEL_CACHE, decoder_loss, size_kernel_cache
from onlstm_cli.lm.model import ModelConfig, ONLSTMLanguageModel

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"


class LSTMLanguageModel(nn.Module):
    """The comparison: a tied-embedding 3-layer torch.nn.LSTM LM of the same sizes."""

    def __init__(self, vocab: int, emb: int, hidden: int, layers: int = 3):
        super().__init__()
        self.embedding = nn.Embedding(vocab, emb)
        sizes = [(emb if k == 0 else hidden, emb if k == layers - 1 else hidden) for k in range(layers)]
        self.layers = nn.ModuleList(nn.LSTM(i, h) for i, h in sizes)
        self.bias = nn.Parameter(torch.zeros(vocab))

    def hidden(self, x, state=None):
        """The top layer's output and each layer's last state (subclasses add dropouts at the two hooks)."""
        h = self.embed(x)
        new_state = []
        for k, layer in enumerate(self.layers):
            h, last = layer(h, state[k] if state else None)
            new_state.append(last)
            h = self.between_layers(h, k)
        return h, new_state

    def embed(self, x):
        return self.embedding(x)

    def between_layers(self, h, k: int):
        return h

    def loss(self, x, y, state=None):
        """Its training loss as a plain PyTorch LM computes it: F.cross_entropy of the logits."""
        h, _ = self.hidden(x, state)
        logits = F.linear(h, self.embedding.weight, self.bias)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))

    def fused_loss(self, x, y):
        """The same loss by onlstm's `decoder_loss`, the one ONLSTMLanguageModel trains with."""
        h, _ = self.hidden(x)
        return decoder_loss(h.reshape(-1, h.shape[-1]), self.embedding.weight, self.bias, y.reshape(-1))


def train_throughput(model, loss_of, vocab: int, batch: int, bptt: int, steps: int) -> float:
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    data = torch.randint(0, vocab, (bptt + 1, batch))
    model.train()

    def step():
        loss = loss_of(data[:-1], data[1:])
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        opt.step()

    step()  # warm-up
    start = time.perf_counter()
    for _ in range(steps):
        step()
    return steps * bptt * batch / (time.perf_counter() - start)


def bench_train(repeats: int, steps: int) -> list[tuple[str, float, str]]:
    rows = []
    vocab = 10000
    for emb, hidden, batch in ((200, 400, 64), (400, 1150, 20)):
        torch.manual_seed(0)
        onlstm = ONLSTMLanguageModel(ModelConfig(vocab_size=vocab, emb_size=emb, hidden_size=hidden))
        # the same LM with its five dropouts off, as plain as the nn.LSTM LM: what the regularisers cost
        bare = ONLSTMLanguageModel(ModelConfig(vocab_size=vocab, emb_size=emb, hidden_size=hidden, dropout=0.0,
                                               dropout_h=0.0, dropout_i=0.0, dropout_e=0.0, weight_drop=0.0))
        lstm = LSTMLanguageModel(vocab, emb, hidden)
        runs = {"onlstm": lambda x, y: onlstm(x, targets=y).loss,
                "onlstm without dropouts": lambda x, y: bare(x, targets=y).loss,
                "torch.nn.LSTM": lstm.loss,
                # the nn.LSTM LM given onlstm's decoder loss too: the recurrences compared like for like
                "torch.nn.LSTM with onlstm's decoder loss": lstm.fused_loss}
        models = {"onlstm": onlstm, "onlstm without dropouts": bare}
        rates = {name: [] for name in runs}
        for _ in range(repeats):
            for name, loss_of in runs.items():
                rates[name].append(train_throughput(models.get(name, lstm), loss_of, vocab, batch, 70, steps))
        median = {name: statistics.median(r) for name, r in rates.items()}
        label = f"train {emb}/{hidden} batch {batch}"
        rows.extend((f"{label}: {name}", rate, "tokens/s") for name, rate in median.items())
        lstm_rate, same_loss = median["torch.nn.LSTM"], median["torch.nn.LSTM with onlstm's decoder loss"]
        rows.append((f"{label}: ratio onlstm / nn.LSTM", median["onlstm"] / lstm_rate, "x"))
        rows.append((f"{label}: ratio onlstm without dropouts / nn.LSTM", median["onlstm without dropouts"]
                     / lstm_rate, "x"))
        rows.append((f"{label}: ratio onlstm / nn.LSTM, both with onlstm's decoder loss",
                     median["onlstm"] / same_loss, "x"))
        rows.extend(layer_rows(hidden, batch, repeats))
    rows.append(matmul_rate())
    return rows


def layer_rows(hidden: int, batch: int, repeats: int) -> list[tuple[str, float, str]]:
    """One recurrent layer alone (hidden → hidden, 70 steps, forward + backward), no LM around it, and the
    rate its matmuls alone would need: where nn.LSTM's figure is near a large matmul's, it is at the peak."""
    from onlstm_cli.lm.model import ONLSTMLayer
    torch.manual_seed(0)
    ours = ONLSTMLayer(hidden, hidden, 10, weight_drop=0.0).train()
    lstm = nn.LSTM(hidden, hidden)
    x = torch.randn(70, batch, hidden, requires_grad=True)
    grad = torch.randn(70, batch, hidden)
    state = (torch.zeros(batch, hidden), torch.zeros(batch, hidden))
    runs = {"onlstm": lambda: (ours(x, state)[0] * grad).sum().backward(),
            "torch.nn.LSTM": lambda: (lstm(x)[0] * grad).sum().backward()}
    gates = {"onlstm": 4 * hidden + 2 * hidden // 10, "torch.nn.LSTM": 4 * hidden}
    rows = []
    for name, run in runs.items():
        run()
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            run()
            times.append(time.perf_counter() - start)
        seconds = statistics.median(times)
        flops = 3 * 2 * 70 * batch * gates[name] * 2 * hidden  # forward, 2 backward products; ih and hh
        rows.append((f"layer {hidden}/{hidden} batch {batch} fwd+bwd: {name}", 70 * batch / seconds, "tokens/s"))
        rows.append((f"layer {hidden}/{hidden} batch {batch} fwd+bwd: {name}, matmul rate", flops / seconds / 1e9,
                     "GFLOP/s"))
    return rows


def matmul_rate() -> tuple[str, float, str]:
    """The faster of torch's default CPU matmul and oneDNN's on a large square product: the machine's peak."""
    from onlstm_cli.fast import onednn
    a = 2048
    big, other = torch.randn(a, a), torch.randn(a, a)
    products = [lambda: big @ other] + ([lambda: onednn.mm(big, other)] if onednn.works() else [])
    best = 0.0
    for product in products:
        product()
        start = time.perf_counter()
        for _ in range(5):
            product()
        best = max(best, 5 * 2 * a ** 3 / (time.perf_counter() - start) / 1e9)
    return ("for scale: a 2048 x 2048 float32 matmul (the faster of MKL and oneDNN)", best, "GFLOP/s")


def valid_sentences(n: int) -> list[list[str]]:
    lines = (DATA / "ptb-lm" / "ptb.valid.txt").read_text().splitlines()
    return [line.split() for line in lines if line.strip()][:n]


def bench_distances(repeats: int) -> list[tuple[str, float, str]]:
    from onlstm_cli.modelfile import LoadedModel
    from onlstm_cli.induction.distances import sentence_distances
    from onlstm_cli.text.tokenizers import Tokenizer
    from onlstm_cli.text.vocab import Vocabulary
    sentences = valid_sentences(1000)
    vocab = Vocabulary(sorted({w for s in sentences for w in s}))
    torch.manual_seed(0)
    model = ONLSTMLanguageModel(ModelConfig(vocab_size=len(vocab), emb_size=200, hidden_size=400)).eval()
    loaded = LoadedModel(model, vocab, Tokenizer("whitespace"), "en", 2)
    rows = []
    for batch in (1, 64, 128, 256):
        # a first pass compiles oneDNN's kernels for this batch size's matrix shapes, which a parse of a
        # corpus pays once: the figures are the steady state
        sentence_distances(loaded, sentences, batch_size=batch)
        rates = []
        for _ in range(repeats):
            start = time.perf_counter()
            sentence_distances(loaded, sentences, batch_size=batch)
            rates.append(len(sentences) / (time.perf_counter() - start))
        rows.append((f"distances, 1,000 PTB valid sentences, batch {batch}", statistics.median(rates),
                     "sentences/s"))
    # What the matmuls alone allow: per word, layer 1's recurrent product (its input projection is a table
    # lookup) and layer 2's input and recurrent products, each hidden x gates, at a large matmul's rate.
    gates = 4 * 400 + 2 * 400 // 10
    flops = sum(len(s) for s in sentences) * 3 * 2 * 400 * gates
    _, rate, _ = matmul_rate()
    rows.append(("distances: the matmuls' ceiling at a 2048 x 2048 matmul's rate", len(sentences) / (flops / (rate * 1e9)),
                 "sentences/s"))
    return rows


# The child records its own peak: ru_maxrss would also count the benchmark's own memory at fork time.
PEAK_WRAPPER = """
import atexit, runpy, sys
path = sys.argv[1]
atexit.register(lambda: open(path, 'w').write(
    next(l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM'))))
sys.argv = ['onlstm'] + sys.argv[2:]
runpy.run_module('onlstm_cli', run_name='__main__')
"""


def run_cli(args: list[str], stdin: bytes | None = None) -> tuple[float, int]:
    """Wall time and peak RSS (KiB, the child's own VmHWM) of `onlstm ARGS` in a fresh process, with the
    environment a user has (not this process's kernel-cache setting)."""
    env = {k: v for k, v in os.environ.items() if k not in ("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "LRU_CACHE_CAPACITY")}
    with tempfile.NamedTemporaryFile("r", suffix=".peak") as peak:
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-c", PEAK_WRAPPER, peak.name, *args], input=stdin, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        wall = time.perf_counter() - start
        if proc.returncode != 0:
            raise SystemExit(f"onlstm {' '.join(args)} failed: {proc.stderr.decode()[-500:]}")
        return wall, int(peak.read() or 0)


def cpu_name() -> str:
    """The CPU's model name and whether it has AVX-512 (speed figures depend on both)."""
    try:
        info = Path("/proc/cpuinfo").read_text()
    except OSError:
        return "unknown CPU"
    name = next((line.split(":", 1)[1].strip() for line in info.splitlines() if line.startswith("model name")), "?")
    return f"{name}, {'AVX-512' if ' avx512f' in info else 'AVX2' if ' avx2' in info else 'no AVX2'}"


def zh_text() -> Path:
    return DATA / "zh-lm" / "cmrc2018-wiki" / "cmrc2018.dev+trial.sents.txt"


def bench_parse(repeats: int, model: str | None = None, text: Path = DATA / "ptb-lm" / "ptb.test.txt",
                baseline: str = "en") -> list[tuple[str, float, str]]:
    """Parse speed of 10,000 lines, whole process, each configuration once per round, rounds alternating
    so that the machine's drift hits all alike: the default English file (its span parser), the ON-LSTM
    inside it alone, each bundled model on its language, --jobs 1 against --jobs 2; then peak memory of one
    5,000-word line. With --model: that file against the bundled `baseline` on the same lines."""
    def lines_of(path: Path) -> list[str]:
        return [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        def ten_thousand(lines: list[str], name: str) -> Path:
            path = Path(tmp) / name
            path.write_text("\n".join((lines * (10000 // len(lines) + 1))[:10000]) + "\n", encoding="utf-8")
            return path
        en = ten_thousand(lines_of(text), "en.txt")
        configs = {"default English (en, its span parser)": ["-m", "en", str(en)],
                   "the ON-LSTM inside en alone (--layer 2 --split paper)": ["-m", "en", "--layer", "2", "--split",
                                                                             "paper", str(en)],
                   "default English, --jobs 2": ["-m", "en", "--jobs", "2", str(en)]}
        if model is not None:
            if baseline != "en":
                configs[f"-m {baseline}, the same lines"] = ["-m", baseline, str(en)]
            configs[f"--model {model}"] = ["-m", model, str(en)]
        elif zh_text().exists():
            zh = ten_thousand(lines_of(zh_text()), "zh.txt")
            configs["default Chinese (zh, a PCFG), Chinese Wikipedia lines"] = ["-m", "zh", str(zh)]
            configs["zh-lm (its ON-LSTM alone) on the same lines"] = ["-m", "zh-lm", str(zh)]
        walls: dict[str, list[float]] = {label: [] for label in configs}
        for _ in range(repeats):
            for label, args in configs.items():
                walls[label].append(run_cli(["parse", "--jobs", "1", *args] if "--jobs" not in args
                                            else ["parse", *args])[0])
        for label in configs:
            rows.append((f"onlstm parse, 10,000 lines, {label}", 10000 / statistics.median(walls[label]), "lines/s"))
        default, alone = (statistics.median(walls[k]) for k in list(configs)[:2])
        rows.append(("wall time, default English / its ON-LSTM alone (same run)", default / alone, "×"))
        rows.append(("wall time, --jobs 2 / --jobs 1 (default English)",
                     statistics.median(walls["default English, --jobs 2"]) / default, "×"))
        if model is not None:
            base = default if baseline == "en" else statistics.median(walls[f"-m {baseline}, the same lines"])
            rows.append((f"wall time, --model / -m {baseline} (same run)",
                         statistics.median(walls[f"--model {model}"]) / base, "×"))
        words = " ".join(" ".join(lines_of(text)).split()[:5000])
        long_line = Path(tmp) / "long.txt"
        long_line.write_text(words + "\n", encoding="utf-8")
        for label, extra in (("default English", []), ("--layer 2", ["--layer", "2"])):
            _, rss = run_cli(["parse", "-m", "en", *extra, str(long_line)])
            rows.append((f"peak RSS, one 5,000-word line, {label}", rss / 1024, "MiB"))
    return rows


def bench_startup(repeats: int) -> list[tuple[str, float, str]]:
    helps = [run_cli(["--help"])[0] for _ in range(repeats)]
    parses = [run_cli(["parse"], b"The cat sat on the mat.\n")[0]
              for _ in range(repeats)]
    return [("onlstm --help", statistics.median(helps), "s"),
            ("echo 'The cat sat on the mat.' | onlstm parse", statistics.median(parses), "s")]


def bench_memory() -> list[tuple[str, float, str]]:
    with tempfile.TemporaryDirectory() as tmp:
        _, rss = run_cli(["train", str(DATA / "ptb-lm" / "ptb.train.txt"), "--valid", str(DATA / "ptb-lm" / "ptb.valid.txt"),
                          "--out", f"{tmp}/m.onlstm", "--time-budget", "120s", "--threads", "2"])
    return [("peak RSS, training 200/400 on PTB with validation (120 s)", rss / 1024, "MiB")]


def bench_recipe(repeats: int, threads: int, seeds: int) -> list[tuple[str, float, str]]:
    """`train --seeds K`'s language-model stage (1 epoch each on 4,000 PTB lines), fewer models at a time
    against all K at once: with K at most the threads, one at a time on all the threads against side by side
    with the threads shared; with more seeds than threads, rounds of one model a thread against all K at once
    (the cores shared by the OS). The stage's wall time from the recipe's record, medians over the repeats,
    the ways alternating."""
    import json
    lines = (DATA / "ptb-lm" / "ptb.train.txt").read_text().splitlines()
    fewer = 1 if seeds <= threads else threads
    seconds = {fewer: [], seeds: []}
    with tempfile.TemporaryDirectory() as tmp:
        corpus, valid = Path(tmp, "train.txt"), Path(tmp, "valid.txt")
        corpus.write_text("\n".join(lines[:4000]) + "\n")
        valid.write_text("\n".join((DATA / "ptb-lm" / "ptb.valid.txt").read_text().splitlines()[:300]) + "\n")
        for repeat in range(repeats):
            for slots in seconds:
                out = Path(tmp, f"r{repeat}-{slots}.onlstm")
                run_cli(["train", str(corpus), "--valid", str(valid), "-o", str(out), "--seeds", str(seeds),
                         "--epochs", "1", "--time-budget", "none", "--threads", str(threads),
                         "--side-by-side", str(slots)])
                record = json.loads(Path(str(out) + ".recipe.json").read_text())
                seconds[slots].append(record["stage_seconds"]["language_models"])
    few, all_at_once = statistics.median(seconds[fewer]), statistics.median(seconds[seeds])
    return [(f"train --seeds {seeds}, language models {fewer} at a time "
             f"({max(1, threads // fewer)} thread(s) each)", few, "s"),
            (f"train --seeds {seeds}, language models all {seeds} at once "
             f"({max(1, threads // seeds)} thread(s) each)", all_at_once, "s"),
            ("all at once: speed-up of the language-model stage", few / all_at_once, "x")]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", choices=["train", "distances", "parse", "startup", "memory", "recipe", "pcfg"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seeds", type=int, default=2, help="the seeds `--only recipe` trains")
    parser.add_argument("--model", help="a model file `--only parse` also parses with, beside the default")
    parser.add_argument("--baseline", default="en", help="the bundled model --model is compared with (en, zh)")
    parser.add_argument("--text", type=Path, default=DATA / "ptb-lm" / "ptb.test.txt",
                        help="the lines `--only parse` parses, repeated to 10,000 (default: PTB's test text)")
    parser.add_argument("--tn-pcfg", type=Path, help="a checkout of sustcsonglin/TN-PCFG at d4bcbaf, for `--only pcfg` "
                        "(default: /tmp/TN-PCFG-d4bcbaf)")
    args = parser.parse_args()
    flushed = contextlib.ExitStack()  # held to the end of main (a dropped context is closed)
    if args.only == "pcfg":  # as `train --family pcfg` runs, entered before the threads start; every side alike
        flushed.enter_context(fast.denormals_flushed())
    torch.set_num_threads(args.threads)
    # distances run in this process: give them the kernel cache `onlstm parse` runs with (the training
    # comparison runs one window length, so its few shapes fit either way)
    size_kernel_cache(PARSE_KERNEL_CACHE)
    parts = {"train": lambda: bench_train(args.repeats, args.steps), "distances": lambda: bench_distances(args.repeats),
             "parse": lambda: bench_parse(args.repeats, args.model, args.text, args.baseline), "startup": lambda: bench_startup(args.repeats),
             "memory": bench_memory, "recipe": lambda: bench_recipe(args.repeats, args.threads, args.seeds),
             # the PCFG's modules are imported only where its part runs
             "pcfg": lambda: __import__("bench_pcfg").bench_pcfg(args.repeats, args.tn_pcfg)}
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {os.cpu_count()} cores, {cpu_name()}")
    for name, run in parts.items():
        if args.only in (None, name):
            for label, value, unit in run():
                print(f"{label:80s} {value:10.2f} {unit}", flush=True)


if __name__ == "__main__":
    main()
