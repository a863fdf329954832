"""Several PCFGs of one text parsing together (pcfg.md, "Three PCFGs' span marginals averaged"): each sentence's tree is
the MBR tree of their span marginals averaged, scored by `onlstm evaluate` in both protocols (cut at marks /
--punctuation ignore). The PCFGs must read the same vocabulary (those of one recipe do).
usage: pcfg_mean_marginals.py GOLD PCFG_FILE…"""
import contextlib
import io
import json
import sys

from onlstm_cli.cli.commands import app
from onlstm_cli.modelfile import load_model
from onlstm_cli.pcfg.model import NeuralPCFG

gold, files = sys.argv[1], sys.argv[2:]
models = [load_model(f) for f in files]
if any(m.vocab.itos != models[0].vocab.itos for m in models[1:]):
    sys.exit("the PCFGs read different vocabularies")
pcfgs = [m.pcfg for m in models]
one_pcfg = NeuralPCFG.span_marginals


def mean_marginals(self, ids, lengths):  # whichever file evaluate loads, the mean of all of them
    each = [one_pcfg(pcfg, ids, lengths) for pcfg in pcfgs]
    return sum(z for z, _ in each) / len(each), sum(spans for _, spans in each) / len(each)


NeuralPCFG.span_marginals = mean_marginals
figures = []
for protocol in ([], ["--punctuation", "ignore"]):
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        app(["evaluate", "--gold", gold, "-m", files[0], "--json", *protocol], standalone_mode=False)
    systems = json.loads(printed.getvalue())["systems"]
    figures.append(f"{next(iter(systems.values()))['sentence_f1']:.2f}")
print(f"{len(files)} PCFGs, their span marginals averaged: {' / '.join(figures)} (cut at marks / punctuation removed)")
