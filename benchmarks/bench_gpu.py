"""GPU benchmark: every figure of the CUDA path's targets, measured side by side in one run on one GPU.

    python benchmarks/bench_gpu.py                          # all parts, on the CUDA device
    python benchmarks/bench_gpu.py --original-repo PATH     # (b) with the real ON_LSTM.py from a checkout
    python benchmarks/bench_gpu.py --only train,distances   # some parts: train, original, distances, trees
    python benchmarks/bench_gpu.py --device cpu --quick     # smoke run: every part, tiny, on CPU

Parts (bptt 70, 3 layers, vocabulary 10k, the paper's dropouts, SGD lr 30 with clipping at 0.25, random
tokens; each figure the median of --repeats runs, the models of a comparison alternating):

  (a) training tokens/s of onlstm's LM (the training step of onlstm_cli/training/lm/train.py) against an nn.LSTM
      (cuDNN) LM of the same sizes, at 400/1150 batch 20 and 200/400 batch 64. Target: ≥ 0.7×.
  (b) the same against the original ON-LSTM code's structure (yikangshen/Ordered-Neurons: a Python loop
      over time steps of an ONLSTMCell, DropConnect masks per batch), re-implemented below, or the real
      code with --original-repo. Target: ≥ 10×.
  (c) distances (onlstm_cli.induction.distances.sentence_distances) in sentences/s with the bundled 200/400 model's
      parse layer, at batch sizes 64, 256 and 1024. Target: ≥ 20,000. Its span parser's, for scale.
  (d) trees on the device against trees on CPU for the 10,000-line input of bench_speed.py's parse
      benchmark: sentences whose trees differ, and how many of those differ only where two distances tie
      within 1e-4.

Without a CUDA device it exits with code 2. `--device cpu --quick` runs every part tiny on CPU (the C or
torch cell; the Triton cell's own checks on CPU are tests/fast/test_triton_cell.py): figures on CPU say nothing
of a GPU, that mode checks that the script runs.
"""
from __future__ import annotations

import argparse
import copy
import importlib
import random
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))  # bench_speed, beside this file, also when the tests load it by path

from bench_speed import LSTMLanguageModel  # noqa: E402
from onlstm_cli import fast  # noqa: E402
from onlstm_cli.lm.model import ModelConfig, ONLSTMLanguageModel  # noqa: E402

PTB_TEST_CANDIDATES = [ROOT.parent / "shared" / "data" / "ptb-lm" / "ptb.test.txt",
                       ROOT / "shared" / "data" / "ptb-lm" / "ptb.test.txt"]
BUNDLED_MODEL = ROOT / "models" / "en-ptb.onlstm"
TIE = 1e-4

# the paper's (and ModelConfig's) regularisers
DROPOUT, DROPOUT_H, DROPOUT_I, DROPOUT_E, WEIGHT_DROP = 0.45, 0.3, 0.5, 0.1, 0.45
LR, CLIP, WEIGHT_DECAY, CHUNK = 30.0, 0.25, 1.2e-6, 10


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


# --- (a) the nn.LSTM (cuDNN) language model ---------------------------------------------------------

class CudnnLanguageModel(LSTMLanguageModel):
    """bench_speed.py's 3-layer nn.LSTM LM (emb → hidden → hidden → emb, tied decoder) with the same
    embedding and locked dropouts as onlstm's, cross-entropy. No DropConnect: nn.LSTM's cuDNN kernel takes its
    weights as they are (AWD-LSTM's weight drop would copy them in every batch)."""

    def __init__(self, vocab: int, emb: int, hidden: int, layers: int = 3):
        super().__init__(vocab, emb, hidden, layers)
        nn.init.uniform_(self.embedding.weight, -0.1, 0.1)

    @staticmethod
    def locked(x, p):
        return x * x.new_empty(1, x.shape[1], x.shape[2]).bernoulli_(1 - p).div_(1 - p)

    def embed(self, x):
        words = x.new_empty(self.embedding.weight.shape[0], dtype=torch.float).bernoulli_(1 - DROPOUT_E)
        h = self.embedding(x) * (words / (1 - DROPOUT_E))[x].unsqueeze(-1)
        return self.locked(h, DROPOUT_I)

    def between_layers(self, h, k: int):
        return self.locked(h, DROPOUT_H if k < len(self.layers) - 1 else DROPOUT)

    def forward(self, x, y, state):
        """The loss and the layers' last states (truncated back-propagation carries them on)."""
        h, new_state = self.hidden(x, state)
        logits = F.linear(h, self.embedding.weight, self.bias)
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), y.reshape(-1)), new_state


# --- (b) the original ON-LSTM code's structure (yikangshen/Ordered-Neurons), re-implemented ------------
# Faithful to ON_LSTM.py, model.py, locked_dropout.py, embed_regularize.py and splitcross.py as published
# (only F.sigmoid/F.tanh, deprecated, written torch.sigmoid/torch.tanh, and Variable dropped): the same
# modules, the same operations in the same order, the same per-time-step Python loop.

class OriginalLinearDropConnect(nn.Linear):
    def __init__(self, in_features, out_features, bias=True, dropout=0.):
        super().__init__(in_features=in_features, out_features=out_features, bias=bias)
        self.dropout = dropout

    def sample_mask(self):
        if self.dropout == 0.:
            self._weight = self.weight
        else:
            mask = self.weight.new_empty(self.weight.size(), dtype=torch.uint8)
            mask.bernoulli_(self.dropout)
            self._weight = self.weight.masked_fill(mask.bool(), 0.)

    def forward(self, input, sample_mask=False):
        if self.training:
            if sample_mask:
                self.sample_mask()
            return F.linear(input, self._weight, self.bias)
        return F.linear(input, self.weight * (1 - self.dropout), self.bias)


def original_cumsoftmax(x, dim=-1):
    return torch.cumsum(F.softmax(x, dim=dim), dim=dim)


class OriginalONLSTMCell(nn.Module):
    def __init__(self, input_size, hidden_size, chunk_size, dropconnect=0.):
        super().__init__()
        self.input_size, self.hidden_size, self.chunk_size = input_size, hidden_size, chunk_size
        self.n_chunk = int(hidden_size / chunk_size)
        self.ih = nn.Sequential(nn.Linear(input_size, 4 * hidden_size + self.n_chunk * 2, bias=True))
        self.hh = OriginalLinearDropConnect(hidden_size, hidden_size * 4 + self.n_chunk * 2, bias=True,
                                            dropout=dropconnect)
        self.drop_weight_modules = [self.hh]

    def forward(self, input, hidden, transformed_input=None):
        hx, cx = hidden
        if transformed_input is None:
            transformed_input = self.ih(input)
        gates = transformed_input + self.hh(hx)
        cingate, cforgetgate = gates[:, :self.n_chunk * 2].chunk(2, 1)
        outgate, cell, ingate, forgetgate = gates[:, self.n_chunk * 2:].view(
            -1, self.n_chunk * 4, self.chunk_size).chunk(4, 1)
        cingate = 1. - original_cumsoftmax(cingate)
        cforgetgate = original_cumsoftmax(cforgetgate)
        distance_cforget = 1. - cforgetgate.sum(dim=-1) / self.n_chunk
        distance_cin = cingate.sum(dim=-1) / self.n_chunk
        cingate = cingate[:, :, None]
        cforgetgate = cforgetgate[:, :, None]
        ingate = torch.sigmoid(ingate)
        forgetgate = torch.sigmoid(forgetgate)
        cell = torch.tanh(cell)
        outgate = torch.sigmoid(outgate)
        overlap = cforgetgate * cingate
        forgetgate = forgetgate * overlap + (cforgetgate - overlap)
        ingate = ingate * overlap + (cingate - overlap)
        cy = forgetgate * cx + ingate * cell
        hy = outgate * torch.tanh(cy)
        return hy.view(-1, self.hidden_size), cy, (distance_cforget, distance_cin)

    def init_hidden(self, bsz):
        weight = next(self.parameters()).data
        return (weight.new(bsz, self.hidden_size).zero_(), weight.new(bsz, self.n_chunk, self.chunk_size).zero_())

    def sample_masks(self):
        for m in self.drop_weight_modules:
            m.sample_mask()


def original_locked_dropout(x, dropout, training):
    if not training or not dropout:
        return x
    m = x.data.new(1, x.size(1), x.size(2)).bernoulli_(1 - dropout)
    return (m / (1 - dropout)).expand_as(x) * x


class OriginalONLSTMStack(nn.Module):
    def __init__(self, layer_sizes, chunk_size, dropout=0., dropconnect=0.):
        super().__init__()
        self.cells = nn.ModuleList([OriginalONLSTMCell(layer_sizes[i], layer_sizes[i + 1], chunk_size,
                                                       dropconnect=dropconnect)
                                    for i in range(len(layer_sizes) - 1)])
        self.dropout = dropout
        self.sizes = layer_sizes

    def init_hidden(self, bsz):
        return [c.init_hidden(bsz) for c in self.cells]

    def forward(self, input, hidden):
        length, batch_size, _ = input.size()
        if self.training:
            for c in self.cells:
                c.sample_masks()
        prev_state = list(hidden)
        prev_layer = input
        raw_outputs, outputs, distances_forget, distances_in = [], [], [], []
        for l in range(len(self.cells)):
            curr_layer = [None] * length
            dist = [None] * length
            t_input = self.cells[l].ih(prev_layer)
            for t in range(length):
                hidden, cell, d = self.cells[l](None, prev_state[l], transformed_input=t_input[t])
                prev_state[l] = hidden, cell
                curr_layer[t] = hidden
                dist[t] = d
            prev_layer = torch.stack(curr_layer)
            dist_cforget, dist_cin = zip(*dist)
            raw_outputs.append(prev_layer)
            if l < len(self.cells) - 1:
                prev_layer = original_locked_dropout(prev_layer, self.dropout, self.training)
            outputs.append(prev_layer)
            distances_forget.append(torch.stack(dist_cforget))
            distances_in.append(torch.stack(dist_cin))
        return (prev_layer, prev_state, raw_outputs, outputs,
                (torch.stack(distances_forget), torch.stack(distances_in)))


def original_embedded_dropout(embed, words, dropout=0.1):
    if dropout:
        mask = embed.weight.data.new().resize_((embed.weight.size(0), 1)).bernoulli_(1 - dropout).expand_as(
            embed.weight) / (1 - dropout)
        masked_embed_weight = mask * embed.weight
    else:
        masked_embed_weight = embed.weight
    return F.embedding(words, masked_embed_weight, -1, embed.max_norm, embed.norm_type,
                       embed.scale_grad_by_freq, embed.sparse)


class OriginalRNNModel(nn.Module):
    """model.py's RNNModel (tied weights, as main.py sets)."""

    def __init__(self, ntoken, ninp, nhid, chunk_size, nlayers, dropout, dropouth, dropouti, dropoute, wdrop):
        super().__init__()
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = OriginalONLSTMStack([ninp] + [nhid] * (nlayers - 1) + [ninp], chunk_size=chunk_size,
                                       dropconnect=wdrop, dropout=dropouth)
        self.decoder = nn.Linear(ninp, ntoken)
        self.decoder.weight = self.encoder.weight
        self.encoder.weight.data.uniform_(-0.1, 0.1)
        self.decoder.bias.data.fill_(0)
        self.dropout, self.dropouti, self.dropouth, self.dropoute = dropout, dropouti, dropouth, dropoute

    def forward(self, input, hidden, return_h=False):
        emb = original_embedded_dropout(self.encoder, input, dropout=self.dropoute if self.training else 0)
        emb = original_locked_dropout(emb, self.dropouti, self.training)
        raw_output, hidden, raw_outputs, outputs, distances = self.rnn(emb, hidden)
        self.distance = distances
        output = original_locked_dropout(raw_output, self.dropout, self.training)
        result = output.view(output.size(0) * output.size(1), output.size(2))
        if return_h:
            return result, hidden, raw_outputs, outputs
        return result, hidden

    def init_hidden(self, bsz):
        return self.rnn.init_hidden(bsz)


def original_criterion(weight, bias, hiddens, targets):
    """splitcross.SplitCrossEntropyLoss with no splits (what main.py builds for a 10k vocabulary)."""
    logprobs = F.log_softmax(F.linear(hiddens, weight, bias=bias), dim=-1)
    return (-torch.gather(logprobs, dim=1, index=targets.view(-1, 1))).float().sum() / len(targets)


def original_model(repo: Path | None, vocab: int, emb: int, hidden: int):
    """(model, criterion, label): the real code from a checkout, or the re-implementation."""
    if repo is None:
        model = OriginalRNNModel(vocab, emb, hidden, CHUNK, 3, DROPOUT, DROPOUT_H, DROPOUT_I, DROPOUT_E, WEIGHT_DROP)
        return model, original_criterion, "original-code structure (re-implemented)"
    sys.path.insert(0, str(repo))
    try:
        on_lstm = importlib.import_module("ON_LSTM")
        rnn_model = importlib.import_module("model")
        splitcross = importlib.import_module("splitcross")
    finally:
        sys.path.remove(str(repo))
    # Its DropConnect mask is uint8, which today's torch's masked_fill refuses: read it as bool, the one
    # change the code needs to run (the same mask, the same kernels otherwise)
    on_lstm.LinearDropConnect.sample_mask = OriginalLinearDropConnect.sample_mask
    model = rnn_model.RNNModel("LSTM", vocab, emb, hidden, CHUNK, 3, DROPOUT, DROPOUT_H, DROPOUT_I, DROPOUT_E,
                               WEIGHT_DROP, True)
    criterion = splitcross.SplitCrossEntropyLoss(emb, splits=[], verbose=False)
    return model, criterion, "original code (--original-repo)"


# --- the training steps ------------------------------------------------------------------------------

def onlstm_trainer(model, batch):
    """onlstm_cli/training/lm/train.py's step: detached state, loss without logits, backward, clip, SGD."""
    params = list(model.parameters())
    optimizer = torch.optim.SGD(params, lr=LR, weight_decay=WEIGHT_DECAY)
    state = [None]

    def step(x, y):
        s = model.init_state(batch) if state[0] is None else [(h.detach(), c.detach()) for h, c in state[0]]
        output = model(x, s, targets=y)
        state[0] = output.state
        optimizer.zero_grad(set_to_none=True)
        output.loss.backward()
        torch.nn.utils.clip_grad_norm_(params, CLIP)
        optimizer.step()
        return output.loss.item()
    return step


def cudnn_trainer(model, batch):
    params = list(model.parameters())
    optimizer = torch.optim.SGD(params, lr=LR, weight_decay=WEIGHT_DECAY)
    state = [None]

    def step(x, y):
        s = None if state[0] is None else [(h.detach(), c.detach()) for h, c in state[0]]
        loss, state[0] = model(x, y, s)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, CLIP)
        optimizer.step()
        return loss.item()
    return step


def original_trainer(model, criterion, batch):
    """main.py's train() step (activation regularisation alpha 2, temporal beta 1, as its defaults)."""
    params = list(model.parameters()) + (list(criterion.parameters()) if isinstance(criterion, nn.Module) else [])
    optimizer = torch.optim.SGD(params, lr=LR, weight_decay=WEIGHT_DECAY)
    hidden = [model.init_hidden(batch)]

    def repackage(h):
        return h.detach() if isinstance(h, torch.Tensor) else tuple(repackage(v) for v in h)

    def step(x, y):
        hidden[0] = [repackage(h) for h in hidden[0]]
        optimizer.zero_grad()
        output, hidden[0], rnn_hs, dropped_rnn_hs = model(x, hidden[0], return_h=True)
        raw_loss = criterion(model.decoder.weight, model.decoder.bias, output, y.reshape(-1))
        loss = raw_loss + 2 * dropped_rnn_hs[-1].pow(2).mean() + 1 * (rnn_hs[-1][1:] - rnn_hs[-1][:-1]).pow(2).mean()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, CLIP)
        optimizer.step()
        return raw_loss.item()
    return step


def tokens_per_s(step, data, device, steps: int) -> float:
    bptt = data.shape[0] - 1
    sync(device)
    start = time.perf_counter()
    for _ in range(steps):
        step(data[:-1], data[1:])
    sync(device)
    return steps * bptt * data.shape[1] / (time.perf_counter() - start)


def bench_train(args, device, parts) -> list:
    rows = []
    for emb, hidden, batch in args.train_sizes:
        torch.manual_seed(0)
        data = torch.randint(0, args.vocab, (args.bptt + 1, batch), device=device)
        config = ModelConfig(vocab_size=args.vocab, emb_size=emb, hidden_size=hidden, chunk_size=CHUNK)
        onlstm = ONLSTMLanguageModel(config).to(device).train()
        runs = {"onlstm": (onlstm_trainer(onlstm, batch), None)}
        default_cell = fast.select(device, torch.float32).cell
        if default_cell != "torch":  # for scale: the same LM with the dozen-kernel torch cell
            runs["onlstm, torch cell"] = (onlstm_trainer(copy.deepcopy(onlstm), batch), "torch")
        if "train" in parts:
            runs["nn.LSTM (cuDNN)" if device.type == "cuda" else "nn.LSTM"] = (
                cudnn_trainer(CudnnLanguageModel(args.vocab, emb, hidden).to(device).train(), batch), None)
        if "original" in parts:
            model, criterion, label = original_model(args.original_repo, args.vocab, emb, hidden)
            criterion = criterion.to(device) if isinstance(criterion, nn.Module) else criterion
            runs[label] = (original_trainer(model.to(device).train(), criterion, batch), None)
        rates = {name: [] for name in runs}
        for name, (step, cell) in runs.items():  # warm-up: Triton's and cuDNN's first calls compile and tune
            with fast.forced(cell=cell) if cell else _nothing():
                for _ in range(args.warmup):
                    step(data[:-1], data[1:])
        for _ in range(args.repeats):
            for name, (step, cell) in runs.items():
                with fast.forced(cell=cell) if cell else _nothing():
                    rates[name].append(tokens_per_s(step, data, device, args.steps))
        label = f"train {emb}/{hidden} batch {batch}"
        median = {name: statistics.median(r) for name, r in rates.items()}
        for name, rate in median.items():
            rows.append((f"{label}: {name}", rate, "tokens/s", ""))
        for name, rate in median.items():
            if name.startswith("nn.LSTM"):
                rows.append((f"{label}: ratio onlstm / {name}", median["onlstm"] / rate, "x", "target >= 0.7"))
            elif name.startswith("original"):
                rows.append((f"{label}: ratio onlstm / {name}", median["onlstm"] / rate, "x", "target >= 10"))
        del runs, onlstm
        if device.type == "cuda":
            torch.cuda.empty_cache()
    return rows


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


# --- (c) distances and (d) trees ---------------------------------------------------------------------

def benchmark_lines(args, loaded) -> tuple[list[str], str]:
    """bench_speed.py's 10,000-line parse input (PTB test lines, repeated), or where the PTB text is not
    on this machine, random lines of the model's words with PTB-like lengths."""
    path = args.input or next((p for p in PTB_TEST_CANDIDATES if p.is_file()), None)
    if path is not None:
        lines = Path(path).read_text().splitlines()
        return (lines * (-(-args.lines // max(len(lines), 1))))[:args.lines], str(path)
    rng = random.Random(0)
    words = loaded.vocab.itos[2:]
    lines = [" ".join(rng.choice(words) for _ in range(max(1, min(80, int(rng.gauss(21, 10))))))
             for _ in range(args.lines)]
    return lines, "random lines of the model's words (no PTB text found; give --input)"


def load_bundled(device: torch.device):
    from onlstm_cli.modelfile import load_model
    loaded = load_model(BUNDLED_MODEL)
    loaded.members = []
    loaded.model.to(device)
    return loaded


def bench_distances(args, device, lines) -> list:
    """Sentences/s of the language model's distances (its parse layer: the target's figure) and, for scale,
    of the file's span parser (a BiLSTM and CKY, whose cost grows with a batch's longest sentence)."""
    from onlstm_cli.induction.distances import prepare, sentence_distances
    loaded = load_bundled(device)
    sentences = [prepare(loaded, line, pretokenized=True)[1] for line in lines if line.strip()]
    cfg = loaded.config
    rows = []
    for layer, parser in ((loaded.parse_layer, f"layer {loaded.parse_layer}"), (None, "span parser")):
        label = f"distances ({parser}), {len(sentences):,} lines, {cfg.emb_size}/{cfg.hidden_size}"
        timed = []
        for batch in args.parse_batches:
            sentence_distances(loaded, sentences, layer, batch_size=batch)  # warm-up: kernels compiled, memory pooled
            times = []
            for _ in range(args.repeats):
                sync(device)
                start = time.perf_counter()
                sentence_distances(loaded, sentences, layer, batch_size=batch)
                sync(device)
                times.append(time.perf_counter() - start)
            timed.append((f"{label}, batch {batch}", len(sentences) / statistics.median(times), "sentences/s", ""))
        best = max(timed, key=lambda r: r[1])
        target = "target >= 20,000" if layer is not None else ""
        rows += timed + [(f"{label}: best ({best[0].rsplit(', ', 1)[1]})", best[1], "sentences/s", target)]
    return rows


def order_flips(a, b):
    """Pairs i < j whose order differs between distances a and b (build_tree splits at the first largest
    distance, so a later word wins only when strictly larger), and whether each is a tie within TIE."""
    flips, all_ties = 0, True
    for j in range(len(a)):
        for i in range(j):
            if (a[j] > a[i]) != (b[j] > b[i]):
                flips += 1
                all_ties &= abs(a[j] - a[i]) <= TIE or abs(b[j] - b[i]) <= TIE
    return flips, all_ties


def bench_trees(args, device, lines) -> list:
    """`onlstm parse --pretokenized` of the lines on the device and on CPU: compare trees, those of the
    file's span parser (its default) and those of its language model's parse layer (the ON-LSTM's own
    distances, through the device's cell). On a CPU-only smoke run the device side is the torch cell, the
    CPU side the default backend."""
    from onlstm_cli.modelfile import load_model
    rows = []
    for layer in (None, load_model(BUNDLED_MODEL).parse_layer):
        rows += compare_trees(device, lines, layer)
    return rows


def compare_trees(device, lines, layer: int | None) -> list:
    from onlstm_cli.induction.distances import parse_lines
    from onlstm_cli.induction.models import ModelCache
    pinned = "torch" if device.type == "cpu" else None
    with fast.forced(cell=pinned) if pinned else _nothing():
        on_device = parse_lines(lines, model=str(BUNDLED_MODEL), cache=ModelCache(device.type, ensemble=False),
                                pretokenized=True, layer=layer)
    on_cpu = parse_lines(lines, model=str(BUNDLED_MODEL), cache=ModelCache("cpu", ensemble=False),
                         pretokenized=True, layer=layer)
    differ = ties_only = 0
    worst = 0.0
    for got, want in zip(on_device, on_cpu):
        a = [d for d in want.distances if d is not None]
        b = [d for d in got.distances if d is not None]
        worst = max([worst] + [abs(x - y) for x, y in zip(a, b)])
        if got.tree != want.tree:
            differ += 1
            ties_only += order_flips(a, b)[1]
    side = "cuda" if device.type == "cuda" else "cpu, torch cell,"
    parser = "span parser" if layer is None else f"layer {layer}"
    label = f"trees ({parser}) on {side} vs cpu, {len(lines):,} lines"
    return [(f"{label}: sentences whose trees differ", differ, "", "target: 0, or at ties only"),
            (f"{label}: ... only where two distances tie within 1e-4", ties_only, "", ""),
            (f"{label}: ... otherwise", differ - ties_only, "", "target: 0"),
            (f"{label}: largest difference of a distance", worst, "", "")]


# --- main --------------------------------------------------------------------------------------------

def machine(device: torch.device) -> str:
    try:
        import triton
        triton_version = triton.__version__
    except ImportError:
        triton_version = "not installed (pip install 'onlstm[gpu]': without it the torch cell runs)"
    lines = [f"torch {torch.__version__}, triton {triton_version}"]
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        lines.insert(0, f"GPU: {props.name}, {props.total_memory / 2 ** 30:.0f} GiB, CUDA {torch.version.cuda}, "
                        f"cuDNN {torch.backends.cudnn.version()}")
    else:
        lines.insert(0, f"CPU smoke run ({torch.get_num_threads()} threads): these figures say nothing of a GPU")
    lines.append(f"onlstm backend: {fast.select(device, torch.float32)}")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--quick", action="store_true", help="every part, tiny (a smoke run)")
    parser.add_argument("--only", default="train,original,distances,trees",
                        help="comma-separated parts: train, original, distances, trees")
    parser.add_argument("--original-repo", type=Path, help="a checkout of yikangshen/Ordered-Neurons")
    parser.add_argument("--input", type=Path, help="lines to parse (default: PTB test, as bench_speed.py)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--steps", type=int, default=10, help="timed training steps per repeat")
    args = parser.parse_args(argv)
    parts = {p.strip() for p in args.only.split(",") if p.strip()}
    unknown = parts - {"train", "original", "distances", "trees"}
    if unknown:
        parser.error(f"unknown parts: {', '.join(sorted(unknown))}")
    if args.device == "cuda" and not torch.cuda.is_available():
        print("no CUDA device: this benchmark needs a GPU", file=sys.stderr)
        return 2
    if args.device == "cpu" and not args.quick:
        parser.error("--device cpu is the smoke mode: add --quick (figures on CPU say nothing of a GPU)")
    if args.original_repo is not None and not (args.original_repo / "ON_LSTM.py").is_file():
        parser.error(f"no ON_LSTM.py in {args.original_repo}")
    device = torch.device(args.device)
    args.vocab, args.bptt, args.warmup = 10000, 70, 2
    args.train_sizes = [(400, 1150, 20), (200, 400, 64)]
    args.parse_batches, args.lines = [64, 256, 1024], 10000
    if args.quick:
        args.vocab, args.bptt, args.warmup, args.steps, args.repeats = 100, 8, 1, 1, 1
        args.train_sizes = [(20, 40, 4)]
        args.parse_batches, args.lines = [8, 32], 40

    print(machine(device))
    print(f"bptt {args.bptt}, 3 layers, vocabulary {args.vocab:,}, SGD lr {LR:g}, clip {CLIP}, dropouts "
          f"{DROPOUT}/{DROPOUT_H}/{DROPOUT_I}/{DROPOUT_E}, weight drop {WEIGHT_DROP}; medians of {args.repeats} "
          f"run(s) of {args.steps} step(s)" + (" (--quick)" if args.quick else ""), flush=True)

    def show(rows):
        for label, value, unit, note in rows:
            figure = f"{value:12,.0f}" if isinstance(value, int) or abs(value) >= 100 else f"{value:12.4g}"
            print(f"{label:100s} {figure} {unit:11s} {note}".rstrip(), flush=True)

    if parts & {"train", "original"}:
        show(bench_train(args, device, parts))
    if parts & {"distances", "trees"}:
        lines, source = benchmark_lines(args, load_bundled(torch.device("cpu")))
        print(f"parse input: {len(lines):,} lines from {source}; model {BUNDLED_MODEL.name}", flush=True)
        if "distances" in parts:
            show(bench_distances(args, device, lines))
        if "trees" in parts:
            show(bench_trees(args, device, lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
