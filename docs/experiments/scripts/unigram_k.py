import math, sys, collections
from onlstm_cli.modelfile import load_model
from onlstm_cli.text.corpus import read_as_trained
train, valid, f = sys.argv[1:]
m = load_model(f); v = m.vocab
counts = collections.Counter()
for s in read_as_trained(train, m):
    counts.update(v.stoi.get(w, v.unk_id) for w in s + ["<eos>"])
total = sum(counts.values()); V = len(v)
ids = [v.stoi.get(w, v.unk_id) for s in read_as_trained(valid, m) for w in s + ["<eos>"]]
for k in (0.01, 0.1, 0.5, 1.0):
    nll = -sum(math.log((counts[i] + k) / (total + k * V)) for i in ids) / len(ids)
    print(f"{f} k={k}: unigram {math.exp(nll):.1f} model {m.meta.get('valid_ppl'):.1f} V={V} train tokens {total}")
