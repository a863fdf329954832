"""Text in and out: tokenizers and vocabulary (vocab.py), corpora on disk (corpus.py), tree formats and gold
treebanks (formats.py), the lines `parse` reads (input_lines.py), whether a model can read a text (coverage.py)."""
