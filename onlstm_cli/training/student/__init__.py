"""Self-training: a span parser learns its teachers' votes (train.py, votes.py), and is checked against their consensus (check.py)."""
