"""The validation text's unigram perplexity (add-one counts of the training text) under a model's vocabulary, beside
the model's own validation perplexity."""
import math, sys, collections
from onlstm_cli.modelfile import load_model
from onlstm_cli.text.corpus import read_as_trained
train, valid, *files = sys.argv[1:]
for f in files:
    m = load_model(f); v = m.vocab
    counts = collections.Counter()
    for s in read_as_trained(train, m):
        counts.update(v.stoi.get(w, v.unk_id) for w in s + ["<eos>"])
    total = sum(counts.values()); V = len(v); nll = n = 0
    for s in read_as_trained(valid, m):
        for w in s + ["<eos>"]:
            nll -= math.log((counts[v.stoi.get(w, v.unk_id)] + 1) / (total + V)); n += 1
    uni = math.exp(nll / n); lm = m.meta.get("valid_ppl")
    print(f"{f}: unigram {uni:.1f}, model {lm:.1f}, ratio {lm/uni:.3f}, gain {math.log(uni/lm):.3f} nats")
