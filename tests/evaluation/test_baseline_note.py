"""Issue 53: `onlstm evaluate` says when the model's sentence F1 is below its best trivial baseline (on the terminal,
in --json and in the --html page), names an ensemble's rows for what they are, and says that it wrote --html."""
from __future__ import annotations

import json

from conftest import FIXTURES
from cli.test_cli import GOLD, PRED, run  # tests/cli, whether or not it is collected too
from onlstm_cli.evaluation.metrics import below_baseline
from onlstm_cli.evaluation.report_text import baseline_note


def test_the_best_baseline_above_the_first_system_is_named():
    systems = {"span parser (self-trained)": {"sentence_f1": 29.0}, "right-branching": {"sentence_f1": 30.5},
               "balanced": {"sentence_f1": 20.0},
               "right-branching, cut at punctuation": {"sentence_f1": 36.07}, "random": {"sentence_f1": 31.0}}
    below = below_baseline(systems)
    assert below == {"system": "span parser (self-trained)", "sentence_f1": 29.0,
                     "baseline": "right-branching, cut at punctuation", "baseline_sentence_f1": 36.07}
    assert baseline_note({"below_baseline": below}) == (
        "note: span parser (self-trained) scores 29.00 sentence F1, below right-branching, cut at punctuation "
        "(36.07), the best trivial baseline on these trees")


def test_a_model_at_or_above_every_baseline_gets_no_note():
    systems = {"onlstm (layer 2)": {"sentence_f1": 36.07}, "onlstm (layer 1)": {"sentence_f1": 10.0},
               "right-branching": {"sentence_f1": 36.07}, "left-branching": {"sentence_f1": 12.0}}
    assert below_baseline(systems) is None  # a layer below the baselines is not the file's parser
    assert below_baseline({"pred": {"sentence_f1": 1.0}}) is None  # no baseline scored
    assert baseline_note({"below_baseline": None}) is None


def test_evaluate_says_it_on_the_terminal_in_json_and_in_the_page(runner, tmp_path):
    """cli_pred.trees scores 58.33 against 80.56 for right-branching trees (test_evaluate_pred_f1_by_hand)."""
    page = tmp_path / "report.html"
    table = run(runner, ["evaluate", "--gold", GOLD, "--pred", PRED, "--html", page])
    assert table.exit_code == 0, table.output
    note = ("note: the trees of --pred score 58.33 sentence F1, below right-branching (80.56), the best trivial "
            "baseline on these trees")
    assert note in table.stdout.splitlines()
    assert table.stderr.splitlines() == [f"wrote the report to {page}"]  # item 3
    assert note in page.read_text(encoding="utf-8")
    report = json.loads(run(runner, ["evaluate", "--gold", GOLD, "--pred", PRED, "--json"]).stdout)
    assert report["below_baseline"] == {"system": "pred", "sentence_f1": 58.33, "baseline": "right-branching",
                                        "baseline_sentence_f1": 80.56}


def test_trees_above_every_baseline_get_no_note(runner, tmp_path):
    """The gold trees themselves, binarized where they are n-ary, score above every baseline."""
    gold_as_pred = tmp_path / "gold.trees"
    gold_as_pred.write_text("(S (S (X The) (X cat)) (S (X sat) (S (X on) (S (X the) (X mat)))))\n"
                            "(S (X He) (S (X ran) (X away)))\n"
                            "(S (S (X A) (X dog)) (S (X chased) (S (X the) (X bird))))\n", encoding="utf-8")
    table = run(runner, ["evaluate", "--gold", GOLD, "--pred", gold_as_pred])
    assert table.exit_code == 0, table.output
    assert "note:" not in table.stdout
    report = json.loads(run(runner, ["evaluate", "--gold", GOLD, "--pred", gold_as_pred, "--json"]).stdout)
    assert report["systems"]["pred"]["sentence_f1"] == 100.0 and report["below_baseline"] is None


def test_an_ensemble_is_named_for_what_it_is_and_no_one_models_perplexity_is_its(runner, tiny_model_path,
                                                                                  tiny_corpus, tmp_path):
    from conftest import right_to_left_copy
    from onlstm_cli.modelfile import load_model
    ensemble = tmp_path / "ens.onlstm"
    made = run(runner, ["ensemble", tiny_model_path, right_to_left_copy(tiny_model_path, tmp_path), "-o", ensemble])
    assert made.exit_code == 0, made.output
    page = tmp_path / "report.html"
    result = run(runner, ["evaluate", "--gold", FIXTURES / "cli_gold.trees", "--model", ensemble, "--json",
                          "--all-layers", "--html", page])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    models = [name for name in report["systems"] if "layer" in name]
    assert models == ["ensemble of 2 language models (layer 2)", "ensemble of 2 language models (layer 1)",
                      "ensemble of 2 language models (layer 3)"]
    first_ppl = load_model(tiny_model_path).meta["valid_ppl"]
    assert report["valid_ppl"] is None and report["ensemble"] == {"models": 2, "valid_ppl": [first_ppl, first_ppl]}
    html = page.read_text(encoding="utf-8")
    assert "ensemble of 2 language models (layer 2)" in html and "onlstm (layer" not in html
    assert "validation perplexity:" not in html
    assert f"validation perplexity of each of its 2 models: {first_ppl:.2f}, {first_ppl:.2f}" in html
    table = run(runner, ["evaluate", "--gold", FIXTURES / "cli_gold.trees", "--model", ensemble,
                         "--text", tiny_corpus["valid"]])
    assert f"perplexity on {tiny_corpus['valid']} (the first of its 2 models): " in table.stdout
    alone = json.loads(run(runner, ["evaluate", "--gold", FIXTURES / "cli_gold.trees", "--model", ensemble,
                                    "--json", "--no-ensemble"]).stdout)
    assert list(alone["systems"])[0] == "onlstm (layer 2)" and alone["valid_ppl"] == first_ppl
