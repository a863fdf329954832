"""`onlstm info MODEL` and onlstm_cli.info: what a model file holds, as text or JSON; a bad model in one line."""
from __future__ import annotations

import json
import shutil

import pytest

from onlstm_cli.errors import OnlstmError
from onlstm_cli.info import info_text, model_info
from onlstm_cli.modelfile import load_model

from conftest import FIXTURES
from cli.test_cli import REPO, assert_user_error, run  # tests/cli, whether or not it is collected too

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
    rows = dict(line.split(None, 1) for line in text.stdout.splitlines() if line.startswith("  "))
    assert rows["sizes"].startswith(f"{model_info(model)['sizes']['parameters'] / 1e6:.2f} M parameters: 3 layers")
    assert rows["valid"].startswith("ppl")
    assert rows["parsing"].endswith("cut at punctuation marks first")  # a file trained now (docs/parsing.md)
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
    from onlstm_cli.info import span_parser_info, span_parser_rows
    parser = SpanParser(SpanParserConfig(vocab_size=5, emb_size=4, hidden_size=4, mlp_size=4))
    parser.meta = {"teacher": ["a.onlstm"], **meta}
    text = "\n".join(value for _, value in span_parser_rows(span_parser_info(parser)))
    assert ("a right-branching tree of weight" in text) == (shown is not None)
    if shown:
        assert f"a right-branching tree of weight {shown}\n" in text



@pytest.mark.parametrize("lexical, says", [(19.7, True), (4.2, False), ("19.7", False), (None, False)])
def test_info_says_no_branching_tree_voted_where_the_teachers_were_too_lexical(lexical, says):
    """The student's meta records how far its teachers' trees were word frequency's (training/student/direction.py);
    at the threshold or above, no direction was read, and `info` says why no branching tree voted. A field
    that is not a number is shown as nothing."""
    from onlstm_cli.config import SpanParserConfig
    from onlstm_cli.span.model import SpanParser
    from onlstm_cli.info import span_parser_info, span_parser_rows
    parser = SpanParser(SpanParserConfig(vocab_size=5, emb_size=4, hidden_size=4, mlp_size=4))
    parser.meta = {"teacher": ["a.onlstm"], "right_branching": 0.0, "lexical_agreement": lexical,
                   "train": {"right_branching": "auto"}}
    teachers = dict(span_parser_rows(span_parser_info(parser)))["teachers"]
    assert teachers.endswith("and no branching tree: their trees agree with word frequency's trees 19.7 points "
                             "above random trees', too lexical to show the text's direction") == says

# --- crafted files: shown, never acted on; damaged, never an internal error (issue 41 items 5, 7, 12) ------

def crafted(tiny_model_path, tmp_path, change, name="crafted.onlstm"):
    """The tiny model's file as `change(archive)` leaves it (a file someone wrote by hand)."""
    import torch
    archive = torch.load(tiny_model_path, weights_only=True)
    change(archive)
    path = tmp_path / name
    torch.save(archive, path)
    return path


def with_span_parser(archive, meta):
    from onlstm_cli.config import SpanParserConfig
    from onlstm_cli.span.model import SpanParser
    parser = SpanParser(SpanParserConfig(vocab_size=len(archive["vocab"]), emb_size=4, hidden_size=4, mlp_size=4))
    archive["span_parser"] = {"config": parser.config.to_dict(), "state_dict": parser.state_dict(), "meta": meta}


ESCAPES = "\x1b]0;pwned\x07\x1b[2J\x9b2J\u202e"


def test_info_shows_strings_from_the_file_without_control_characters(runner, tiny_model_path, tmp_path):
    def plant(archive):
        archive["lang"] = f"en{ESCAPES}"
        archive["meta"]["created"] = f"today{ESCAPES}"
        archive["meta"]["data"]["corpus"] = f"c.txt{ESCAPES}"
    path = crafted(tiny_model_path, tmp_path, plant, name="m\x1b[2J.onlstm")
    (tmp_path / "m\x1b[2J.md").write_text(f"# Title{ESCAPES}\n", encoding="utf-8")
    text = run(runner, ["info", path])
    assert text.exit_code == 0, text.output
    assert not any(c in text.stdout for c in "\x1b\x07\x9b\u202e")
    assert "en\\x1b]0;pwned\\x07" in text.stdout and "today\\x1b" in text.stdout and "Title\\x1b" in text.stdout
    as_json = run(runner, ["info", path, "--json"])
    assert not any(c in as_json.stdout for c in "\x1b\x07\x9b\u202e")
    assert json.loads(as_json.stdout)["lang"] == f"en{ESCAPES}"  # the same data, escaped as JSON


def test_errors_and_reports_quote_files_without_control_characters(runner, model, tmp_path):
    missing = tmp_path / f"x{ESCAPES}.txt"
    error = run(runner, ["parse", "-m", model, missing])
    assert error.exit_code == 2 and "\x1b" not in error.output and "\\x1b" in error.output
    gold = tmp_path / f"g{ESCAPES}.trees"
    gold.write_bytes((FIXTURES / "cli_gold.trees").read_bytes())
    report = run(runner, ["evaluate", "-m", model, "--gold", gold])
    assert report.exit_code == 0, report.output
    assert not any(c in report.stdout for c in "\x1b\x07\x9b\u202e") and "g\\x1b]0;pwned" in report.stdout


def test_info_is_a_model_card_with_every_stage_timed(tiny_model_path, tmp_path):
    recipe = {"teachers": [{"seed": 1, "valid_ppl": 50.0, "epochs": 17.0, "seconds": 90.0}], "votes": "shares",
              "stage_seconds": {"language_models": 270.0}}

    def plant(archive):
        archive["meta"].update(epochs=17.0, seconds=20.0)
        archive["meta"]["train"].update(epochs=100, time_budget=270.0, checkpoint_every=300.0)
        with_span_parser(archive, {"teacher": ["t.onlstm"], "epochs": 3, "seconds": 150.0, "parse_seconds": 30.0,
                                   "recipe": recipe, "train": {"max_len": 100, "span_parser_teachers": False}})
    text = info_text(model_info(crafted(tiny_model_path, tmp_path, plant)))
    heads = [line for line in text.splitlines() if line and not line.startswith((" ", "†"))]  # † t.onlstm: not here
    assert heads[1:] == ["Model", "Language model training", "Span parser"]
    assert "17 epochs in 20 s" in text and "at most 100 epochs; a time budget of 4.5 min" in text
    assert "time_budget" not in text and "100.0 epochs" not in text and " 0 min" not in text
    assert "stage times: language models 4.5 min, the teachers' parse 30 s, the span parser 2.0 min" in text
    assert "sentences of at most 100 words" in text and "span parser teachers" not in text  # False: left out


SPAN_META = {"teacher": ["t.onlstm"], "epochs": 3, "recipe": {"teachers": [{"seed": 1}], "stage_seconds": {}}}
WRONG_TYPES = [
    ("meta", None, "a string"), ("meta", None, [1, 2]), ("meta", "history", "abc"), ("meta", "history", ["abc"]),
    ("meta", "history", [{"epoch": "x", "valid_ppl": 1.0}]), ("meta", "valid_ppl", "high"), ("meta", "epochs", [1]),
    ("meta", "seconds", "long"), ("meta", "data", "c.txt"), ("meta", "data", {"train_tokens": "many"}),
    ("meta", "train", ["sgd"]), ("meta", "train", {"eval_batch_size": "ten"}), ("meta", "created", 5),
    ("span", None, "not a dict"), ("span", "teacher", 5), ("span", "teacher_agreement", "high"),
    ("span", "right_branching", "auto"), ("span", "seconds", "long"), ("span", "recipe", "seeds"),
    ("span", "recipe", {"teachers": 3}), ("span", "recipe", {"teachers": ["x"]}),
    ("span", "recipe", {"stage_seconds": {"language_models": "long"}}), ("span", "recipe", {"stage_seconds": []}),
    ("span", "valid_loss", {}), ("span", "epochs", "three"), ("span", "history", "abc")]


@pytest.mark.parametrize("section, field, value", WRONG_TYPES)
def test_meta_of_the_wrong_type_is_a_damaged_file_never_an_internal_error(runner, tiny_model_path, tmp_path,
                                                                         section, field, value):
    def plant(archive):
        if section == "span":
            with_span_parser(archive, value if field is None else {**SPAN_META, field: value})
        elif field is None:
            archive["meta"] = value
        else:
            archive["meta"][field] = value
    path = crafted(tiny_model_path, tmp_path, plant)
    for args in (["info", path], ["info", path, "--json"], ["parse", "-m", path]):
        got = run(runner, args, input="the cat sat\n")
        assert got.exit_code == 2, got.output
        assert "is damaged" in assert_user_error(got) and "internal error" not in got.output


def test_a_model_card_with_odd_figures_is_read_without_an_internal_error(runner, tiny_model_path, tmp_path):
    path = tmp_path / "tiny.onlstm"
    shutil.copy(tiny_model_path, path)
    (tmp_path / "tiny.md").write_text(CARD.replace("41.25", "41.2.5").replace("38.50", "x"), encoding="utf-8")
    got = run(runner, ["info", path])
    assert got.exit_code == 0, got.output
    assert model_info(path)["model_card"]["evaluations"][0]["system"] == "right-branching"


# --- issue 50 items 13, 14: every field by type and range; file data never a format string; valid JSON --------

def test_option_names_from_the_file_are_shown_never_used_as_format_strings(runner, tiny_model_path, tmp_path):
    def plant(archive):
        archive["meta"]["train"].update({"x{y}z": 1, "{:>300000000}": 2, "{0}": "{1}"})
    path = crafted(tiny_model_path, tmp_path, plant)
    got = run(runner, ["info", path])
    assert got.exit_code == 0, got.output
    assert "x{y}z 1" in got.stdout and "{:>300000000} 2" in got.stdout and "{0} {1}" in got.stdout
    assert len(got.stdout) < 10_000


def planted(field, value):
    """A change that puts `value` at `field` ("meta.seconds", "tokenizer.lowercase", "vocab.3", ...)."""
    def plant(archive):
        *parents, last = field.split(".")
        target = archive
        for name in parents:
            target = target[name]
        target[int(last) if isinstance(target, list) else last] = value
    return plant


BIG = 10 ** 400
FIELDS_OF_THE_WRONG_TYPE = [  # (field, value): each an internal error once (TypeError, RuntimeError, ...)
    ("vocab.3", 5), ("tokenizer.lowercase", "torch"), ("tokenizer.kind", 7), ("tokenizer.nfkc", 1),
    ("tokenizer.zzz", True), ("tokenizer", "ptb"), ("meta.seconds", BIG), ("meta.epochs", -BIG),
    ("meta.train", {5: 1}), ("meta.train.lr", BIG), ("meta.student_check", {"student": BIG}),
    ("meta.train.device", {(1, 2): "x"}), ("meta.x", "torch"), ("config.reverse", "torch"),
    ("config.dropout", float("nan")), ("config.hidden_size", BIG), ("config.master_input", 3),
    ("lang", "x" * 100_000), ("lang", 3), ("split", "s" * 100_000), ("split", "torch"), ("combine", "torch"),
    ("parse_layer", 2.5), ("parse_layer", "torch"), ("kind", BIG), ("weights", [1.0, 1.0]),
]


@pytest.mark.parametrize("field, value", FIELDS_OF_THE_WRONG_TYPE)
def test_a_field_of_the_wrong_type_or_range_is_a_damaged_file_in_one_short_line(runner, tiny_model_path, tmp_path,
                                                                                field, value):
    import torch
    value = torch.ones(3) if value == "torch" else value
    path = crafted(tiny_model_path, tmp_path, planted(field, value))
    for args in (["info", path], ["info", path, "--json"], ["parse", "-m", path]):
        got = run(runner, args, input="the cat sat\n")
        line = assert_user_error(got)
        assert got.exit_code == 2 and "internal error" not in line and len(line) < 400, line
        assert "damaged" in line or "cannot read" in line, line


def test_info_json_is_valid_json_when_the_metadata_is_not_finite(runner, tiny_model_path, tmp_path):
    def plant(archive):
        archive["meta"].update(valid_ppl=float("nan"), seconds=float("inf"), student_check={"student": -float("inf")})
    path = crafted(tiny_model_path, tmp_path, plant)
    got = run(runner, ["info", path, "--json"])
    assert got.exit_code == 0, got.output

    def refuse(constant):
        raise AssertionError(f"{constant} is not JSON")
    report = json.loads(got.stdout, parse_constant=refuse)
    assert report["valid_ppl"] is None and report["training_seconds"] is None
    assert report["student_check"] == {"student": None}
    assert run(runner, ["info", path]).exit_code == 0


# --- issue 53: recorded paths not on this machine are marked; a language model's file is read as far as its sizes -----

def test_recorded_paths_not_found_here_are_marked_once(runner, tiny_model_path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # relative paths: from the current folder
    (tmp_path / "valid.txt").write_text("the cat\n", encoding="utf-8")
    (tmp_path / "teacher-a.onlstm").write_bytes(b"")

    def plant(archive):
        archive["meta"]["data"].update(corpus="gone/tr.recipe-train.txt", valid="valid.txt")
        with_span_parser(archive, {"teacher": ["teacher-a.onlstm", "runs/en5/en5-2h.lm-seed1112.onlstm"]})
    path = crafted(tiny_model_path, tmp_path, plant)
    report = model_info(path)
    assert report["paths_not_found"] == ["gone/tr.recipe-train.txt", "runs/en5/en5-2h.lm-seed1112.onlstm"]
    text = run(runner, ["info", path]).stdout
    assert "gone/tr.recipe-train.txt † (" in text and "validation valid.txt\n" in text
    assert "trees of teacher-a.onlstm, runs/en5/en5-2h.lm-seed1112.onlstm †" in text
    footnotes = [line for line in text.splitlines() if line.startswith("†")]
    assert footnotes == ["† recorded where the model was made; not on this machine (a relative path: not found "
                         "from the current folder)"]
    assert json.loads(run(runner, ["info", path, "--json"]).stdout)["paths_not_found"] == report["paths_not_found"]


def test_a_file_whose_recorded_paths_are_all_here_has_no_marks(tiny_model_path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name in ("c.txt", "v.txt"):
        (tmp_path / name).write_text("the cat\n", encoding="utf-8")
    path = crafted(tiny_model_path, tmp_path, lambda archive: archive["meta"]["data"].update(corpus="c.txt",
                                                                                            valid="v.txt"))
    report = model_info(path)
    assert report["paths_not_found"] == [] and "†" not in info_text(report)


def test_info_reads_a_language_models_sizes_without_its_weights(runner, tiny_model_path, tmp_path):
    """Issue 53: info built every network and decoded every weight of a file (seconds for an ensemble); it
    needs their sizes alone, and reads the same figures from networks built without storage."""
    from conftest import right_to_left_copy
    from onlstm_cli.info import read_model
    ensemble = tmp_path / "ens.onlstm"
    assert run(runner, ["ensemble", tiny_model_path, right_to_left_copy(tiny_model_path, tmp_path), "-o",
                        ensemble]).exit_code == 0
    header = read_model(ensemble)
    assert all(p.is_meta for part in (header, *header.members) for p in part.model.parameters())
    loaded = load_model(ensemble)
    report = model_info(ensemble)
    assert report["sizes"]["parameters"] == sum(p.numel() for p in loaded.model.parameters())
    assert report["sizes"]["vocabulary"] == len(loaded.vocab) and report["tokenizer"] == loaded.tokenizer.to_dict()
    assert report["ensemble"]["directions"] == ["left-to-right", "right-to-left"]
    ppl = round(loaded.meta["valid_ppl"], 2)
    assert report["ensemble"]["valid_ppl"] == [loaded.meta["valid_ppl"]] * 2
    text = info_text(report)
    assert f"validation perplexity of each: {ppl:.2f}, {ppl:.2f}" in text
    assert "Language model training (the first of the ensemble's models)" in text


def test_info_reads_a_self_trained_files_span_parser_as_far_as_its_sizes(tiny_model_path, tmp_path):
    path = crafted(tiny_model_path, tmp_path, lambda archive: with_span_parser(archive, {"teacher": ["t.onlstm"]}))
    parser = load_model(path).span_parser
    span = model_info(path)["span_parser"]
    assert span["parameters"] == sum(p.numel() for p in parser.parameters()) > 0
    assert span["config"] == parser.config.to_dict() and span["teachers"] == ["t.onlstm"]
