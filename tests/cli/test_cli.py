"""The `onlstm` command through typer's CliRunner, plus one real subprocess run per bundled model."""
from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import nltk
import pytest

from conftest import FIXTURES, REPO, write_corpus
from onlstm_cli.cli.commands import app

GOLD = FIXTURES / "cli_gold.trees"
PRED = FIXTURES / "cli_pred.trees"
PRED_MISMATCH = FIXTURES / "cli_pred_mismatch.trees"
GOLD_BROKEN = FIXTURES / "cli_gold_broken.trees"


def run(runner, args, input=None):
    result = runner.invoke(app, [str(a) for a in args], input=input)
    assert "Traceback" not in result.output
    return result


def assert_user_error(result, *fragments):
    """Non-zero exit, exactly one stderr line starting with 'error:', no traceback."""
    assert result.exit_code != 0, result.output
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error:"), lines[0]
    assert "Traceback" not in result.output
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def bracket_leaves(line: str) -> list[str]:
    return nltk.Tree.fromstring(line).leaves()


# --- parse ----------------------------------------------------------------------------------------

SENTENCES = ["The cat sat on the mat .", "", "Hello , world !", "a dog", "   ", "the man saw a bird near the house"]


def test_parse_bracket_one_line_per_input_line(runner, model):
    result = run(runner, ["parse", "--model", model, "--format", "bracket", "--pretokenized"],
                 input="\n".join(SENTENCES) + "\n")
    assert result.exit_code == 0, result.output
    out = result.stdout.split("\n")
    assert out[-1] == ""  # ends with a newline
    out = out[:-1]
    assert len(out) == len(SENTENCES)
    for line, sentence in zip(out, SENTENCES):
        if not sentence.strip():
            assert line == ""
        else:
            assert bracket_leaves(line) == sentence.split()


def flush_seen_by(monkeypatch, owner, name: str) -> list:
    """`owner.name` patched to note, at each call, whether this thread flushes subnormal floats (0.0 where it
    does, as a command run within cli/app.with_denormals_flushed does); the notes, in a list that fills as it runs."""
    seen: list = []
    original = getattr(owner, name)

    def called(*args, **kwargs):
        seen.append(sys.float_info.min / 2)
        return original(*args, **kwargs)

    def iterated(*args, **kwargs):
        seen.append(sys.float_info.min / 2)
        yield from original(*args, **kwargs)
    monkeypatch.setattr(owner, name, iterated if inspect.isgeneratorfunction(original) else called)
    return seen


def test_parse_runs_with_denormals_flushed_and_sets_them_back(runner, model, monkeypatch):
    """A PCFG's charts make many denormal floats, which a CPU computes many times slower: `parse` flushes them
    (cli/app.with_denormals_flushed) and sets Python's floats back after, even in the caller's process."""
    from onlstm_cli.induction.line_parser import LineParser
    seen = flush_seen_by(monkeypatch, LineParser, "parse_batches")
    result = run(runner, ["parse", "--model", model, "--pretokenized"], input="the cat sat\n")
    assert result.exit_code == 0, result.output
    assert seen == [0.0] and sys.float_info.min / 2 > 0


def test_parse_default_tokenization_and_format(runner, model):
    """Not a terminal → bracket output; PTB tokenization splits the final period and contractions."""
    result = run(runner, ["parse", "--model", model], input="The cat didn't sit.\n")
    assert result.exit_code == 0, result.output
    assert bracket_leaves(result.stdout.strip()) == ["The", "cat", "did", "n't", "sit", "."]


def test_parse_from_files(runner, model, tmp_path):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("the cat\n", encoding="utf-8")
    b.write_text("a dog sat\nhello\n", encoding="utf-8")
    result = run(runner, ["parse", "--model", model, "--format", "bracket", a, b])
    assert result.exit_code == 0, result.output
    assert [bracket_leaves(line) for line in result.stdout.splitlines()] == [["the", "cat"], ["a", "dog", "sat"],
                                                                            ["hello"]]


def test_parse_json(runner, model):
    result = run(runner, ["parse", "--model", model, "--format", "json"], input="Hello , world !\n\nthe cat sat\n")
    assert result.exit_code == 0, result.output
    lines = result.stdout.split("\n")[:-1]
    assert len(lines) == 3 and lines[1] == ""
    first = json.loads(lines[0])
    assert set(first) >= {"tree", "words", "distances"}
    assert first["words"] == ["Hello", ",", "world", "!"]
    assert first["distances"][1] is None and first["distances"][3] is None
    assert isinstance(first["distances"][0], float)
    third = json.loads(lines[2])
    assert third["words"] == ["the", "cat", "sat"] and len(third["distances"]) == 3
    assert isinstance(third["tree"], list)


@pytest.mark.parametrize("fmt", ["nltk", "tree"])
def test_parse_drawings(runner, model, fmt):
    result = run(runner, ["parse", "--model", model, "--format", fmt], input="the cat sat on the mat\n")
    assert result.exit_code == 0, result.output
    assert result.stdout.strip()
    for word in ["cat", "sat", "mat"]:
        assert word in result.stdout


@pytest.mark.parametrize("fmt", ["nltk", "tree"])
def test_parse_drawings_with_distances(runner, model, fmt):
    result = run(runner, ["parse", "--model", model, "--format", fmt, "--distances"], input="Hello , world !\n")
    assert result.exit_code == 0, result.output
    assert "distances:" in result.stdout and ",:-" in result.stdout


def test_parse_distances(runner, model):
    result = run(runner, ["parse", "--model", model, "--format", "bracket", "--distances"], input="Hello , world !\n")
    assert result.exit_code == 0, result.output
    tree, shown = result.stdout.rstrip("\n").split("\t")
    assert bracket_leaves(tree) == ["Hello", ",", "world", "!"]
    pairs = [p.rsplit(":", 1) for p in shown.split()]
    assert [t for t, _ in pairs] == ["Hello", ",", "world", "!"]
    assert pairs[1][1] == "-" and pairs[3][1] == "-"
    assert float(pairs[0][1]) > 0 and float(pairs[2][1]) > 0


def test_parse_ensemble_averages_and_no_ensemble_uses_the_first_model(runner, model, tmp_path):
    import torch
    from onlstm_cli.ensemble import with_members
    from onlstm_cli.modelfile import atomic_save, read_archive
    first = read_archive(model)
    second = dict(first, state_dict={k: v + 0.1 * torch.randn_like(v.float()).to(v.dtype)
                                     for k, v in first["state_dict"].items()})
    single, other, both = tmp_path / "a.onlstm", tmp_path / "b.onlstm", tmp_path / "ab.onlstm"
    atomic_save(first, single)
    atomic_save(second, other)
    atomic_save(with_members(first, [second]), both)

    def shown(*args):
        result = run(runner, ["parse", "--format", "bracket", "--distances", *args], input="the cat sat on the mat\n")
        assert result.exit_code == 0, result.output
        return [float(p.rsplit(":", 1)[1]) for p in result.stdout.rstrip("\n").split("\t")[1].split()]

    a, b, ab = shown("--model", single), shown("--model", other), shown("--model", both)
    assert ab == pytest.approx([(x + y) / 2 for x, y in zip(a, b)], abs=0.011)  # shown with 2 decimals
    assert shown("--model", both, "--no-ensemble") == a
    assert a != b


def test_parse_layer_changes_distances(runner, model):
    outs = []
    for layer in ("1", "3"):
        result = run(runner, ["parse", "--model", model, "--format", "json", "--layer", layer],
                     input="the man saw a bird near the house\n")
        assert result.exit_code == 0, result.output
        outs.append(json.loads(result.stdout)["distances"])
    assert outs[0] != outs[1]


@pytest.mark.parametrize("layer", ["0", "4", "99"])
def test_parse_layer_out_of_range(runner, model, layer):
    result = run(runner, ["parse", "--model", model, "--layer", layer], input="the cat sat\n")
    assert_user_error(result, "--layer")


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="needs a machine without CUDA")
@pytest.mark.parametrize("command", ["parse", "evaluate"])
def test_device_cuda_without_gpu_is_a_user_error(runner, model, command):
    args = [command, "--model", model, "--device", "cuda"]
    if command == "evaluate":
        args += ["--gold", GOLD]
    assert_user_error(run(runner, args, input="the cat sat\n"), "cuda")


def test_parse_unknown_device(runner, model):
    assert_user_error(run(runner, ["parse", "--model", model, "--device", "tpu"], input="the cat\n"), "tpu")


def test_parse_empty_stdin(runner, model):
    """Like any Unix filter: nothing in, nothing out, exit code 0 (see test_cli_filter.py)."""
    result = run(runner, ["parse", "--model", model], input="")
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", "")


def test_parse_invalid_utf8(runner, model):
    result = run(runner, ["parse", "--model", model], input=b"the cat\n\xff\xfe bad bytes\n")
    assert_user_error(result, "UTF-8", "line 2")


def test_parse_missing_input_file(runner, model, tmp_path):
    assert_user_error(run(runner, ["parse", "--model", model, tmp_path / "nope.txt"]), "nope.txt")


def test_parse_missing_model(runner, tmp_path):
    result = run(runner, ["parse", "--model", tmp_path / "missing.onlstm"], input="the cat\n")
    assert_user_error(result, "missing.onlstm")


def test_parse_unknown_model_name(runner, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert_user_error(run(runner, ["parse", "--model", "klingon"], input="the cat\n"), "klingon")


@pytest.mark.parametrize("content", [b"", b"not a model at all\n", os.urandom(2000)],
                         ids=["empty", "text", "random"])
def test_parse_corrupt_model(runner, tmp_path, content):
    path = tmp_path / "corrupt.onlstm"
    path.write_bytes(content)
    assert_user_error(run(runner, ["parse", "--model", path], input="the cat\n"), "corrupt.onlstm")


def test_parse_truncated_model(runner, tmp_path, tiny_model_path):
    data = tiny_model_path.read_bytes()
    path = tmp_path / "half.onlstm"
    path.write_bytes(data[: len(data) // 2])
    assert_user_error(run(runner, ["parse", "--model", path], input="the cat\n"), "half.onlstm")


def test_parse_crlf_input(runner, model):
    result = run(runner, ["parse", "--model", model, "--format", "json"], input=b"the cat\r\n\r\na dog\r\n")
    assert result.exit_code == 0, result.output
    lines = result.stdout.split("\n")[:-1]
    assert len(lines) == 3 and lines[1] == ""
    assert json.loads(lines[0])["words"] == ["the", "cat"]
    assert json.loads(lines[2])["words"] == ["a", "dog"]


def test_parse_parentheses_are_escaped_in_brackets(runner, model):
    from onlstm_cli.text.formats import from_bracket
    from onlstm_cli.trees import tree_leaves
    result = run(runner, ["parse", "--model", model, "--format", "bracket", "--pretokenized"], input="f ( x )\n")
    assert result.exit_code == 0, result.output
    line = result.stdout.strip()
    assert bracket_leaves(line) == ["f", "-LRB-", "x", "-RRB-"]
    assert tree_leaves(from_bracket(line)) == ["f", "(", "x", ")"]


def test_parse_input_with_byte_order_mark(runner, model):
    result = run(runner, ["parse", "--model", model, "--format", "json"], input="\ufeffthe cat\n".encode("utf-8"))
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["words"] == ["the", "cat"]


@pytest.mark.parametrize("size", ["0", "-1"])
def test_parse_bad_batch_size_is_a_user_error(runner, model, size):
    result = run(runner, ["parse", "--model", model, "--batch-size", size], input="the cat\n")
    line = assert_user_error(result, "--batch-size")
    assert result.exit_code == 2 and "internal error" not in line


# --- evaluate ---------------------------------------------------------------------------------------------

def test_evaluate_runs_with_denormals_flushed_and_sets_them_back(runner, model, monkeypatch):
    """As `parse` does (a PCFG's charts make many denormal floats): flushed while it scores, set back after."""
    import onlstm_cli.evaluation.model_scores as scores
    seen = flush_seen_by(monkeypatch, scores, "score_model")
    result = run(runner, ["evaluate", "--gold", GOLD, "--model", model, "--json"])
    assert result.exit_code == 0, result.output
    assert seen == [0.0] and sys.float_info.min / 2 > 0


def test_evaluate_model_json(runner, model):
    result = run(runner, ["evaluate", "--gold", GOLD, "--model", model, "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["sentences"] == 3
    systems = report["systems"]
    model_rows = [name for name in systems if name.startswith("onlstm")]
    assert len(model_rows) == 1 and "layer 2" in model_rows[0]
    for name in ["right-branching", "left-branching", "balanced", "random"]:
        assert name in systems
    for name, row in systems.items():
        for key in ["sentence_f1", "corpus_f1"]:
            assert 0 <= row[key] <= 100, (name, key)
        assert row["sentences"] == 3
    # Baselines computed by hand over the kept words (punctuation removed):
    # the cat sat on the mat: gold {(0,2),(2,6),(3,6),(4,6)}, right-branching finds 3 of 4 → 0.75
    # he ran away: gold {(1,3)}, right-branching is exactly that → 1.0
    # a dog chased the bird: gold {(0,2),(2,5),(3,5)}, right {(1,5),(2,5),(3,5)} → 2/3
    assert systems["right-branching"]["sentence_f1"] == pytest.approx(100 * (0.75 + 1 + 2 / 3) / 3, abs=0.01)
    # left-branching: 1/4, 0, 1/3
    assert systems["left-branching"]["sentence_f1"] == pytest.approx(100 * (0.25 + 0 + 1 / 3) / 3, abs=0.01)
    assert report["layer"] == 2
    assert report["model"] == model


def test_evaluate_text_perplexity_matches_validation(runner, model, tiny_corpus, tiny_loaded):
    result = run(runner, ["evaluate", "--gold", GOLD, "--model", model, "--json", "--text", tiny_corpus["valid"]])
    assert result.exit_code == 0, result.output
    ppl = json.loads(result.stdout)["perplexity"][str(tiny_corpus["valid"])]
    # the model file stores float16 weights, so allow a little drift from the float32 validation figure
    assert ppl == pytest.approx(tiny_loaded.meta["valid_ppl"], rel=0.02)


def test_model_split_rule_is_the_default(runner, tiny_loaded, tmp_path):
    from onlstm_cli.modelfile import load_model, save_model
    m = tiny_loaded
    path = tmp_path / "symmetric.onlstm"
    save_model(path, m.model, m.vocab, m.tokenizer, m.lang, m.parse_layer, m.meta, split="symmetric")
    assert load_model(path).split == "symmetric"
    text = "the man saw a bird near the house\nthe cat sat on the mat in the house\n"
    outputs = {flag: run(runner, ["parse", "--model", path, "-f", "bracket", *flag], input=text).stdout
               for flag in [(), ("--split", "symmetric"), ("--split", "paper")]}
    assert outputs[()] == outputs[("--split", "symmetric")]
    report = json.loads(run(runner, ["evaluate", "--gold", GOLD, "--model", path, "--json"]).stdout)
    assert report["split"] == "symmetric"


def test_evaluate_all_layers(runner, model):
    result = run(runner, ["evaluate", "--gold", GOLD, "--model", model, "--json", "--all-layers"])
    assert result.exit_code == 0, result.output
    systems = json.loads(result.stdout)["systems"]
    assert sorted(name for name in systems if name.startswith("onlstm")) == \
        ["onlstm (layer 1)", "onlstm (layer 2)", "onlstm (layer 3)"]


def test_evaluate_table(runner, model):
    result = run(runner, ["evaluate", "--gold", GOLD, "--model", model])
    assert result.exit_code == 0, result.output
    for name in ["onlstm (layer 2)", "right-branching", "left-branching", "balanced", "random"]:
        assert name in result.stdout


def test_evaluate_pred_f1_by_hand(runner):
    result = run(runner, ["evaluate", "--gold", GOLD, "--pred", PRED, "--json"])
    assert result.exit_code == 0, result.output
    row = json.loads(result.stdout)["systems"]["pred"]
    # Sentence 1 (given with its period): (((the cat) sat) (on (the mat))) → {(0,3),(0,2),(3,6),(4,6)},
    #   3 of 4 gold spans, 3 of 4 predicted → F1 0.75.
    # Sentence 2: ((he ran) away) → {(0,2)} vs gold {(1,3)} → 0.
    # Sentence 3: ((a dog) (chased (the bird))) → all 3 gold spans, nothing else → 1.0.
    assert row["sentence_f1"] == pytest.approx(100 * (0.75 + 0 + 1) / 3, abs=0.01)
    # Corpus: 6 of 8 predicted spans are gold, 6 of 8 gold spans found → 0.75.
    assert row["corpus_f1"] == pytest.approx(75.0, abs=0.01)


def test_evaluate_pred_mismatched_words(runner):
    result = run(runner, ["evaluate", "--gold", GOLD, "--pred", PRED_MISMATCH, "--json"])
    message = assert_user_error(result, "cli_pred_mismatch.trees:2")
    assert "walked" in message or "ran" in message


def test_evaluate_broken_gold(runner, model):
    result = run(runner, ["evaluate", "--gold", GOLD_BROKEN, "--model", model])
    assert_user_error(result, "cli_gold_broken.trees:2")


def test_evaluate_missing_gold(runner, model, tmp_path):
    assert_user_error(run(runner, ["evaluate", "--gold", tmp_path / "nope.trees", "--model", model]), "nope.trees")


def test_evaluate_corrupt_model(runner, tmp_path):
    path = tmp_path / "bad.onlstm"
    path.write_bytes(b"junk")
    assert_user_error(run(runner, ["evaluate", "--gold", GOLD, "--model", path]), "bad.onlstm")


# --- train -------------------------------------------------------------------------------------------------

TINY_ARGS = ["--emb-size", "20", "--hidden-size", "40", "--chunk-size", "5", "--epochs", "1", "--time-budget", "none",
             "--batch-size", "4", "--bptt", "10", "--threads", "1", "--device", "cpu"]


def test_train_via_cli(runner, tmp_path):
    corpus = write_corpus(tmp_path / "train.txt", 40, seed=2)
    valid = write_corpus(tmp_path / "valid.txt", 8, seed=3)
    out = tmp_path / "cli.onlstm"
    result = run(runner, ["train", corpus, "--valid", valid, "--out", out, *TINY_ARGS])
    assert result.exit_code == 0, result.output
    assert out.is_file() and Path(str(out) + ".ckpt").is_file()
    assert "done" in result.stderr and str(out) in result.stderr

    from onlstm_cli.modelfile import load_model
    loaded = load_model(out)
    assert (loaded.config.emb_size, loaded.config.hidden_size, loaded.config.chunk_size) == (20, 40, 5)
    assert loaded.lang == "en" and loaded.tokenizer.kind == "ptb"
    assert loaded.meta["epochs"] == pytest.approx(1.0)

    parsed = run(runner, ["parse", "--model", out, "--format", "bracket"], input="The dog sat.\n")
    assert parsed.exit_code == 0, parsed.output
    assert bracket_leaves(parsed.stdout.strip()) == ["The", "dog", "sat", "."]


def test_train_chinese_corpus_detects_language(runner, tmp_path):
    corpus = tmp_path / "zh.txt"
    corpus.write_text("\n".join(["爱真的需要勇气", "我爱北京天安门", "今天天气很好"] * 12) + "\n", encoding="utf-8")
    out = tmp_path / "zh.onlstm"
    result = run(runner, ["train", corpus, "--out", out, *TINY_ARGS])
    assert result.exit_code == 0, result.output
    from onlstm_cli.modelfile import load_model
    loaded = load_model(out)
    assert loaded.lang == "zh" and loaded.tokenizer.kind == "jieba"


def test_train_missing_corpus(runner, tmp_path):
    result = run(runner, ["train", tmp_path / "nope.txt", "--out", tmp_path / "m.onlstm", *TINY_ARGS])
    assert_user_error(result, "nope.txt")
    assert not (tmp_path / "m.onlstm").exists()


@pytest.mark.parametrize("budget", ["soon", "10x", "-5", "1h30"])
def test_train_bad_time_budget(runner, tmp_path, budget):
    corpus = write_corpus(tmp_path / "train.txt", 10)
    args = [a if a != "none" else budget for a in TINY_ARGS]
    result = run(runner, ["train", corpus, "--out", tmp_path / "m.onlstm", *args])
    assert_user_error(result, "--time-budget")


def test_train_non_utf8_corpus(runner, tmp_path):
    corpus = tmp_path / "latin1.txt"
    corpus.write_bytes("le café est très bon\n".encode("latin-1") * 20)
    result = run(runner, ["train", corpus, "--out", tmp_path / "m.onlstm", "--lang", "en", *TINY_ARGS])
    assert_user_error(result, "UTF-8")


def test_train_empty_corpus(runner, tmp_path):
    corpus = tmp_path / "empty.txt"
    corpus.write_text("\n\n", encoding="utf-8")
    assert_user_error(run(runner, ["train", corpus, "--out", tmp_path / "m.onlstm", *TINY_ARGS]))


@pytest.mark.parametrize("option,value", [("--chunk-size", "7"), ("--dropout", "1.5"), ("--epochs", "0")])
def test_train_bad_sizes(runner, tmp_path, option, value):
    corpus = write_corpus(tmp_path / "train.txt", 10)
    args = list(TINY_ARGS)
    if option in args:
        args[args.index(option) + 1] = value
    else:
        args += [option, value]
    assert_user_error(run(runner, ["train", corpus, "--out", tmp_path / "m.onlstm", *args]), option)


def test_train_resume_of_a_model_file_fails_cleanly(runner, tmp_path, tiny_model_path, tiny_corpus):
    result = run(runner, ["train", tiny_corpus["train"], "--out", tmp_path / "m.onlstm", "--resume", tiny_model_path,
                          *TINY_ARGS])
    assert_user_error(result, "checkpoint")


def test_train_runs_with_denormals_flushed_and_sets_them_back(runner, tmp_path, monkeypatch):
    """`train` flushes denormal floats from its start, before its language models start torch's threads: the
    recipe parses its PCFG teachers in the same process after them (a trained grammar's charts make many denormals,
    which a CPU computes many times slower). Python's floats are set back after, in the caller's process."""
    import onlstm_cli.cli.train as train_command
    seen = flush_seen_by(monkeypatch, train_command, "language_models")
    corpus = write_corpus(tmp_path / "train.txt", 40, seed=2)
    result = run(runner, ["train", corpus, "--out", tmp_path / "m.onlstm", *TINY_ARGS])
    assert result.exit_code == 0, result.output
    assert seen == [0.0] and sys.float_info.min / 2 > 0


def test_train_interrupted_via_cli(runner, tmp_path, monkeypatch):
    from onlstm_cli.training.lm.train import LineReporter

    def interrupt(self, *args):
        raise KeyboardInterrupt

    monkeypatch.setattr(LineReporter, "progress", interrupt)
    corpus = write_corpus(tmp_path / "train.txt", 40, seed=2)
    out = tmp_path / "int.onlstm"
    result = run(runner, ["train", corpus, "--out", out, *TINY_ARGS])
    assert result.exit_code == 130
    assert "interrupted" in result.stderr
    assert out.is_file() and Path(str(out) + ".ckpt").is_file()
    from onlstm_cli.modelfile import load_model
    assert load_model(out).config.hidden_size == 40


def test_train_epoch_log_goes_to_current_stderr(runner, tmp_path):
    corpus = write_corpus(tmp_path / "train.txt", 40, seed=2)
    result = run(runner, ["train", corpus, "--out", tmp_path / "m.onlstm", *TINY_ARGS])
    assert result.exit_code == 0
    assert "end of epoch 1" in result.stderr


def test_train_unknown_tokenizer_is_a_user_error(runner, tmp_path):
    corpus = write_corpus(tmp_path / "train.txt", 10)
    result = run(runner, ["train", corpus, "--out", tmp_path / "m.onlstm", "--tokenizer", "spacy", *TINY_ARGS])
    line = assert_user_error(result, "spacy")
    assert result.exit_code == 2 and "internal error" not in line


def test_rich_reporter_accepts_progress_calls():
    from onlstm_cli.training.lm.report import RichReporter
    reporter = RichReporter()
    with reporter:
        reporter.start_epoch(1, 100)
        reporter.progress(1, 10, 2.0, 100.0, 5.0)
        reporter.end_epoch(1, 7.4, 8.0, True)


def test_version(runner):
    result = run(runner, ["--version"])
    assert result.exit_code == 0 and result.stdout.startswith("onlstm ")


# --- real subprocesses with the bundled models ------------------------------------------------------------

def run_module(args, text):
    env = dict(os.environ, PYTHONIOENCODING="utf-8")
    return subprocess.run([sys.executable, "-m", "onlstm_cli", *args], input=text.encode("utf-8"),
                          capture_output=True, cwd=REPO, env=env, timeout=300)


def bundled_parse_leaves(model_file: str, text: str) -> list[str]:
    """Run `python -m onlstm_cli parse` for one line on a bundled model; the leaves of its one bracket tree."""
    if not (REPO / "models" / model_file).is_file():
        pytest.skip(f"models/{model_file} is not in this checkout")
    proc = run_module(["parse", "--format", "bracket"], text + "\n")
    stderr = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 0, stderr
    assert "Traceback" not in stderr
    lines = proc.stdout.decode("utf-8").splitlines()
    assert len(lines) == 1
    return bracket_leaves(lines[0])


def test_subprocess_parse_with_bundled_english_model():
    leaves = bundled_parse_leaves("en-ptb.onlstm", "The cat sat on the mat.")
    assert leaves == ["The", "cat", "sat", "on", "the", "mat", "."]


def test_subprocess_parse_with_bundled_chinese_model():
    leaves = bundled_parse_leaves("zh.onlstm", "爱真的需要勇气")
    assert len(leaves) >= 2 and "".join(leaves) == "爱真的需要勇气"


def test_subprocess_parse_of_mixed_scripts_keeps_each_word_of_another_script_whole():
    leaves = bundled_parse_leaves("zh.onlstm", "我爱кошка和 naïve Ελλάδα")
    assert leaves == ["我", "爱", "кошка", "和", "naïve", "Ελλάδα"]


def test_subprocess_error_is_one_line():
    proc = run_module(["parse", "--model", "/nonexistent/dir/x.onlstm"], "the cat\n")
    stderr = proc.stderr.decode("utf-8", "replace").strip().splitlines()
    assert proc.returncode != 0
    assert len(stderr) == 1 and stderr[0].startswith("error:")


# --- pictures -------------------------------------------------------------------------------------

def test_parse_svg_gives_one_picture_a_line_with_a_text_per_word(runner, model):
    import xml.etree.ElementTree as ET
    result = run(runner, ["parse", "--model", model, "-f", "svg"], input="\n".join(SENTENCES) + "\n")
    assert result.exit_code == 0, result.output
    lines = result.stdout.split("\n")[:-1]
    assert len(lines) == len(SENTENCES)
    for sentence, line in zip(SENTENCES, lines):
        if not sentence.strip():
            assert line == ""
            continue
        words = [e.text for e in ET.fromstring(line).iter("{http://www.w3.org/2000/svg}text")
                 if "word" in (e.get("class") or "")]
        assert words == sentence.split()


def test_parse_svg_out_dir_and_html_page(runner, model, tmp_path):
    result = run(runner, ["parse", "--model", model, "-f", "svg", "--out-dir", tmp_path / "pics"],
                 input="\n".join(SENTENCES) + "\n")
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in (tmp_path / "pics").iterdir()) == [
        f"line-{k + 1:06d}.svg" for k, s in enumerate(SENTENCES) if s.strip()]
    page = run(runner, ["parse", "--model", model, "-f", "html"], input="\n".join(SENTENCES) + "\n")
    assert page.exit_code == 0 and page.stdout.startswith("<!DOCTYPE html>")
    assert page.stdout.count("<svg") >= 4 and "http://" not in page.stdout.replace(
        'xmlns="http://www.w3.org/2000/svg"', "")
    assert_user_error(run(runner, ["parse", "--model", model, "--out-dir", tmp_path], input="a b\n"),
                      "--out-dir")


def test_evaluate_html_report(runner, model, tmp_path):
    report = tmp_path / "report.html"
    result = run(runner, ["evaluate", "--gold", FIXTURES / "cli_gold.trees", "--model", model, "--all-layers",
                          "--html", report])
    assert result.exit_code == 0, result.output
    page = report.read_text(encoding="utf-8")
    assert "right-branching" in page and "onlstm (layer 2)" in page and page.count("<svg") >= 3
    assert_user_error(run(runner, ["evaluate", "--gold", FIXTURES / "cli_gold.trees", "--model", model,
                                   "--html", tmp_path / "missing" / "r.html"]), "cannot write")


def test_parse_without_a_model_says_which_lines_no_bundled_model_reads(runner):
    """Text in a script no bundled model reads is not handed to the English one: its line says so and how to
    train a model, and every other line is parsed."""
    from onlstm_cli.cli.commands import app
    result = runner.invoke(app, ["parse", "-f", "bracket"], input="the cat sat\nкошка сидит на окне\n爱真的需要勇气\nԵս գիրք եմ կարդում։\n")
    assert result.exit_code == 2
    lines = result.stdout.splitlines()
    assert lines[0].startswith("(S") and lines[1] == "" and lines[2].startswith("(S") and lines[3] == ""
    assert "input line 2: no bundled model reads Cyrillic text" in result.stderr and "onlstm train" in result.stderr
    assert "input line 4: no bundled model reads Armenian text" in result.stderr


def test_train_says_the_language_and_tokenizer_it_took(runner, tmp_path):
    from onlstm_cli.cli.commands import app
    corpus = tmp_path / "c.txt"
    corpus.write_text("кошка сидит на окне\n" * 40, encoding="utf-8")
    result = runner.invoke(app, ["train", str(corpus), "-o", str(tmp_path / "m.onlstm"), "--epochs", "1",
                                 "--emb-size", "10", "--hidden-size", "10", "--chunk-size", "5", "--batch-size", "2"])
    first = result.stderr.splitlines()[0]
    assert first.startswith("language und-Cyrl, tokenizer unicode: the text is in Cyrillic script"), result.stderr
    assert "--lang and --tokenizer change them" in first
    empty = runner.invoke(app, ["train", str(corpus), "--lang", "", "-o", str(tmp_path / "e.onlstm")])
    assert empty.exit_code == 2 and "expected a language code" in empty.stderr


def test_text_without_spaces_between_words_is_cut_by_script_or_said(runner, tmp_path):
    """Japanese is cut where kanji and kana meet, and a model of it reads Japanese without a warning; a Thai
    text, whose runs no script change cuts, trains, and `train` says why its words are whole phrases."""
    from onlstm_cli.cli.commands import app
    tiny = ["--epochs", "1", "--emb-size", "10", "--hidden-size", "10", "--chunk-size", "5", "--batch-size", "2"]
    japanese = tmp_path / "ja.txt"
    japanese.write_text("私は本を読みました。\n猫がご飯を食べました。\n" * 20, encoding="utf-8")
    result = runner.invoke(app, ["train", str(japanese), "-o", str(tmp_path / "ja.onlstm"), *tiny])
    assert result.exit_code == 0 and "written without spaces" not in result.stderr, result.stderr
    parsed = runner.invoke(app, ["parse", "-m", str(tmp_path / "ja.onlstm"), "-f", "bracket"], input="猫は本を読みました。\n")
    assert parsed.exit_code == 0 and "(X 猫)" in parsed.stdout and "(X みました)" in parsed.stdout
    assert "warning" not in parsed.stderr, parsed.stderr
    thai = tmp_path / "th.txt"
    thai.write_text("ฉันชอบกินข้าวที่บ้านทุกวันกับครอบครัวของฉัน เราไป\n" * 40, encoding="utf-8")
    result = runner.invoke(app, ["train", str(thai), "-o", str(tmp_path / "th.onlstm"), *tiny])
    assert result.exit_code == 0, result.stderr
    assert "of the corpus's letters are in tokens of 25 characters or more: is it written without spaces" \
        in result.stderr
