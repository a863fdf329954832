"""small-corpora.md, "How lexical the weak teachers' trees are": each ON-LSTM's trees of its recipe's validation
text (layer 2, the symmetric split) against the trees that word frequency alone builds (each word's distance its
surprisal under the training text's unigram counts, the same split), and the trees' word-order lean, for teachers
whose direction came out right, wrong or none, and what two draws of random trees of the same lengths agree. No
gold tree is read.

    python docs/experiments/scripts/lexical_trees.py TRAIN VALID MODEL...
"""
import sys
from collections import Counter

from onlstm_cli.evaluation.metrics import branching_agreements, pairwise_agreement
from onlstm_cli.induction.teachers import OnlstmTeacher
from onlstm_cli.modelfile import load_model
from onlstm_cli.text.corpus import read_as_trained
from onlstm_cli.training.student.direction import chance_agreement, frequency_trees

train, valid, files = sys.argv[1], sys.argv[2], sys.argv[3:]
for f in files:
    loaded = load_model(f)
    counts = Counter(w for s in read_as_trained(train, loaded) for w in s)
    sentences = [s for s in read_as_trained(valid, loaded) if 3 <= len(s) <= 40][:1000]
    lexical = frequency_trees(sentences, counts)
    teacher = OnlstmTeacher(loaded, (2,), 0)
    teacher.use_split("symmetric")
    own = teacher.voter_trees(sentences)[0]
    lengths = [len(s) for s in sentences]
    right, left = branching_agreements(own, lengths)
    lex_right, lex_left = branching_agreements(lexical, lengths)
    print(f"{f}: with frequency's trees {100 * pairwise_agreement([own, lexical])[0, 1]:.1f}; lean "
          f"{100 * (right - left):+.1f} (frequency's trees {100 * (lex_right - lex_left):+.1f}); "
          f"{len(sentences)} sentences; two draws of random trees agree {100 * chance_agreement(lengths):.1f}")
