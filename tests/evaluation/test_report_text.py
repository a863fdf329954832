"""The evaluation report as a table on the terminal (onlstm_cli/evaluation/report_text.py)."""
from __future__ import annotations

import io

from rich.console import Console

from onlstm_cli import console as console_module
from onlstm_cli.evaluation.report_text import print_report

SCORES = {"sentence_f1": 29.82, "corpus_f1": 29.31, "sentence_f1_len_le_10": 29.44, "sentences_len_le_10": 53,
          "label_recall": {}, "f1_by_length": {"1-10": {"sentence_f1": 29.4, "sentences": 53}}}


def test_a_long_model_path_is_never_broken_inside(monkeypatch):
    """Issue 41 item 19: the table's title broke the model's path ("…/zh" / "-st.onlstm") on an 80-column
    terminal. Gold and model are now lines of their own above the table, each path whole on its line."""
    out = io.StringIO()
    monkeypatch.setattr(console_module, "stdout_console",
                        lambda **_: Console(file=out, width=80, force_terminal=True, color_system=None))
    gold = "/work/shared/data/ud-zh-gsdsimp/zh_gsdsimp-ud-dev.conllu"
    model = "/work/some-checkout-with-a-long-name/models/zh-st.onlstm"
    print_report({"gold": gold, "sentences": 500, "model": model, "split": "symmetric",
                  "systems": {"span parser (self-trained)": SCORES, "right-branching": SCORES},
                  "upper_bound": {"sentence_f1": 59.74, "corpus_f1": 60.48}})
    lines = out.getvalue().splitlines()
    assert f"{gold}: 500 sentences" in lines and f"model: {model}" in lines
    assert any("span parser (self-trained)" in line and "29.82" in line for line in lines)
