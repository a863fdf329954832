"""Per teacher of a recipe run: its trees' agreement with right/left-branching trees on the recipe's validation
text (sentences of >= 3 words), its validation perplexity, and the validation text's unigram perplexity under
its vocabulary (add-one counts of its training text)."""
import math, sys, collections
import torch
from onlstm_cli.modelfile import load_model
from onlstm_cli.text.corpus import read_as_trained
from onlstm_cli.induction.teachers import model_trees
from onlstm_cli.evaluation.metrics import pairwise_agreement
from onlstm_cli.training.student.votes import left_branching_spans, right_branching_spans
torch.set_num_threads(1)
train, valid, *files = sys.argv[1:]
for f in files:
    m = load_model(f)
    sents = [s for s in read_as_trained(valid, m) if len(s) >= 3]
    out = []
    for split in ((m.split,) if getattr(m, "kind", "onlstm") != "onlstm" else ("paper", "symmetric")):
        if getattr(m, "kind", "onlstm") == "onlstm":
            m.split = split
        if getattr(m, "kind", "onlstm") == "pcfg":
            from onlstm_cli.induction.teachers import PcfgTeacher
            t = PcfgTeacher(m).voter_trees(sents)[0]
        else:
            t = model_trees(m, sents)
        r = 100 * pairwise_agreement([t, [right_branching_spans(len(s)) for s in sents]])[0, 1]
        l = 100 * pairwise_agreement([t, [left_branching_spans(len(s)) for s in sents]])[0, 1]
        out.append(f"{split}: R {r:.1f} L {l:.1f}")
    line = f"{f}: " + "; ".join(out)
    if getattr(m, "kind", "onlstm") == "onlstm":
        v = m.vocab
        counts = collections.Counter()
        for s in read_as_trained(train, m):
            counts.update(v.stoi.get(w, v.unk_id) for w in s + ["<eos>"])
        total = sum(counts.values()); V = len(v)
        nll, n = 0.0, 0
        for s in read_as_trained(valid, m):
            for w in s + ["<eos>"]:
                i = v.stoi.get(w, v.unk_id)
                nll -= math.log((counts[i] + 1) / (total + V)); n += 1
        line += f"; unigram ppl {math.exp(nll / n):.1f}; meta valid ppl {m.meta.get('valid_ppl') if hasattr(m,'meta') else '?'}"
    print(line, flush=True)
