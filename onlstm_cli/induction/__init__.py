"""From a model to trees: distances to trees (trees.py), parsing with a model file (parser.py), the
self-trained span parser (span_parser.py, self_training.py), the whole recipe (recipe.py) and parsing on
several processes (parallel.py)."""
