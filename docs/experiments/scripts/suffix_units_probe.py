"""pcfg.md, "A small text's PCFG that reads a rare word by its ending" (a probe; not on main): `onlstm` with the
vocabulary patched in this process only, so that a PCFG's words seen fewer than SUFFIX_MIN times are read by their
last SUFFIX_CHARS characters ("~" + ending), as one unit each ending; a word outside the vocabulary is read by its
ending where the vocabulary has it. A language model's vocabulary has no "~" entry, so the teachers read as before.
usage: python suffix_units_probe.py ONLSTM_ARGS…   (env SUFFIX_CHARS, default 3; SUFFIX_MIN, default 2)"""
import os
import sys
from collections import Counter

from onlstm_cli.text import vocab as vocab_module

CHARS, MIN = int(os.environ.get("SUFFIX_CHARS", 3)), int(os.environ.get("SUFFIX_MIN", 2))
Vocabulary = vocab_module.Vocabulary
whole_build = Vocabulary.build.__func__


def ending(word: str) -> str:
    return "~" + word[-CHARS:]


def build(cls, counts: Counter, max_size=None, min_freq: int = 1):
    units = Counter()
    for word, count in counts.items():
        units[word if count >= MIN else ending(word)] += count
    return whole_build(cls, units, max_size, min_freq)


def encode(self, tokens):
    return [self.stoi.get(t, self.stoi.get(ending(t), 0)) for t in tokens]


Vocabulary.build = classmethod(build)
Vocabulary.encode = encode

from onlstm_cli.cli.commands import main  # noqa: E402

sys.argv = ["onlstm"] + sys.argv[1:]
main()
