"""Per language model: how its trees of the validation text (sentences of >= 3 words, the symmetric split) lean,
against the lean of its trees of the same sentences with their words shuffled (a null that keeps each word and
each length, and loses the order): the agreement with right- (R) and left-branching (L) trees, in %.
`shuffled`: every word moves; `kept marks`: punctuation stays where it was and the other words move.
usage: lean_null.py VALID FILE..."""
import random, sys, unicodedata
import torch
from onlstm_cli.modelfile import load_model
from onlstm_cli.text.corpus import read_as_trained
from onlstm_cli.induction.teachers import model_trees
from onlstm_cli.evaluation.metrics import pairwise_agreement
from onlstm_cli.training.student.votes import left_branching_spans, right_branching_spans
torch.set_num_threads(1)


def is_mark(word):
    return all(unicodedata.category(c).startswith("P") for c in word)


def shuffled(s, rng, keep_marks):
    slots = [k for k, w in enumerate(s) if not (keep_marks and is_mark(w))]
    words = [s[k] for k in slots]
    rng.shuffle(words)
    out = list(s)
    for k, w in zip(slots, words):
        out[k] = w
    return out


def lean(m, sents):
    t = model_trees(m, sents)
    r = 100 * pairwise_agreement([t, [right_branching_spans(len(s)) for s in sents]])[0, 1]
    l = 100 * pairwise_agreement([t, [left_branching_spans(len(s)) for s in sents]])[0, 1]
    return f"R {r:.1f} L {l:.1f} (R-L {r - l:+.1f})"


valid, *files = sys.argv[1:]
for f in files:
    m = load_model(f)
    m.split = "symmetric"
    sents = [s for s in read_as_trained(valid, m) if len(s) >= 3]
    rng = random.Random(0)
    print(f"{f}: real {lean(m, sents)}; shuffled {lean(m, [shuffled(s, rng, False) for s in sents])}; "
          f"kept marks {lean(m, [shuffled(s, rng, True) for s in sents])}", flush=True)
