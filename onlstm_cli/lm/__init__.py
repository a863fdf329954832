"""The ON-LSTM language model: the paper's maths (cell.py), the model (model.py), its training loop (train.py,
with lm/setup.py, lm/report.py, lm/checks.py, lm/files.py; torchrun's processes: training/run/distributed.py)."""
