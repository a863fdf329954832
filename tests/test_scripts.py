"""The scripts behind the bundled models' figures: levers.py's table, seed_agreement.py's; and every script
runs from any directory on the installed package."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import FIXTURES, REPO, right_to_left_copy
from onlstm_cli.modelfile import atomic_save, read_archive


def run_script(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *map(str, args)], cwd=REPO, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("script", sorted(p.name for p in (REPO / "scripts").glob("*.py") if p.name != "prepare_zh.py"))
def test_each_script_runs_on_the_installed_package(script, tmp_path):
    """No script puts the checkout on sys.path: run from elsewhere, each imports the package as installed."""
    got = subprocess.run([sys.executable, REPO / "scripts" / script, "--help"], cwd=tmp_path, capture_output=True,
                         text=True, timeout=300)
    assert got.returncode == 0, got.stderr
    assert "usage:" in got.stdout


def test_levers_scores_each_model_and_their_ensembles(tiny_model_path, tmp_path):
    backwards = right_to_left_copy(tiny_model_path, tmp_path)
    gold = FIXTURES / "cli_gold.trees"
    got = run_script("scripts/levers.py", "--gold", gold, tiny_model_path, backwards, "--layers", "2",
                     "--weights", "0.5", "--json", tmp_path / "rows.json")
    assert got.returncode == 0, got.stderr
    rows = json.loads((tmp_path / "rows.json").read_text())
    singles = [r for r in rows if len(r["models"]) == 1]
    pairs = [r for r in rows if len(r["models"]) == 2]
    assert len(singles) == 2 * 2  # two models × two split rules
    # three combinations × two weightings (equal, and the last model at 0.5) × two split rules
    assert {r["combine"] for r in pairs} == {"mean", "zscore", "rank"} and len(pairs) == 3 * 2 * 2
    assert {tuple(r["weights"]) for r in pairs} == {(1.0, 1.0), (1.0, 0.5)}
    assert all(0 <= r["sentence_f1"] <= 100 for r in rows)
    rows_table, spread_table = got.stdout.split("\n\n")
    table = [line for line in rows_table.splitlines() if line.startswith("| ")]
    assert len(table) == len(rows) + 1  # the header, then a row each
    # the spread over the models alone: their mean, per layer and split rule
    paper = [r["sentence_f1"] for r in singles if r["split"] == "paper"]
    spread = next(line for line in spread_table.splitlines() if "| 2 | paper |" in line)
    assert f"{sum(paper) / 2:.2f} ± " in spread and f"({min(paper):.2f}–{max(paper):.2f})" in spread


def test_seed_agreement_is_full_for_a_model_and_its_copy(tiny_model_path, tmp_path):
    backwards = right_to_left_copy(tiny_model_path, tmp_path)
    text = tmp_path / "text.txt"
    text.write_text("the cat sat on the mat\nthe dog saw a cat on the mat\na b\n", encoding="utf-8")
    atomic_save(read_archive(tiny_model_path), tmp_path / "copy.onlstm")
    got = run_script("scripts/seed_agreement.py", tiny_model_path, tmp_path / "copy.onlstm", backwards,
                     "--text", text)
    assert got.returncode == 0, got.stderr
    assert "2 sentences" in got.stdout  # "a b" is too short to have spans to agree on
    pairs = {tuple(c.strip() for c in line.split("|")[1:3]): float(line.split("|")[3])
             for line in got.stdout.split("\n\n")[0].splitlines()[2:]}
    assert pairs[str(tiny_model_path), str(tmp_path / "copy.onlstm")] == 100.0
    assert all(0 <= v <= 100 for v in pairs.values())
    shapes = [line.split("|") for line in got.stdout.split("\n\n")[2].splitlines()[2:]]
    assert [c[1].strip() for c in shapes] == [str(tiny_model_path), str(tmp_path / "copy.onlstm"), str(backwards)]
    assert all(0 <= float(c[2]) <= 100 and 0 <= float(c[3]) <= 100 for c in shapes)
    assert shapes[0][2:] == shapes[1][2:]  # a copy agrees with either shape as its model does
    assert "the right-branching voter's weight with these models as teachers: " in got.stdout
    lone = run_script("scripts/seed_agreement.py", tiny_model_path, "--text", text)
    assert lone.returncode == 0, lone.stderr
    assert lone.stdout.startswith("| model | agreement with right-branching trees") and "mean agreement" not in lone.stdout
    assert lone.stdout.splitlines()[2].split("|")[2:] == shapes[0][2:]
