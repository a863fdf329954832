"""Scoring trees against gold ones with the paper's protocol (metrics.py), a model file's trees of them
(model_scores.py), and the report as a table (report_text.py)."""
