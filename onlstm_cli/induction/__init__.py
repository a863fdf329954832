"""From a model to trees: distances to trees (trees.py), parsing with a model file (parser.py), the
self-trained span parser (span_parser.py, student/train.py), the whole recipe (recipe/runner.py) and parsing on
several processes (parallel.py)."""
