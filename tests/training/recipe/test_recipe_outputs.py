"""The files a recipe writes beside --out never destroy another's (issue 50, items 1, 9, 17 and 19): each is checked
against the inputs before anything is written, recipes whose files would share names are kept apart, the language
models are locked while the recipe trains them, and a signal as the models start is an interruption to resume."""
from __future__ import annotations

import signal

import pytest

from conftest import write_corpus
from test_recipe import TINY, in_process, recipe_args, stopped_by_sigterm

from onlstm_cli.training.recipe.runner import recipe_locks
from onlstm_cli.training.recipe.files import lm_path
from onlstm_cli.training.recipe.side_by_side import _died


def one_error_line(result, *fragments: str) -> str:
    assert result.exit_code != 0, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize("name, what", [("x.recipe-valid.txt", "held-out split (valid)"),
                                        ("x.recipe-train.txt", "held-out split (train)"),
                                        ("x.lm-seed1112.onlstm.tokens", "seed 1112's token file"),
                                        ("x.onlstm.recipe.json", "record"),
                                        (".x.recipe.lock", "lock"),
                                        ("x.student.onlstm", "student check")])
def test_a_corpus_named_like_one_of_the_recipes_own_files_is_refused_and_kept(tmp_path, name, what):
    corpus = write_corpus(tmp_path / name, 60)
    before = corpus.read_bytes()
    one_error_line(in_process(recipe_args(corpus, tmp_path / "x.onlstm")), what, "same file as the corpus")
    assert corpus.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]  # nothing written beside it


@pytest.mark.parametrize("name", [".m.onlstm.lock", "m.onlstm.ckpt", "m.onlstm.tokens"])
def test_a_corpus_named_like_a_language_models_own_files_is_refused_and_kept(tmp_path, name):
    corpus = write_corpus(tmp_path / name, 40)
    before = corpus.read_bytes()
    result = in_process(["train", str(corpus), "-o", str(tmp_path / "m.onlstm"), "--epochs", "1", *TINY])
    one_error_line(result, "--out", "same file as the corpus")
    assert corpus.read_bytes() == before  # the lock file, opened first, used to truncate it


def test_a_recipe_whose_files_would_be_named_as_another_recipes_is_refused(tmp_path):
    corpus = write_corpus(tmp_path / "c.txt", 60)
    (tmp_path / "x.onlstm.recipe.json").write_text("{}")  # the record of a recipe -o x.onlstm
    one_error_line(in_process(recipe_args(corpus, tmp_path / "x.v2")), "the recipe of x.onlstm",
                   "give --out a name whose part before the last dot is its own")
    assert not (tmp_path / "x.recipe-train.txt").exists()


def test_while_a_recipe_runs_its_language_models_and_its_names_are_locked(tmp_path):
    corpus = write_corpus(tmp_path / "c.txt", 60)
    out = tmp_path / "x.onlstm"
    with recipe_locks(out, [(f"the language model of seed {s}", lm_path(out, s)) for s in (1111, 1112)]):
        plain = in_process(["train", str(corpus), "-o", str(lm_path(out, 1111)), "--epochs", "1", *TINY])
        one_error_line(plain, "being written by another onlstm run")
        other = in_process(recipe_args(corpus, tmp_path / "x.v2"))
        one_error_line(other, "another recipe whose files are named as this one's")
    assert not lm_path(out, 1111).exists()


def test_the_recipe_refuses_a_corpus_that_is_not_utf8_as_a_plain_train_does(tmp_path):
    corpus = write_corpus(tmp_path / "c.txt", 60)
    corpus.write_bytes(corpus.read_bytes() + b"caf\xe9 au lait\n")
    one_error_line(in_process(recipe_args(corpus, tmp_path / "x.onlstm")), "is not UTF-8 text (line 61, byte 3)")
    assert not list(tmp_path.glob("x.*")) and not list(tmp_path.glob(".x.*.tmp"))


def test_a_seed_process_ended_by_a_signal_before_its_handlers_is_an_interruption_not_a_failure():
    assert _died(-signal.SIGTERM) == {"interrupted": True, "stop_signal": signal.SIGTERM}
    assert _died(-signal.SIGINT) == {"interrupted": True, "stop_signal": signal.SIGINT}
    assert "error" in _died(-signal.SIGKILL) and "error" in _died(1)


def test_sigterm_as_the_models_start_is_an_interruption_that_leaves_no_temporary_file(tmp_path):
    corpus = write_corpus(tmp_path / "c.txt", 200, seed=5)
    out = tmp_path / "s.onlstm"
    # sent as the models' processes start: the signal reaches them as they import
    returncode, seen, rest = stopped_by_sigterm([*recipe_args(corpus, out), "--side-by-side", "2"],
                                                "its lines start [seed 1112]", timeout=120)
    assert returncode == 143, seen + rest
    assert "failed" not in rest and "exit code" not in rest, rest
    assert not list(tmp_path.glob(".*.tmp")), list(tmp_path.iterdir())
    assert "rerun the same command" in rest or "interrupted" in rest, rest


@pytest.mark.parametrize("shipped", ["student", "consensus parser"])
def test_the_last_line_names_what_the_recipe_shipped_as_info_does(tmp_path, shipped):
    """Where the student check ships the consensus parser, the last line says so and names the student beside it
    (issue 53: it said "span parser on 4 language models' votes" while `info` said the consensus parser)."""
    from onlstm_cli.training.recipe.record import RecipeResult, RecipeState
    teachers = [{"family": "onlstm", "seed": s, "path": f"x.lm-seed{s}.onlstm", "valid_ppl": 100.0} for s in (1, 2)]
    state = RecipeState({"train": {"time_budget": 600.0}}, teachers, {"student_check": {"shipped": shipped}},
                        {"language_models": 270.0, "span_parser": 90.0})
    line = RecipeResult(tmp_path / "x.onlstm", state).summary()
    assert line.startswith(f"done: {tmp_path / 'x.onlstm'} (")
    # how the time went, stage by stage, and the budget left unspent (issue 53)
    assert "6.0 min in all, over every run: language models 4.5 min, the span parser 1.5 min; 4.0 min of the " \
           "10-min budget not spent" in line
    if shipped == "student":
        assert "span parser on 2 language models' votes" in line and "x.student.onlstm" not in line
    else:
        assert "the consensus parser: an ensemble of the 2 voting language models" in line
        assert "x.student.onlstm" in line and "span parser on 2" not in line


@pytest.mark.parametrize("span_parser, said", [
    ({"right_branching": 0.0, "left_branching": 0.64}, "votes and a left-branching tree's (0.64);"),
    ({"right_branching": 0.3, "left_branching": 0.0}, "votes and a right-branching tree's (0.30);"),
    ({"right_branching": 0.0, "left_branching": 0.0, "lexical_agreement": 19.7},
     "votes, and no branching tree: their trees agree with word frequency's trees 19.7 points above random trees', "
     "too lexical to show the text's direction;"),
    ({"right_branching": 0.0, "left_branching": 0.0, "lexical_agreement": 2.1}, "language models' votes;")])
def test_the_last_line_says_which_branching_tree_voted_or_why_none_did(tmp_path, span_parser, said):
    from onlstm_cli.training.recipe.record import RecipeResult, RecipeState
    teachers = [{"family": "onlstm", "seed": s, "path": f"x.lm-seed{s}.onlstm", "valid_ppl": 100.0} for s in (1, 2)]
    state = RecipeState({"train": {"time_budget": 600.0}}, teachers, span_parser, {"language_models": 270.0})
    assert said in RecipeResult(tmp_path / "x.onlstm", state).summary()


def test_a_seed_stopped_while_its_teachers_parse_is_an_interruption_not_a_failure(monkeypatch):
    """A focused PCFG's process stopped by SIGTERM while its teachers parse (StoppedBySignal, nothing written) is
    an interrupted seed, as one stopped before its handlers is: the recipe resumes it, it does not fail."""
    import os
    import queue
    import sys
    from types import SimpleNamespace
    from onlstm_cli.errors import StoppedBySignal
    from onlstm_cli.training.recipe.side_by_side import train_seed

    class StoppedFamily:
        def train(self, job, reporter):
            raise StoppedBySignal("stopped while the teachers parsed", signal.SIGTERM)

    monkeypatch.setattr(sys, "stderr", sys.stderr)  # train_seed sets the seed's own: put back after the test
    handler, results = signal.getsignal(signal.SIGTERM), queue.Queue()
    try:
        train_seed(SimpleNamespace(number=3, label="pcfg seed 1111", family=StoppedFamily()), results, os.getppid())
    finally:
        signal.signal(signal.SIGTERM, handler)
    assert results.get_nowait() == (3, {"interrupted": True, "stop_signal": signal.SIGTERM})
