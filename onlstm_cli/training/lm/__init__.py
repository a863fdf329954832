"""The language model's run: `train_model` (train.py), its loop (trainer.py), steps, set-up, report, checks, files
(torchrun's processes: run/distributed.py)."""
