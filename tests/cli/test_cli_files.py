"""Every command keeps its inputs and outputs apart (issue 41 items 1 and 15): an output that is one of its
inputs, by any name, is refused in one line before anything is written; `-` is stdin; a path that is not a
readable file says what it is."""
from __future__ import annotations

import os

import pytest

from conftest import FIXTURES, right_to_left_copy, write_corpus
from onlstm_cli.errors import OnlstmError
from onlstm_cli.files import check_outputs, open_for_append
from test_cli import assert_user_error, run

TINY = ["--emb-size", "20", "--hidden-size", "40", "--chunk-size", "5", "--epochs", "1", "--batch-size", "4",
        "--threads", "1"]


@pytest.fixture
def corpus(tmp_path):
    return write_corpus(tmp_path / "c.txt", 40)


def kept(path, before: bytes) -> bool:
    return path.read_bytes() == before


@pytest.mark.parametrize("how", ["same name", "hard link", "symbolic link", "another spelling"])
def test_train_refuses_an_out_that_is_its_corpus(runner, corpus, tmp_path, how):
    before = corpus.read_bytes()
    out = {"same name": corpus, "hard link": tmp_path / "h.txt", "symbolic link": tmp_path / "s.txt",
           "another spelling": tmp_path / "sub" / ".." / "c.txt"}[how]
    (tmp_path / "sub").mkdir()
    if how == "hard link":
        os.link(corpus, out)
    if how == "symbolic link":
        out.symlink_to(corpus)
    line = assert_user_error(run(runner, ["train", corpus, "-o", out, *TINY]), "the corpus", "same file")
    assert "--out" in line
    assert kept(corpus, before)


@pytest.mark.parametrize("args, fragment", [
    (["--valid", "{v}", "-o", "{v}"], "--valid"),
    (["--loss-log", "{c}", "-o", "{o}"], "--loss-log"),
    (["--loss-log", "{o}", "-o", "{o}"], "--loss-log"),
])
def test_train_refuses_every_other_input_output_pair(runner, corpus, tmp_path, args, fragment):
    valid = write_corpus(tmp_path / "v.txt", 8, seed=1)
    before = corpus.read_bytes(), valid.read_bytes()
    names = {"v": valid, "c": corpus, "o": tmp_path / "m.onlstm"}
    args = [a.format(**names) for a in args]
    assert_user_error(run(runner, ["train", corpus, *args, *TINY]), fragment, "same file")
    assert (corpus.read_bytes(), valid.read_bytes()) == before
    assert not (tmp_path / "m.onlstm").exists()


def test_a_loss_log_that_is_a_symbolic_link_is_refused(runner, corpus, tmp_path):
    target = tmp_path / "elsewhere.txt"
    target.write_text("mine\n")
    link = tmp_path / "loss.tsv"
    link.symlink_to(target)
    assert_user_error(run(runner, ["train", corpus, "-o", tmp_path / "m.onlstm", "--loss-log", link, *TINY]),
                      "symbolic link")
    assert target.read_text() == "mine\n"
    with pytest.raises(OnlstmError, match="symbolic link"):  # and where it is opened, in one step
        open_for_append(link)


def test_parse_refuses_an_output_that_is_its_input_or_its_model(runner, model, tmp_path):
    text = tmp_path / "same.txt"
    text.write_text("the cat sat\n")
    link = tmp_path / "link.txt"
    link.symlink_to(text)
    for output in (text, link):
        assert_user_error(run(runner, ["parse", "-m", model, text, "-o", output]), "--output", "input file")
    assert text.read_text() == "the cat sat\n"
    before = open(model, "rb").read()
    assert_user_error(run(runner, ["parse", "-m", model, text, "-o", model]), "--model")
    assert open(model, "rb").read() == before


def test_evaluate_refuses_an_html_page_over_its_gold_file(runner, model, tmp_path):
    gold = tmp_path / "g.trees"
    gold.write_bytes((FIXTURES / "cli_gold.trees").read_bytes())
    before = gold.read_bytes()
    assert_user_error(run(runner, ["evaluate", "-m", model, "--gold", gold, "--html", gold]), "--html", "--gold")
    assert kept(gold, before)


def test_ensemble_refuses_an_out_that_is_one_of_its_models(runner, tiny_model_path, tmp_path):
    backwards = right_to_left_copy(tiny_model_path, tmp_path)
    before = backwards.read_bytes()
    assert_user_error(run(runner, ["ensemble", tiny_model_path, backwards, "-o", backwards]), "--out", "model")
    assert kept(backwards, before)


def test_the_check_compares_files_not_names(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_text("x")
    b.write_text("x")
    check_outputs([("in", a)], [("out", b), ("log", tmp_path / "new")])  # other files, one not there yet
    with pytest.raises(OnlstmError, match="same file"):
        check_outputs([("in", a)], [("out", tmp_path / "." / "a")])
    with pytest.raises(OnlstmError, match="out .* is the same file as log"):
        check_outputs([], [("log", tmp_path / "new"), ("out", tmp_path / "new")])


# --- what a path that is not a readable file is (item 15) --------------------------------------------

def test_parse_dash_reads_stdin(runner, model, tmp_path):
    text = tmp_path / "a.txt"
    text.write_text("the cat\n")
    result = run(runner, ["parse", "-m", model, "-f", "bracket", text, "-"], input="a dog sat\n")
    assert result.exit_code == 0, result.output
    assert len(result.stdout.splitlines()) == 2 and "dog" in result.stdout.splitlines()[1]


def test_a_directory_or_a_link_loop_is_named_for_what_it_is(runner, model, tmp_path):
    loop = tmp_path / "loop"
    loop.symlink_to(tmp_path / "loop")
    dangling = tmp_path / "dangling.txt"
    dangling.symlink_to(tmp_path / "gone.txt")
    assert_user_error(run(runner, ["parse", "-m", model, tmp_path]), "is a directory")
    assert_user_error(run(runner, ["parse", "-m", model, loop]), "symbolic-link loop")
    assert_user_error(run(runner, ["parse", "-m", model, dangling]), "symbolic link", "does not exist")
    assert_user_error(run(runner, ["parse", "-m", loop], input="the cat\n"), "model file", "symbolic-link loop")
    assert_user_error(run(runner, ["info", loop]), "symbolic-link loop")
    out = ["-o", tmp_path / "m.onlstm"]
    assert_user_error(run(runner, ["train", loop, *out, *TINY]), "corpus", "symbolic-link loop")
    assert_user_error(run(runner, ["train", tmp_path, *out, *TINY]), "corpus", "is a directory")


def test_a_model_named_without_a_folder_that_is_a_link_loop_says_so(runner, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine").symlink_to(tmp_path / "mine")
    assert_user_error(run(runner, ["info", "mine"]), "symbolic-link loop")  # not "no model named"


@pytest.mark.parametrize("command", ["parse", "evaluate --html", "ensemble", "train"])
def test_an_output_that_is_a_fifo_is_refused_and_stays_a_fifo(runner, model, tiny_model_path, corpus, tmp_path,
                                                              command):
    import stat
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    text = tmp_path / "in.txt"
    text.write_text("the cat sat\n")
    args = {"parse": ["parse", "-m", model, text, "-o", fifo],
            "evaluate --html": ["evaluate", "--gold", FIXTURES / "cli_gold.trees", "-m", model, "--html", fifo],
            "ensemble": ["ensemble", tiny_model_path, tiny_model_path, "-o", fifo],
            "train": ["train", corpus, "-o", fifo, *TINY]}[command]
    assert_user_error(run(runner, args), "is a FIFO, not a regular file")
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_the_one_writer_refuses_a_device_or_fifo_it_would_replace(tmp_path):
    import stat
    from onlstm_cli.errors import ModelFileError
    from onlstm_cli.modelfile import atomic_file
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(ModelFileError, match="is a FIFO, not a regular file"):
        with atomic_file(fifo, "w") as f:
            f.write("x")
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and not list(tmp_path.glob(".*.tmp"))
    with pytest.raises(ModelFileError, match="is a character device"):
        with atomic_file("/dev/null", "w") as f:
            f.write("x")


@pytest.mark.parametrize("args", [["parse", "-m", "en", "{text}", "-o", "{bundled}"],
                                  ["parse", "{text}", "-o", "{bundled}"],
                                  ["evaluate", "--gold", "{gold}", "-m", "en", "--html", "{bundled}"]])
def test_no_output_is_written_onto_a_bundled_model_being_read(runner, tiny_model_path, tmp_path, monkeypatch, args):
    import shutil
    from onlstm_cli.induction import models
    bundled = tmp_path / "models" / "en-ptb.onlstm"  # a copy stands for the package's own folder
    bundled.parent.mkdir()
    shutil.copy(tiny_model_path, bundled)
    before = bundled.read_bytes()
    monkeypatch.setattr(models, "models_dir", lambda: bundled.parent)
    text = tmp_path / "in.txt"
    text.write_text("the cat sat\n")
    names = {"text": text, "bundled": bundled, "gold": FIXTURES / "cli_gold.trees"}
    assert_user_error(run(runner, [a.format(**names) for a in args]), "is the same file as", "model")
    assert bundled.read_bytes() == before
