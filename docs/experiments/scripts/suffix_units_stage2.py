"""pcfg.md, "A small text's PCFG that reads a rare word by its ending", stage 2 (a probe; not on main): `onlstm train
ARGS…` (a student on --teacher files) with a word outside a file's vocabulary read by its ending ("~" + its last
SUFFIX_CHARS characters) where that vocabulary has the ending, so that a PCFG trained by suffix_units_probe.py reads
as it was trained; the language models', the whole-word PCFGs' and the student's vocabularies hold no "~" unit, so
they read as before (the student's vocabulary is built as on main). The student trains until its time budget, as
the recipe's does."""
import os
import sys
from dataclasses import replace

from onlstm_cli.text import vocab as vocab_module

CHARS = int(os.environ.get("SUFFIX_CHARS", 3))


def encode(self, tokens):
    return [self.stoi.get(t, self.stoi.get("~" + t[-CHARS:], 0)) for t in tokens]


vocab_module.Vocabulary.encode = encode



def until_budget(train_function):
    from onlstm_cli.training.recipe.runner import UNTIL_BUDGET

    def run(*args, train=None, **kwargs):
        return train_function(*args, train=replace(train, epochs=UNTIL_BUDGET, patience=UNTIL_BUDGET), **kwargs)
    return run


if __name__ == "__main__":
    from onlstm_cli.training.student import train as student_train
    student_train.self_train = until_budget(student_train.self_train)
    from onlstm_cli.cli.commands import app
    app(sys.argv[1:])
