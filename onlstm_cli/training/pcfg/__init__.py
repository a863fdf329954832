"""Training the neural PCFG family: train.py (set-up, resume), trainer.py (the loop)."""
