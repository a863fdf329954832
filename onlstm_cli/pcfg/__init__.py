"""The neural PCFG family's network: model.py (low-rank rules, the inside pass as defined, MBR trees)."""
