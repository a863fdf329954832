"""Under torchrun one language model or PCFG trains on all the processes: a focused PCFG, a span parser and the
recipe are refused in one line by the first process (the others exit without a word), before anything is written."""
from __future__ import annotations

import pytest
from typer.testing import CliRunner

from conftest import write_corpus

from onlstm_cli.cli.commands import app


@pytest.mark.parametrize("extra, what", [(["--family", "pcfg", "--teacher", "en"],
                                          "a focused PCFG (--family pcfg --teacher)"),
                                         (["--teacher", "en"], "a span parser (--teacher)"),
                                         (["--seeds", "2"], "the recipe (--seeds K)")])
def test_what_trains_in_one_process_is_refused_under_torchrun(tmp_path, monkeypatch, extra, what):
    corpus = write_corpus(tmp_path / "corpus.txt", 30, seed=2)
    out = tmp_path / "m.onlstm"
    monkeypatch.setenv("WORLD_SIZE", "2")
    runner = CliRunner()
    monkeypatch.setenv("RANK", "0")
    first = runner.invoke(app, ["train", str(corpus), "-o", str(out), *extra])
    assert first.exit_code == 2 and "Traceback" not in first.output
    line, = first.stderr.strip().splitlines()
    assert f"{what} trains in one process: start it without torchrun" in line
    monkeypatch.setenv("RANK", "1")
    other = runner.invoke(app, ["train", str(corpus), "-o", str(out), *extra])
    assert other.exit_code == 2 and other.output == ""
    assert list(tmp_path.iterdir()) == [corpus]  # nothing written by either


@pytest.mark.parametrize("family", ["onlstm", "pcfg"])
def test_one_model_goes_on_to_its_processes_and_without_a_rendezvous_says_so_in_one_line(tmp_path, monkeypatch,
                                                                                         family):
    """A plain `train` (a language model, a PCFG) is not refused by that check: it goes on to join its processes,
    and with WORLD_SIZE set by hand (no torchrun, so no MASTER_ADDR) says why they cannot meet, not an internal
    error."""
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "0")
    monkeypatch.delenv("MASTER_ADDR", raising=False)
    corpus = write_corpus(tmp_path / "corpus.txt", 30, seed=2)
    result = CliRunner().invoke(app, ["train", str(corpus), "-o", str(tmp_path / "m.onlstm"), "--epochs", "1",
                                      "--family", family])
    line, = result.stderr.strip().splitlines()
    assert result.exit_code == 2 and "start it without torchrun" not in line
    assert "WORLD_SIZE=2 asks for several processes, but they cannot meet" in line and "MASTER_ADDR" in line
    assert not (tmp_path / "m.onlstm").exists()
