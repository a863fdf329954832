"""The scripts behind the bundled models: levers.py's table and the other research measurements."""
from __future__ import annotations

import json
import subprocess
import sys

from conftest import FIXTURES, REPO, right_to_left_copy
from onlstm_cli.modelfile import atomic_save, load_model, read_archive


def run_script(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *map(str, args)], cwd=REPO, capture_output=True, text=True, timeout=300)


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


def test_nt_asgd_trigger_reads_when_averaging_would_have_begun(tiny_model_path, tmp_path):
    archive = read_archive(tiny_model_path)
    stalls, falls = tmp_path / "stalls.onlstm", tmp_path / "falls.onlstm"
    ppl = [300.0, 200.0, 150.0, 140.0, 139.0, 138.0, 137.0, 210.0]  # epoch 8 is worse than epochs 1-2 (all but the last 5)
    for target, values in ((stalls, ppl), (falls, sorted(ppl, reverse=True))):
        history = [{"epoch": float(k + 1), "valid_ppl": v} for k, v in enumerate(values[:-1])]
        archive["meta"] = dict(archive["meta"], history=history, epochs=float(len(values)), valid_ppl=values[-1])
        atomic_save(archive, target)
    got = run_script("scripts/nt_asgd_trigger.py", stalls, falls, "--nonmono", "5")
    assert got.returncode == 0, got.stderr
    first, second = got.stdout.splitlines()
    assert "8 validations" in first and "averaging would have begun after epoch 8" in first
    assert "8 validations" in second and "the trigger never fires" in second
    got = run_script("scripts/nt_asgd_trigger.py", stalls, "--nonmono", "7")  # 7 validations before epoch 8: none older than the last 7
    assert "the trigger never fires" in got.stdout


def test_by_valid_ppl_orders_runs_for_the_shipping_rule(tiny_model_path, tmp_path):
    archive = read_archive(tiny_model_path)
    paths = []
    for name, ppl in (("a", 130.0), ("b", 110.0), ("c", 120.0)):
        archive["meta"] = dict(archive["meta"], valid_ppl=ppl, epochs=18.0)
        paths.append(tmp_path / f"{name}.onlstm")
        atomic_save(archive, paths[-1])
    got = run_script("scripts/by_valid_ppl.py", *paths)
    assert got.returncode == 0, got.stderr
    assert got.stdout.split() == [str(tmp_path / n) for n in ("b.onlstm", "c.onlstm", "a.onlstm")]
    shown = run_script("scripts/by_valid_ppl.py", *paths, "--show").stdout.splitlines()
    assert shown[0].split("\t")[1:] == ["110.00", "18.0 epochs"]
    archive["meta"] = dict(archive["meta"], valid_ppl=None)
    atomic_save(archive, tmp_path / "unvalidated.onlstm")
    got = run_script("scripts/by_valid_ppl.py", tmp_path / "unvalidated.onlstm", *paths)
    assert got.returncode != 0 and "without a validation perplexity" in got.stderr


def test_average_checkpoints_averages_weights_and_measures_their_perplexity(tiny_model_path, tiny_corpus, tmp_path):
    import math

    import torch
    archive = read_archive(tiny_model_path)
    shifted = dict(archive, state_dict={k: v + 1 if v.is_floating_point() else v
                                        for k, v in archive["state_dict"].items()},
                   meta=dict(archive["meta"], epochs=3.0))
    atomic_save(shifted, tmp_path / "later.onlstm")
    target = tmp_path / "avg.onlstm"
    got = run_script("scripts/average_checkpoints.py", tiny_model_path, tmp_path / "later.onlstm",
                     "--valid", tiny_corpus["valid"], "--out", target)
    assert got.returncode == 0, got.stderr
    averaged = load_model(target)
    first = load_model(tiny_model_path).model.state_dict()
    for name, tensor in averaged.model.state_dict().items():
        if tensor.is_floating_point():
            assert torch.allclose(tensor, first[name] + 0.5, atol=2e-2), name  # float16 files
    assert averaged.meta["epochs"] == 3.0 and len(averaged.meta["averaged_from"]) == 2
    assert math.isfinite(averaged.meta["valid_ppl"]) and averaged.meta["valid_ppl"] != archive["meta"]["valid_ppl"]
    assert f"valid ppl {averaged.meta['valid_ppl']:.2f}" in got.stdout


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
