"""What every training loop shares (the language model's, self-training's, the next family's): its budget and
clock (clock.py), its files, the check of --out and its saves (files.py), what a resumed run must share with its
checkpoint's (identity.py), the divergence guard (guard.py) and torchrun's processes (distributed.py)."""
