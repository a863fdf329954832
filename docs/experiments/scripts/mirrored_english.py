"""A head-final stand-in the project can score (small-corpora.md, "English read backwards"): the first LINES lines of
ptb.train.txt with each line's words in reverse order, and the PTB dev trees mirrored (every constituent's children
in reverse order), so that right-branching English becomes a left-branching text with gold trees.
usage: mirrored_english.py LINES OUT_DIR  (writes OUT_DIR/c.txt and OUT_DIR/ptb-dev-mirrored.trees)"""
import sys
from pathlib import Path

from nltk import Tree

lines, out = int(sys.argv[1]), Path(sys.argv[2])
out.mkdir(parents=True, exist_ok=True)
text = Path("../shared/data/ptb-lm/ptb.train.txt").read_text(encoding="utf-8").splitlines()[:lines]
(out / "c.txt").write_text("".join(" ".join(reversed(line.split())) + "\n" for line in text), encoding="utf-8")


def mirror(tree):
    if isinstance(tree, str) or (len(tree) == 1 and isinstance(tree[0], str)):
        return tree
    return Tree(tree.label(), [mirror(child) for child in reversed(tree)])


gold = [line for line in Path("../shared/data/ptb-dev/ptb-dev.trees").read_text(encoding="utf-8").splitlines()
        if line.strip()]
(out / "ptb-dev-mirrored.trees").write_text(
    "".join(mirror(Tree.fromstring(line)).pformat(margin=10 ** 9) + "\n" for line in gold), encoding="utf-8")
