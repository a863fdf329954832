"""`train --seeds K`: the recipe (runner.py), its stages, record, budget, files, and models trained side by side."""
