"""issue 53: a resumed `train` says the best validation perplexity its checkpoint holds, and nothing of one where
it holds none (a run without --valid), never "nan"."""
from __future__ import annotations

import re

from typer.testing import CliRunner

from conftest import write_corpus
from onlstm_cli.cli.commands import app
from onlstm_cli.modelfile import CHECKPOINT_FORMAT, read_archive

TINY = ["--emb-size", "20", "--hidden-size", "20", "--chunk-size", "5", "--batch-size", "4", "--bptt", "10",
        "--optimizer", "adam", "--lr", "0.01", "--threads", "1", "--device", "cpu", "--time-budget", "none"]


def train(*args) -> str:
    result = CliRunner().invoke(app, ["train", *map(str, args), *TINY])
    assert result.exit_code == 0, result.output
    return result.stderr


def test_a_resumed_run_says_its_checkpoints_best_or_none(tmp_path):
    corpus, valid = write_corpus(tmp_path / "c.txt", 20, seed=2), write_corpus(tmp_path / "v.txt", 6, seed=3)
    for name, validation in (("plain", []), ("valid", ["--valid", valid])):
        out = tmp_path / f"{name}.onlstm"
        train(corpus, "-o", out, "--epochs", "1", *validation)
        best = read_archive(f"{out}.ckpt", expected_format=CHECKPOINT_FORMAT)["best_valid_ppl"]
        resumed = train(corpus, "-o", out, "--epochs", "2", "--resume", f"{out}.ckpt", *validation)
        line = next(line for line in resumed.splitlines() if line.startswith("resuming from"))
        assert "nan" not in line
        if validation:
            assert re.search(rf"best valid ppl {best:.2f}\)$", line), line
        else:
            assert best is None and line == f"resuming from {out}.ckpt (epoch 2)"
