"""The ON-LSTM language model: the paper's maths (cell.py), the model (model.py), its training loop (train.py,
with train_setup.py, train_report.py, run_checks.py, run_files.py) and torchrun/DDP (distributed.py)."""
