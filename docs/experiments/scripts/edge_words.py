"""Where a text's frequent words stand (small-corpora.md, "Rule: which way a text is read"): over the sentences of at
least 3 words, the share s whose first word is one of the text's 50 most frequent words and the share e whose last
word is. Each text is read as `train` reads it (its language's tokenizer, punctuation dropped).
usage: edge_words.py TEXT…"""
import sys
from collections import Counter
from pathlib import Path

from onlstm_cli.text.corpus import iter_sentences
from onlstm_cli.text.languages import corpus_language

for path in map(Path, sys.argv[1:]):
    lang, tokenizer, _ = corpus_language(path)
    sentences = [s for s in iter_sentences(path, tokenizer) if len(s) >= 3]
    counts = Counter(word for s in sentences for word in s)
    frequent = {word for word, _ in counts.most_common(50)}
    s = sum(sentence[0] in frequent for sentence in sentences) / len(sentences)
    e = sum(sentence[-1] in frequent for sentence in sentences) / len(sentences)
    print(f"{path}: {lang}, {len(sentences):,} sentences: s {s:.3f}, e {e:.3f}, e - s {e - s:+.3f} → "
          f"{'right to left' if e - s >= 0.10 else 'left to right'}")
