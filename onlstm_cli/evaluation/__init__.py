"""Scoring trees against gold ones with the paper's protocol (metrics.py) and the report as a table (report_text.py)."""
