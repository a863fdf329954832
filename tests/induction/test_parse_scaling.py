"""Parsing at scale: the span parser's inference path (one-way LSTMs, span scores and CKY in C or in bounded
torch blocks) finds the trees of its training-time forward; sentences of any length; `parse --jobs`."""
from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from onlstm_cli.induction import distances as parser_module
from onlstm_cli.span import model as span_parser
from onlstm_cli.config import SpanParserConfig
from onlstm_cli.fast import span as fast_span
from onlstm_cli.span.model import SpanParser, cky, padded, span_distances, tree_heights
from onlstm_cli.trees import build_tree, random_tree


def random_sentences(count: int, vocab: int, seed: int, longest: int = 14) -> list[list[int]]:
    rng = random.Random(seed)
    return [[rng.randrange(2, vocab) for _ in range(rng.randint(1, longest))] for _ in range(count)]


@pytest.fixture(scope="module")
def small_parser() -> SpanParser:
    torch.manual_seed(3)
    return SpanParser(SpanParserConfig(vocab_size=30, emb_size=8, hidden_size=6, n_layers=2, mlp_size=9)).eval()


def reference_trees(parser: SpanParser, sentences: list[list[int]]) -> list[list[int]]:
    """Trees of the training-time forward (a packed BiLSTM and the full span tensor) and torch's CKY."""
    with torch.inference_mode():
        ids, lengths = padded(sentences, list(range(len(sentences))), 1)
        return cky(parser(ids, lengths), lengths.tolist())


def test_the_inference_path_finds_the_forward_passs_trees(small_parser):
    sentences = random_sentences(40, 30, seed=0)
    assert span_distances(small_parser, sentences, eos_id=1, batch_size=7) == reference_trees(small_parser, sentences)


def test_the_torch_path_finds_the_same_trees_in_small_blocks(small_parser, monkeypatch):
    sentences = random_sentences(25, 30, seed=1)
    expected = reference_trees(small_parser, sentences)
    monkeypatch.setattr(fast_span, "c_span_works", lambda cky: False)
    monkeypatch.setattr(fast_span, "TORCH_BLOCK_ENTRIES", 50)  # blocks of a sentence or two, a row at a time
    assert span_distances(small_parser, sentences, eos_id=1, batch_size=25) == expected


def test_the_c_kernel_is_chosen_where_it_builds():
    from onlstm_cli.fast import ckernel
    assert fast_span.c_span_works(cky) == (ckernel.load() is not None)


def test_tree_heights_rebuild_every_tree_with_the_symmetric_rule():
    for n in range(1, 9):
        for seed in range(15):
            tree = random_tree(list(range(n)), random.Random(seed))
            assert build_tree(tree_heights(tree), list(range(n)), "symmetric") == tree


@pytest.fixture(scope="module")
def student(tmp_path_factory, tiny_model_path, tiny_corpus) -> Path:
    from onlstm_cli.config import SelfTrainConfig
    from onlstm_cli.modelfile import load_model
    from onlstm_cli.training.student.train import self_train
    teacher = load_model(tiny_model_path)
    out = tmp_path_factory.mktemp("scaling") / "student.onlstm"
    self_train(tiny_corpus["train"], out, teacher, tiny_corpus["valid"],
               SpanParserConfig(vocab_size=len(teacher.vocab), emb_size=20, hidden_size=8, mlp_size=8),
               SelfTrainConfig(epochs=1, batch_size=16), log=lambda line: None)
    return out


def test_a_sentence_too_long_for_cky_gets_its_language_models_tree(student, monkeypatch):
    from onlstm_cli.induction.distances import parse_lines, sentence_distances
    from onlstm_cli.induction.models import ModelCache
    line = "the cat sat on the mat and the dog ran to the park"
    loaded = ModelCache().get(student)
    words = line.split()
    lm = sentence_distances(loaded, [words], layer=loaded.parse_layer)[0]
    expected = build_tree(lm, words, loaded.split)
    monkeypatch.setattr(span_parser, "MAX_SPAN_WORDS", 5)
    assert parse_lines([line], model=str(student))[0].tree == expected
    assert parse_lines(["the cat sat"], model=str(student))[0].tree is not None  # short lines: span parser


def test_an_absurdly_long_line_is_refused_and_the_others_are_answered(model, runner, monkeypatch):
    from onlstm_cli.cli.commands import app
    monkeypatch.setattr(parser_module, "MAX_SENTENCE_WORDS", 6)
    # -j 1: worker processes would not see the patched limit (a machine of more than 2 cores starts them)
    result = runner.invoke(app, ["parse", "-m", model, "-f", "bracket", "-j", "1"],
                           input="the cat sat\n" + "word " * 7 + "\nthe dog ran\n")
    assert result.exit_code == 2
    lines = result.stdout.split("\n")
    assert lines[0].startswith("(") and lines[1] == "" and lines[2].startswith("(")
    assert "input line 2: 7 words" in result.stderr
    assert "1 input line not parsed" in result.stderr


def run_onlstm(*args: str, text: str, **options) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "onlstm_cli", *args], input=text, capture_output=True, text=True,
                          timeout=300, **options)


def test_jobs_give_the_output_of_one_process_byte_for_byte(student, tiny_corpus):
    text = Path(tiny_corpus["valid"]).read_text() * 3
    one = run_onlstm("parse", "-m", str(student), "-f", "json", "-j", "1", text=text)
    two = run_onlstm("parse", "-m", str(student), "-f", "json", "-j", "2", text=text)
    assert one.returncode == 0 and two.returncode == 0, two.stderr
    assert one.stdout == two.stdout and one.stdout.count("\n") == text.count("\n")


def batches_read(pulls: list, batches: list):
    """The batches, each appended to `pulls` as it is read."""
    for batch in batches:
        pulls.append(batch)
        yield batch


@pytest.mark.parametrize("paused", [False, True], ids=["file", "pipe paused"])
def test_workers_read_on_past_short_batches_unless_the_input_paused(model, paused):
    """A file's first batches are short (FIRST_BLOCK, doubling): they go to the workers side by side (it
    once read them one at a time, leaving all workers but one idle); after a batch where a pipe paused, every
    batch read is answered before the next is read."""
    from onlstm_cli.induction.line_parser import LineParser
    from onlstm_cli.induction.parallel import parse_in_workers
    from onlstm_cli.text.input_lines import PausedLines
    lines = ["the cat sat", "a dog ran", "the dog sat on the mat"]
    batches = [PausedLines([line]) if paused else [line] for line in lines]
    pulls: list = []
    answers = parse_in_workers(LineParser(model), batches_read(pulls, batches), jobs=2)
    first = next(answers)  # a worker takes seconds to start: any batch read by now was read without waiting
    assert len(pulls) == (1 if paused else len(lines))
    assert [first[0].tokens, *(batch[0].tokens for batch in answers)] == [line.split() for line in lines]


def test_a_worker_flushes_denormals_from_its_start(model):
    """`parse` runs with denormals flushed (a PCFG's charts make many, which a CPU computes many times slower); a
    spawned worker inherits nothing of that, so it flushes them itself before its threads start."""
    import multiprocessing
    import operator
    from concurrent.futures import ProcessPoolExecutor
    from onlstm_cli.induction.line_parser import LineParser
    from onlstm_cli.induction.parallel import _start_worker
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"), initializer=_start_worker,
                             initargs=(LineParser(model), 1)) as pool:
        half = pool.submit(operator.truediv, sys.float_info.min, 2).result(timeout=120)  # in the worker
    assert half == 0.0 and sys.float_info.min / 2 > 0


@pytest.mark.parametrize("jobs", ["0", "-3", "100000"])
def test_a_bad_jobs_count_is_a_one_line_error(model, runner, jobs):
    from onlstm_cli.cli.commands import app
    result = runner.invoke(app, ["parse", "-m", model, "-j", jobs], input="the cat\n")
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [result.stderr.strip()] and "--jobs" in result.stderr


def workers_of(pid: int) -> list[int]:
    children = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(p) for p in children.read_text().split()] if children.exists() else []


def ctrl_c_as_on_a_terminal() -> None:
    """A command started from a terminal has Ctrl-C at its default; a process that ignores SIGINT (a background
    job of a shell, or of something else in this test run) passes that on, and Python then never raises
    KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_parse_with_workers(model: str) -> tuple[subprocess.Popen, list[int]]:
    """`onlstm parse -j 2` reading from a pipe kept open, once a parse worker (started as work comes) has
    answered a line."""
    process = subprocess.Popen([sys.executable, "-m", "onlstm_cli", "parse", "-m", model, "-j", "2", "-f", "bracket"],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               preexec_fn=ctrl_c_as_on_a_terminal)
    process.stdin.write("the cat sat\n")
    process.stdin.flush()
    assert process.stdout.readline().startswith("(")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # the pool's resource tracker is a child too; workers are spawned
        workers = [p for p in workers_of(process.pid) if "spawn_main" in Path(f"/proc/{p}/cmdline").read_text()]
        if workers:
            return process, workers
        time.sleep(0.1)
    process.kill()
    pytest.fail("the parse workers did not start")


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="finds workers through /proc")
def test_a_killed_worker_ends_the_parse_with_one_line(model):
    process, workers = start_parse_with_workers(model)
    os.kill(workers[0], signal.SIGKILL)
    out, err = process.communicate("the dog ran\n" * 5, timeout=60)
    assert process.returncode != 0
    assert err.strip().splitlines() == ["error: a parse worker died (killed or out of memory); the lines after "
                                        "the last one written were not parsed"]


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="finds workers through /proc")
def test_ctrl_c_ends_every_worker_with_exit_130(model):
    process, workers = start_parse_with_workers(model)
    process.send_signal(signal.SIGINT)
    process.wait(timeout=60)  # stdin stays open: only the Ctrl-C can end the parse, not an end of input
    process.communicate(timeout=60)
    assert process.returncode == 130
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(Path(f"/proc/{w}").exists() for w in workers):
        time.sleep(0.1)
    assert not any(Path(f"/proc/{w}").exists() and "Z" not in Path(f"/proc/{w}/stat").read_text().split()[2]
                   for w in workers)


def test_parser_refuses_an_absurd_sentence_in_one_line_and_parses_the_others(model, monkeypatch):
    from onlstm_cli import Parser
    from onlstm_cli.errors import ParseError
    monkeypatch.setattr(parser_module, "MAX_SENTENCE_WORDS", 6)
    parser = Parser.load(model)
    with pytest.raises(ParseError, match="7 words, more than the 6 a sentence may have"):
        parser.parse("the cat sat on the mat today")
    assert parser.parse("the cat sat").leaves() == ["the", "cat", "sat"]


def test_a_long_parse_shows_its_progress_on_a_terminal_and_nowhere_else(model, tmp_path):
    import pty
    text = tmp_path / "lines.txt"
    text.write_text("the cat sat on the mat\n" * 3000)
    primary, secondary = pty.openpty()
    process = subprocess.Popen([sys.executable, "-m", "onlstm_cli", "parse", "-m", model, "-f", "bracket", str(text)],
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=secondary)
    os.close(secondary)
    out, _ = process.communicate(timeout=300)
    shown = b""
    while True:
        try:
            chunk = os.read(primary, 65536)
        except OSError:  # the terminal's other end has closed
            break
        if not chunk:
            break
        shown += chunk
    os.close(primary)
    assert process.returncode == 0 and out.count(b"\n") == 3000
    shown = re.sub(rb"\x1b\[[0-9;?]*[A-Za-z]", b"", shown)  # the terminal's colours and cursor moves
    assert b"parsed 3,000 lines" in shown
    assert b"parsed" not in out  # the trees' stream has trees only
    piped = run_onlstm("parse", "-m", model, "-f", "bracket", str(text), text="")
    assert "parsed" not in piped.stderr  # no terminal: no progress line
