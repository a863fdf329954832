"""`onlstm info MODEL` and onlstm_cli.info: what a model file holds, as text or JSON; a bad model in one line."""
from __future__ import annotations

import json
import shutil

import pytest

from onlstm_cli.errors import OnlstmError
from onlstm_cli.info import info_text, model_info
from onlstm_cli.modelfile import load_model

from test_cli import REPO, assert_user_error, run

CARD = """# Tiny — `tiny.onlstm`

| | |
|---|---|
| vocabulary | 20 |

## `onlstm evaluate --gold dev.trees` (40 sentences, paper split)

| system | sentence F1 | corpus F1 | F1 ≤10 words | NP | VP | PP | ADJP | SBAR |
|---|---|---|---|---|---|---|---|---|
| onlstm (layer 2) | 41.25 | 38.50 | 44.00 | 1.0 | - | - | - | - |
| right-branching | 39.94 | 35.61 | 59.05 | 23.4 | 71.5 | 41.7 | 28.5 | 67.7 |
"""


def test_the_report_comes_from_the_file(tiny_model_path):
    loaded = load_model(tiny_model_path)
    report = model_info(tiny_model_path)
    sizes = report["sizes"]
    assert sizes["parameters"] == sum(p.numel() for p in loaded.model.parameters())
    assert (sizes["layers"], sizes["embedding"], sizes["hidden"], sizes["chunk"]) == (3, 20, 40, 5)
    assert sizes["vocabulary"] == len(loaded.vocab)
    assert report["valid_ppl"] == round(loaded.meta["valid_ppl"], 2)
    assert report["data"]["corpus"].endswith("train.txt") and report["recipe"]["optimizer"] == "adam"
    assert report["tokenizer"]["kind"] == loaded.tokenizer.kind
    assert "model_card" not in report and "span_parser" not in report
    json.dumps(report)  # plain data


def test_the_model_card_beside_the_file_gives_its_figures(tiny_model_path, tmp_path):
    path = tmp_path / "tiny.onlstm"
    shutil.copy(tiny_model_path, path)
    (tmp_path / "tiny.md").write_text(CARD, encoding="utf-8")
    card = model_info(path)["model_card"]
    assert card["title"] == "Tiny — `tiny.onlstm`"
    assert card["evaluations"] == [{"gold": "dev.trees", "note": "40 sentences, paper split",
                                    "system": "onlstm (layer 2)", "sentence_f1": 41.25, "corpus_f1": 38.5,
                                    "f1_le_10_words": 44.0}]
    text = info_text(model_info(path))
    assert "onlstm (layer 2): sentence 41.25, corpus 38.50, ≤10 words 44.00 on dev.trees" in text


def test_the_cli_prints_text_or_json(runner, model):
    text = run(runner, ["info", model])
    assert text.exit_code == 0, text.output
    lines = dict(line.split(None, 1) for line in text.stdout.splitlines() if not line.startswith(" "))
    assert lines["sizes"].startswith(f"{model_info(model)['sizes']['parameters'] / 1e6:.2f} M parameters: 3 layers")
    assert lines["valid"].startswith("ppl")
    as_json = run(runner, ["info", model, "--json"])
    assert as_json.exit_code == 0 and json.loads(as_json.stdout) == json.loads(json.dumps(model_info(model)))


@pytest.mark.skipif(not (REPO / "models" / "en-ptb.onlstm").is_file(), reason="no bundled models here")
def test_a_bundled_model_by_name_with_its_span_parser_and_card():
    report = model_info("en")
    assert report["path"].endswith("en-ptb.onlstm") and report["valid_ppl"] == 170.51
    assert report["span_parser"]["parameters"] > 0 and report["span_parser"]["teachers"]
    assert report["model_card"]["evaluations"][0]["sentence_f1"] > 0
    assert "span parser" in info_text(report)


@pytest.mark.parametrize("bad", ["missing", "directory", "not a model", "unknown name"])
def test_a_bad_model_is_one_line(bad, runner, tmp_path):
    paths = {"missing": tmp_path / "nope.onlstm", "directory": tmp_path, "not a model": tmp_path / "x.onlstm",
             "unknown name": "no-such-model"}
    (tmp_path / "x.onlstm").write_text("hello\n")
    target = paths[bad]
    with pytest.raises(OnlstmError):
        model_info(target)
    for args in (["info", target], ["info", target, "--json"]):
        assert_user_error(run(runner, args))


@pytest.mark.parametrize("meta, shown", [
    ({"right_branching": 1.95, "train": {"right_branching": "auto"}}, "1.95"),  # auto: the weight the run used
    ({"train": {"right_branching": 2.0}}, "2"),  # a file from before auto: the weight given
    ({"right_branching": 0.0, "train": {"right_branching": "auto"}}, None),  # no voter
    ({"train": "not a dict"}, None),
])
def test_info_says_what_weight_the_right_branching_voter_had(meta, shown):
    from onlstm_cli.config import SpanParserConfig
    from onlstm_cli.span.model import SpanParser
    from onlstm_cli.info import span_parser_info, span_parser_text
    parser = SpanParser(SpanParserConfig(vocab_size=5, emb_size=4, hidden_size=4, mlp_size=4))
    parser.meta = meta
    text = span_parser_text(span_parser_info(parser))
    assert ("a right-branching tree of weight" in text) == (shown is not None)
    if shown:
        assert f"a right-branching tree of weight {shown}," in text or text.endswith(f"weight {shown}")
