"""Whether a model can read a text (onlstm_cli/text/coverage.py): the warning agrees with the script that chose
the model."""
from __future__ import annotations

import pytest

from onlstm_cli.induction.models import ModelCache, resolve_model
from onlstm_cli.text.coverage import coverage_warning


@pytest.fixture(scope="module")
def zh():
    return ModelCache().get(resolve_model("zh"))


def test_a_mixed_line_that_its_script_sends_to_zh_is_not_said_to_be_outside_cjk(zh):
    # it was: sent to zh for its ideographs, then warned about as "not in CJK script"
    line = "我们 love this city very much and the weather"
    assert resolve_model(None, line) == resolve_model("zh")
    message = coverage_warning(zh, [zh.tokenizer.split(line)], "zh-pcfg.onlstm")
    assert message is None or "CJK script" not in message


def test_latin_text_to_a_cjk_model_is_still_said_to_be_outside_cjk(zh):
    lines = ["The cat sat on the mat.", "A dog ran after it."]
    message = coverage_warning(zh, [zh.tokenizer.split(line) for line in lines], "zh-pcfg.onlstm")
    assert "the text is not in CJK script" in message
