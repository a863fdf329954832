"""`onlstm train CORPUS --seeds K`: the whole self-training recipe, its record, its resume and its refusals."""
from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from conftest import write_corpus

TINY = ["--emb-size", "20", "--hidden-size", "20", "--chunk-size", "5", "--batch-size", "4", "--bptt", "10",
        "--optimizer", "adam", "--lr", "0.01", "--threads", "1", "--time-budget", "none"]
ONLSTMS = ["--families", "onlstm"]  # the recipe's mechanics, on ON-LSTMs alone (--families auto would add PCFGs to a
                                    # text this small: test_families_auto.py)


def recipe_args(corpus: Path, out: Path, *extra: str) -> list[str]:
    return ["train", str(corpus), "-o", str(out), "--seeds", "2", "--epochs", "2", *TINY, *ONLSTMS, *extra]


def onlstm(args: list[str], **options) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "onlstm_cli", *args], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=600, **options)


def in_process(args: list[str]):
    """`onlstm ARGS` run in this process, as the command line runs it: for refusals and tiny runs, without
    a start-up of their own."""
    from typer.testing import CliRunner
    from onlstm_cli.cli.commands import app
    return CliRunner().invoke(app, args)


def student_meta(out: Path) -> dict:
    """The meta of a recipe's span parser: at `out`, or beside it where the student check shipped the
    consensus parser there instead (its record says which)."""
    from onlstm_cli.training.student.check import student_path
    record = json.loads(out.with_name(f"{out.name}.recipe.json").read_text())
    shipped = (record.get("span_parser") or {}).get("student_check", {}).get("shipped", "student")
    student = out if shipped == "student" else student_path(out)
    return torch.load(student, weights_only=True)["span_parser"]["meta"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    """The recipe's mechanics, on a text without punctuation marks. With them, its votes are cut at the marks
    (test_votes_cut_at_marks.py), which a two-epoch student learns less well than its two-epoch teachers agree
    with each other, and the student check may ship the consensus parser instead."""
    path = write_corpus(tmp_path_factory.mktemp("recipe") / "corpus.txt", 200, seed=5)
    lines = path.read_text(encoding="utf-8").splitlines()
    path.write_text("".join(" ".join(w for w in line.split() if w not in ",.!") + "\n" for line in lines),
                    encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory, corpus) -> tuple[Path, str]:
    """A whole tiny recipe, run once: two language models side by side, then the span parser on their votes."""
    out = tmp_path_factory.mktemp("recipe-out") / "tiny.onlstm"
    result = onlstm(recipe_args(corpus, out, "--side-by-side", "2"))
    assert result.returncode == 0, result.stderr
    return out, result.stderr


@pytest.fixture(scope="module")
def finished(finished_run) -> Path:
    return finished_run[0]


def test_the_language_models_train_side_by_side_each_log_line_naming_its_seed(finished_run):
    out, log = finished_run
    assert "2 language models, 2 at a time side by side (1 thread each)" in log
    for seed in (1111, 1112):
        lines = [line for line in log.splitlines() if line.startswith(f"[seed {seed}] ")]
        assert any("corpus:" in line for line in lines) and any("end of epoch 2" in line for line in lines)
    record = json.loads((out.parent / "tiny.onlstm.recipe.json").read_text())
    assert [t["seed"] for t in record["teachers"]] == [1111, 1112]  # in seed order, whichever ended first
    assert all(t["epochs"] == 2 for t in record["teachers"])
    # without a time budget --epochs caps the span parser too (its own cap is 8): a quick trial throughout
    assert record["span_parser"]["epochs"] == 2 and "epoch 3:" not in log


def test_the_recipe_records_how_much_each_teacher_agrees_with_the_others(finished_run):
    out, log = finished_run
    record = json.loads((out.parent / "tiny.onlstm.recipe.json").read_text())
    agreement = [t["agreement"] for t in record["teachers"]]
    assert len(agreement) == 2 and all(0 <= a <= 100 for a in agreement)
    assert agreement[0] == agreement[1]  # with two teachers, each agrees with the other alike
    assert f"tiny.lm-seed1111.onlstm {agreement[0]:.2f}, tiny.lm-seed1112.onlstm" in log
    archive_meta = student_meta(out)
    assert archive_meta["teacher_agreement"] == agreement


def test_the_recipe_weighs_its_right_branching_voter_from_the_teachers_trees_by_default(finished_run):
    out, log = finished_run
    record = json.loads((out.parent / "tiny.onlstm.recipe.json").read_text())
    assert record["options"]["recipe"]["right_branching"] == "auto"
    weight = record["span_parser"]["right_branching"]
    assert isinstance(weight, float) and weight >= 0
    left = record["span_parser"]["left_branching"]
    assert isinstance(left, float) and left >= 0 and (weight == 0 or left == 0)  # one voter, one direction
    if weight == left == 0:  # the tiny teachers' word order shows no direction (--lean-from word-order)
        assert "the branching voter: none (auto: the teachers' word order shows no direction; the teachers' trees" in log
    else:
        direction, shown = ("left", left) if left > 0 else ("right", weight)
        assert f"the branching voter: a {direction}-branching voter of weight {shown:.2f} (auto: the teachers' trees" in log
    assert "the teachers' word order: " in log
    assert student_meta(out)["right_branching"] == weight
    from onlstm_cli.info import info_text, model_info
    assert (f"a right-branching tree of weight {weight:g}" in info_text(model_info(out))) == (weight > 0)


def test_the_recipe_writes_its_language_models_and_a_span_parser_on_their_votes(finished):
    from onlstm_cli.info import info_text, model_info
    from onlstm_cli.modelfile import load_model
    for seed in (1111, 1112):
        assert (finished.parent / f"tiny.lm-seed{seed}.onlstm").is_file()
    assert load_model(finished).span_parser is not None
    archive_meta = student_meta(finished)
    record = archive_meta["recipe"]
    assert record["seeds"] == [1111, 1112]
    assert [t["seed"] for t in record["teachers"]] == [1111, 1112]
    assert all(t["valid_ppl"] > 1 for t in record["teachers"])
    assert ("the trees of each of the 2 language models' parse layer and of the layer next to it (above it, below "
            "where it has too few above) weigh 1 each, a branching tree (auto: a right- or left-branching tree, the way "
            "the teachers lean") in record["votes"]
    assert record["stage_seconds"]["language_models"] > 0
    assert 0 < archive_meta["seconds"] and f"epochs in {archive_meta['seconds'] / 60:.1f} min" in info_text(
        model_info(finished))  # the span parser's own time, which the record, written before it trains, lacks
    assert archive_meta["teacher"] == [str(finished.parent / f"tiny.lm-seed{s}.onlstm") for s in (1111, 1112)]


def test_a_finished_recipe_removes_what_only_a_resume_needs_and_says_what_it_left(finished_run):
    """Issue 41 item 14: the checkpoints, token files and held-out split go; the models and the record stay, and
    the last line says so, with their sizes."""
    out, log = finished_run
    left = sorted(p.name for p in out.parent.iterdir())
    assert left == ["tiny.lm-seed1111.onlstm", "tiny.lm-seed1112.onlstm", "tiny.onlstm", "tiny.onlstm.recipe.json"]
    last = log.strip().splitlines()[-1]
    assert re.search(r"beside it 2 language models \(tiny.lm-seed1111.onlstm, …: [\d.]+ kB\) and the record "
                     r"tiny.onlstm.recipe.json; removed [\d.]+ [kM]B of checkpoints, token files and split text the "
                     r"finished recipe no longer needs \(--keep-intermediate keeps them\)", last), last


def test_a_recipe_keeps_its_intermediate_files_when_asked_and_while_a_resume_needs_them(corpus, tmp_path):
    from onlstm_cli.training.recipe.files import intermediate_files, leave_finished, lm_path, split_paths
    out = tmp_path / "k.onlstm"
    result = in_process(recipe_args(corpus, out, "--epochs", "1", "--side-by-side", "1", "--keep-intermediate"))
    assert result.exit_code == 0, result.stderr
    kept = intermediate_files(out, [lm_path(out, 1111), lm_path(out, 1112)], held_out=True)
    assert {p.name for p in kept} == {"k.lm-seed1111.onlstm.ckpt", "k.lm-seed1111.onlstm.tokens",
                                      "k.lm-seed1112.onlstm.ckpt", "k.lm-seed1112.onlstm.tokens", "k.onlstm.ckpt",
                                      "k.recipe-train.txt", "k.recipe-valid.txt"}
    assert "(--keep-intermediate): only a rerun with a larger --time-budget reads them" in result.stderr
    # a --valid of the user's named like the split is never removed, nor what a planted link points to
    user_valid = split_paths(out)["valid"]
    target = tmp_path / "precious.txt"
    target.write_text("mine")
    checkpoint = tmp_path / "k.onlstm.ckpt"
    checkpoint.unlink()
    checkpoint.symlink_to(target)
    leave_finished(out, [lm_path(out, 1111), lm_path(out, 1112)], [], tmp_path / "k.onlstm.recipe.json", held_out=False,
                   keep=False)
    assert user_valid.exists() and target.read_text() == "mine" and checkpoint.is_symlink()
    assert not (tmp_path / "k.lm-seed1111.onlstm.ckpt").exists() and (tmp_path / "k.lm-seed1111.onlstm").exists()


def test_keep_intermediate_without_seeds_is_refused(corpus, tmp_path):
    result = in_process(["train", str(corpus), "-o", str(tmp_path / "m.onlstm"), "--keep-intermediate"])
    assert result.exit_code == 2 and "give --seeds K" in result.stderr


def test_a_raised_budget_on_a_recipe_whose_checkpoints_were_removed_says_nothing_can_go_on(corpus, tmp_path):
    from onlstm_cli.config import RecipeConfig, SelfTrainConfig, TrainConfig
    from onlstm_cli.training.recipe.runner import RecipeRun, RecipeState
    said = []
    run = RecipeRun(corpus, tmp_path / "x.onlstm", corpus, {}, TrainConfig(epochs=10, time_budget=20.0),
                    RecipeConfig(seeds=2, families=("onlstm",)), SelfTrainConfig(), {}, None, said.append)
    state = RecipeState({"train": {"time_budget": 10.0}}, [{"seed": 1111, "epochs": 3}, {"seed": 1112, "epochs": 3}],
                        {"epochs": 1})
    run.extend(state, 10.0)
    assert "checkpoints were removed when the recipe finished (--keep-intermediate keeps them)" in said[0]
    assert state.span_parser is not None and len(state.teachers) == 2


def test_the_recipe_tells_how_far_its_span_parser_is_from_branching_trees(finished_run):
    """Issue 41 item 13: the student's agreement with right- and left-branching trees, in the log, the record
    and the file's recipe record, which `info` reads."""
    out, log = finished_run
    record = json.loads((out.parent / "tiny.onlstm.recipe.json").read_text())
    agreement = record["span_parser"]["branching_agreement"]
    assert set(agreement) == {"right", "left"} and all(0 <= v <= 100 for v in agreement.values())
    assert (f"the span parser's trees of the validation text agree {agreement['right']:.1f} with right-branching "
            f"trees, {agreement['left']:.1f} with left-branching ones") in log
    meta = student_meta(out)
    assert meta["recipe"]["branching_agreement"] == agreement


def test_a_student_of_nearly_branching_trees_is_warned_about():
    from onlstm_cli.config import RecipeConfig
    from onlstm_cli.training.recipe.voters import branching_warning
    threshold = RecipeConfig.warn_branching_above
    assert branching_warning({"right": 97.0, "left": 2.0}, threshold).startswith(
        "warning: the span parser's trees of the validation text agree 97.0 (sentence F1) with right-branching trees")
    assert "left-branching" in branching_warning({"right": 1.0, "left": threshold + 0.1}, threshold)
    assert branching_warning({"right": threshold, "left": 10.0}, threshold) is None
    assert branching_warning({}, threshold) is None


def test_the_held_out_split_keeps_every_line_as_written_and_skips_blank_ones(tmp_path):
    from onlstm_cli.training.recipe.runner import held_out_split
    corpus = tmp_path / "raw.txt"
    lines = [f"sentence number {k} ." for k in range(45)]
    lines[7] = "caf\u00e9 \u732b ."
    body = "\r\n\r\n".join(lines[:10]).encode() + b"\n  \n" + "\n".join(lines[10:]).encode() + b"\n"
    corpus.write_bytes(body)
    train, valid = held_out_split(corpus, tmp_path / "out.onlstm")
    expected = lines
    assert valid.read_text().splitlines() == expected[19::20]
    assert train.read_text().splitlines() == [line for k, line in enumerate(expected) if k % 20 != 19]
    assert "\r" not in train.read_text()


def test_rerunning_a_finished_recipe_trains_nothing(finished, corpus):
    before = {p.name: p.stat().st_mtime_ns for p in finished.parent.glob("*.onlstm")}
    result = onlstm(recipe_args(corpus, finished))
    assert result.returncode == 0, result.stderr
    assert "already complete" in result.stderr
    assert {p.name: p.stat().st_mtime_ns for p in finished.parent.glob("*.onlstm")} == before


def test_a_recipe_with_other_options_is_refused_in_one_line(finished, corpus):
    result = in_process(recipe_args(corpus, finished, "--dropout", "0.2"))
    assert result.exit_code == 2
    assert len(result.stderr.strip().splitlines()) == 1
    assert "records a recipe with model" in result.stderr and "another --out" in result.stderr


def stopped_by_sigterm(args: list[str], when: str, timeout: int = 300) -> tuple[int, str, str]:
    """`onlstm ARGS` sent SIGTERM once a line of its stderr holds `when`: its exit code, what it said until
    then, and what it said after."""
    process = subprocess.Popen([sys.executable, "-m", "onlstm_cli", *args], stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen = []
    for line in process.stderr:
        seen.append(line)
        if when in line:
            process.send_signal(signal.SIGTERM)
            break
    rest = process.communicate(timeout=timeout)[1]
    return process.returncode, "".join(seen), rest


def test_an_interrupted_recipe_resumes_without_redoing_a_finished_model(corpus, tmp_path):
    out = tmp_path / "r.onlstm"
    # stopped once the second language model has started
    returncode, seen, rest = stopped_by_sigterm(recipe_args(corpus, out), "language model 2 of 2")
    assert returncode == 143, seen + rest
    assert "interrupted" in rest and "rerun the same command" in rest
    first = tmp_path / "r.lm-seed1111.onlstm"
    record = json.loads((tmp_path / "r.onlstm.recipe.json").read_text())
    assert [t["seed"] for t in record["teachers"]] == [1111] and record["span_parser"] is None
    first_written = first.stat().st_mtime_ns
    result = onlstm(recipe_args(corpus, out, "--resume", str(out)))
    assert result.returncode == 0, result.stderr
    assert "language model 1 of 2" not in result.stderr  # the finished model is not trained again
    assert first.stat().st_mtime_ns == first_written
    assert out.is_file() and (tmp_path / "r.lm-seed1112.onlstm").is_file()


def test_the_recipe_says_what_trains_and_the_time_left_while_models_train_side_by_side(corpus, tmp_path,
                                                                                         monkeypatch):
    """The processes' lines say only their own model: the recipe's own line says the stage, the seeds
    training and the most the stage and the whole recipe can still take (here: a budget of 60 s). Each record
    saved as a model ends holds the stage's time so far, so a kill -9 later loses none of it."""
    from onlstm_cli.config import RecipeConfig, TrainConfig
    from onlstm_cli.training.recipe.runner import RecipeState, run_recipe
    from onlstm_cli.text.tokenizers import Tokenizer
    said, saved = [], []
    save = RecipeState.save
    monkeypatch.setattr(RecipeState, "save", lambda state, out: (
        saved.append((len(state.teachers), dict(state.stage_seconds))), save(state, out)))
    result = run_recipe(corpus, tmp_path / "p.onlstm", None,
                        dict(emb_size=20, hidden_size=20, n_layers=3, chunk_size=5),
                        TrainConfig(epochs=2, time_budget=60.0, batch_size=4, bptt=10, optimizer="adam", lr=0.01,
                                    threads=2),
                        dict(tokenizer=Tokenizer("ptb")),
                        # stage 1's lines are what this test reads: its span parser need not fill the minute
                        RecipeConfig(seeds=2, side_by_side=2, progress_every=0.0, span_parser_until_budget=False,
                                     families=("onlstm",)),
                        log=said.append)
    assert not result.interrupted and result.out.is_file()
    pattern = (r"recipe: stage 1 of 2, 0 of 2 language models done, training seeds 1111, 1112; [\d.]+ min in "
               r"this stage; it ends in at most ([\d.]+) min, the recipe in at most ([\d.]+) min")
    lines = [m for m in (re.fullmatch(pattern, line) for line in said) if m]
    assert lines, said
    stage, whole = (float(v) for v in lines[0].groups())
    assert stage <= 0.75 and whole <= 1.0 and abs(whole - stage - 0.25) <= 0.1  # 75 % then 25 % of 60 s
    assert [float(m.group(2)) for m in lines] == sorted((float(m.group(2)) for m in lines), reverse=True)
    after_a_model = [seconds for teachers, seconds in saved if teachers]
    assert after_a_model and all(seconds.get("language_models", 0) > 0 for seconds in after_a_model), saved


def test_a_larger_time_budget_extends_a_recipe_and_a_smaller_one_is_refused(corpus, tmp_path):
    """Teachers cut short by the budget go on from their checkpoints; the span parser trains again."""
    out = tmp_path / "b.onlstm"
    assert TINY[-2:] == ["--time-budget", "none"]

    def budget(seconds: str):
        return in_process(["train", str(corpus), "-o", str(out), "--seeds", "2", "--epochs", "1000", *TINY[:-2],
                           *ONLSTMS, "--side-by-side", "1", "--keep-intermediate", "--time-budget", seconds])

    first = budget("10s")  # --keep-intermediate: the checkpoints a larger budget goes on from
    assert first.exit_code == 0, first.stderr
    record_path = tmp_path / "b.onlstm.recipe.json"
    first_record = json.loads(record_path.read_text())
    # the span parser trains until the recipe's time is spent (issue 53): no epoch cap gives any of it back
    assert sum(first_record["stage_seconds"].values()) >= 9.0, first_record["stage_seconds"]
    assert first_record["options"]["recipe"]["span_parser_until_budget"] is True
    before = {t["seed"]: t["epochs"] for t in first_record["teachers"]}
    assert sorted(before) == [1111, 1112] and all(epochs < 1000 for epochs in before.values())
    written = out.stat().st_mtime_ns
    (tmp_path / "b.notes.txt").write_text("the user's own file beside --out\n")
    lower = budget("5s")
    assert lower.exit_code == 2 and "can be raised, not lowered" in lower.stderr
    line, = lower.stderr.strip().splitlines()
    named = line.split("delete its files to start it anew: ")[1].split(" ")  # issue 53: which files, by name
    assert sorted(named) == sorted(str(p) for p in tmp_path.glob("b.*") if p.name != "b.notes.txt")
    assert f"{out}.recipe.json" in named and any(".lm-seed1111.onlstm.ckpt" in name for name in named)
    second = budget("20s")
    assert second.exit_code == 0, second.stderr
    assert "--time-budget raised from" in second.stderr
    assert "seeds 1111, 1112 go on from their checkpoints" in second.stderr
    assert second.stderr.count("resumed from its checkpoint") == 2
    # the ETA counts what the first run spent: at most 15 s of models minus their first 7.5 s, then 5 s
    first_eta = re.search(r"the recipe's at most ([\d.]+) min more", second.stderr)
    assert first_eta and float(first_eta.group(1)) < 0.25, second.stderr
    record = json.loads(record_path.read_text())
    assert record["options"]["train"]["time_budget"] == 20.0 and record["span_parser"] is not None
    assert all(t["epochs"] > before[t["seed"]] for t in record["teachers"])
    assert out.stat().st_mtime_ns != written  # the span parser of the new votes
    assert student_meta(out)["recipe"]["time_budget"] == 20.0


@pytest.mark.parametrize("damage", ["not json", "too large"])
def test_a_damaged_or_oversized_recipe_record_is_refused_in_one_line(tmp_path, corpus, damage):
    from onlstm_cli.training.recipe.runner import MAX_RECORD_BYTES
    out = tmp_path / "d.onlstm"
    record = tmp_path / "d.onlstm.recipe.json"
    if damage == "not json":
        record.write_text('{"options": ')
    else:
        with record.open("wb") as f:  # sparse: no disk spent, but a whole read would take its size in memory
            f.truncate(MAX_RECORD_BYTES + 1)
    result = in_process(["train", str(corpus), "-o", str(out), "--seeds", "2", *TINY])
    assert result.exit_code == 2
    assert len(result.stderr.strip().splitlines()) == 1
    assert "is not a recipe record" in result.stderr and "remove it to start the recipe anew" in result.stderr
    if damage == "too large":
        assert "more than a record's" in result.stderr
    assert not list(tmp_path.glob("d.lm-seed*"))  # nothing trained on a record it could not read


def children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def side_by_side_args(corpus: Path, out: Path, epochs: int = 30) -> list[str]:
    return ["train", str(corpus), "-o", str(out), "--seeds", "2", "--epochs", str(epochs), *TINY, *ONLSTMS,
            "--side-by-side", "2"]


def start_side_by_side(corpus: Path, out: Path) -> tuple[subprocess.Popen, list[str]]:
    """A side-by-side recipe, returned once both language models have finished an epoch."""
    args = side_by_side_args(corpus, out)
    process = subprocess.Popen([sys.executable, "-m", "onlstm_cli", *args], stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen, training = [], set()
    for line in process.stderr:
        seen.append(line)
        if "] end of epoch " in line:
            training.add(line.split("]")[0])
        if len(training) == 2:
            return process, seen
    raise AssertionError("".join(seen))


def test_a_signal_to_a_side_by_side_recipe_stops_every_model_at_a_checkpoint_and_a_rerun_resumes_them(
        corpus, tmp_path):
    out = tmp_path / "s.onlstm"
    process, seen = start_side_by_side(corpus, out)
    process.send_signal(signal.SIGTERM)
    rest = process.communicate(timeout=120)[1]
    assert process.returncode == 143, "".join(seen) + rest
    assert "rerun the same command" in rest
    record = json.loads((tmp_path / "s.onlstm.recipe.json").read_text())
    assert record["teachers"] == [] and record["span_parser"] is None
    for seed in (1111, 1112):
        assert (tmp_path / f"s.lm-seed{seed}.onlstm.ckpt").is_file()
    result = in_process(side_by_side_args(corpus, out, epochs=2))
    assert result.exit_code == 2 and "records a recipe with train.epochs = 30" in result.stderr  # same command only
    process, seen = start_side_by_side(corpus, out)  # the same command: both go on from their checkpoints
    process.send_signal(signal.SIGINT)
    process.communicate(timeout=120)
    assert process.returncode == 130
    for seed in (1111, 1112):
        assert any(f"(seed {seed})" in line and "resumed from its checkpoint" in line for line in seen), seen


def test_the_models_of_a_killed_recipe_stop_themselves_at_a_checkpoint(corpus, tmp_path):
    if not Path("/proc/self/stat").exists():
        pytest.skip("needs /proc to find the recipe's processes")
    out = tmp_path / "k.onlstm"
    process, seen = start_side_by_side(corpus, out)
    workers = children(process.pid)
    assert len(workers) >= 2, workers  # the two seeds (and spawn's resource tracker)
    process.kill()
    process.wait()
    for _ in range(120):
        if not any(Path(f"/proc/{pid}").exists() and "zombie" not in _state(pid) for pid in workers):
            break
        time.sleep(0.5)
    else:
        raise AssertionError("the language models went on training after the recipe was killed")
    for seed in (1111, 1112):
        assert (tmp_path / f"k.lm-seed{seed}.onlstm.ckpt").is_file()


def _state(pid: int) -> str:
    try:
        return {"Z": "zombie"}.get(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0], "running")
    except OSError:
        return "zombie"


@pytest.mark.parametrize("extra, message", [
    (["--seeds", "0"], "--seeds must be at least 1"),
    (["--side-by-side", "0"], "--side-by-side must be at least 1"),
    (["--teacher", "en"], "either --seeds or --teacher"),
    (["--right-branching", "-1"], "--right-branching must be a finite weight of at least 0 or auto"),
    (["--right-branching", "lots"], "--right-branching takes a weight (0 or more) or auto, not 'lots'"),
    (["--max-ppl-ratio", "0.9"], "--max-ppl-ratio must be 0 (every model votes) or at least 1, not 0.9"),
    (["--max-ppl-ratio", "nan"], "--max-ppl-ratio must be 0 (every model votes) or at least 1"),
])
def test_bad_recipe_options_are_one_line_errors(corpus, tmp_path, extra, message):
    result = in_process(recipe_args(corpus, tmp_path / "m.onlstm") + extra)
    assert result.exit_code == 2 and message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("extra, message", [
    (["--lr", "0"], "--lr must be positive"),
    (["--dropout", "1"], "--dropout must be in [0, 1)"),
    (["--max-vocab", "2"], "--max-vocab must be at least 3"),
])
def test_a_language_model_option_no_family_can_train_with_is_refused_before_the_recipe_writes(corpus, tmp_path,
                                                                                              extra, message):
    """Each family checks the recipe's options before anything is written (the record, the split, a model)."""
    result = in_process(recipe_args(corpus, tmp_path / "m.onlstm") + extra)
    assert result.exit_code == 2 and message in result.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("lines, said", [(8, "has 8 lines"), (1, "has 1 line")])
def test_a_corpus_too_small_for_a_recipe_is_refused(tmp_path, lines, said):
    small = write_corpus(tmp_path / "small.txt", lines)
    result = in_process(recipe_args(small, tmp_path / "m.onlstm"))
    assert result.exit_code == 2 and f"{said}: --seeds needs at least 20" in result.stderr


def test_an_unwritable_out_is_refused_before_training(corpus, tmp_path):
    result = in_process(recipe_args(corpus, tmp_path / "no-such-folder" / "m.onlstm"))
    assert result.exit_code == 2 and "its folder does not exist" in result.stderr


def test_resume_of_a_recipe_that_never_ran_is_refused(corpus, tmp_path):
    result = in_process(recipe_args(corpus, tmp_path / "m.onlstm", "--resume", str(tmp_path / "m.onlstm")))
    assert result.exit_code == 2 and "no recipe to resume" in result.stderr


def test_max_ppl_ratio_without_seeds_is_refused(corpus, tmp_path):
    result = in_process(["train", str(corpus), "-o", str(tmp_path / "m.onlstm"), "--max-ppl-ratio", "1.5"])
    assert result.exit_code == 2 and "give --seeds K" in result.stderr
    assert not (tmp_path / "m.onlstm").exists()


def teacher_records(*ppls):
    return [{"seed": 1111 + k, "path": f"m.lm-seed{1111 + k}.onlstm", "valid_ppl": ppl} for k, ppl in enumerate(ppls)]


@pytest.mark.parametrize("ppls, ratio, left_out", [
    ((386.48, 554.90, 446.97, 421.54), 1.2, [1112]),  # a Chinese run's failed seed, 1.28 × the median
    ((386.48, 554.90, 446.97, 421.54), 1.3, []),
    ((386.48, 554.90, 446.97, 421.54), 0, []),        # 0: every model votes
    ((170.51, 175.36, 182.44, 177.26), 1.2, []),      # healthy seeds: within 1.04 of the median
    ((100.0, 160.0), 1.2, [1112]),                    # two seeds: the median is their mean, one always votes
    ((100.0, None, 500.0), 1.2, [1113]),              # a model without a perplexity is never the one left out
])
def test_a_language_model_far_above_the_median_perplexity_does_not_vote(ppls, ratio, left_out):
    import statistics

    from onlstm_cli.training.recipe.runner import voting_teachers
    teachers = teacher_records(*ppls)
    voting, out, median = voting_teachers(list(reversed(teachers)), ratio)
    assert [t["seed"] for t in out] == left_out
    assert [t["seed"] for t in voting] == [t["seed"] for t in teachers if t["seed"] not in left_out]  # by seed
    assert median == pytest.approx(statistics.median(p for p in ppls if p is not None))


def rerun_span_parser_stage(finished: Path, corpus: Path, copy: Path, edit, *extra: str):
    """The finished tiny recipe copied, its record edited, its span parser stage run again (from the start)."""
    import shutil
    shutil.copytree(finished.parent, copy)
    record_path = copy / "tiny.onlstm.recipe.json"
    record = json.loads(record_path.read_text().replace(str(finished.parent), str(copy)))
    edit(record)
    record["span_parser"] = None
    record_path.write_text(json.dumps(record))
    (copy / "tiny.onlstm.ckpt").unlink(missing_ok=True)
    return onlstm(recipe_args(corpus, copy / "tiny.onlstm", *extra))


def test_a_failed_language_model_is_left_out_of_the_vote_and_the_span_parser_reads_ngrams_where_asked(
        finished, corpus, tmp_path):
    """One rerun of the span parser stage checks two things that do not touch each other: seed 1112's run marked
    failed (its perplexity 40 × the other's) is kept on disk but does not vote, and --student-units ngrams gives
    the span parser its character n-grams."""
    def fail_seed_1112(record):
        record["teachers"][1]["valid_ppl"] = 40 * record["teachers"][0]["valid_ppl"]
        record["options"]["span_parser"]["units"] = "ngrams"
    result = rerun_span_parser_stage(finished, corpus, tmp_path / "failed", fail_seed_1112, "--student-units", "ngrams")
    assert result.returncode == 0, result.stderr
    assert "the language model of seed 1112 does not vote: its validation perplexity" in result.stderr
    assert "on the votes of 1 language models" in result.stderr
    assert (tmp_path / "failed" / "tiny.lm-seed1112.onlstm").exists()
    meta = student_meta(tmp_path / "failed" / "tiny.onlstm")
    assert [Path(t).name for t in meta["teacher"]] == ["tiny.lm-seed1111.onlstm"]
    assert [t["votes"] for t in meta["recipe"]["teachers"]] == [True, False]
    assert meta["recipe"]["votes"].startswith("a span's target is its share of the votes: the trees of each of the 1 "
                                              "language models' parse layer")
    assert meta["recipe"]["votes"].endswith("; of the 2 models, one whose validation perplexity is more than 1.2 × "
                                            "their median does not vote")
    from onlstm_cli.info import info_text, model_info
    assert "seed 1112 (valid ppl" in info_text(model_info(tmp_path / "failed" / "tiny.onlstm"))
    assert "no vote: a failed run" in info_text(model_info(tmp_path / "failed" / "tiny.onlstm"))
    assert "the span parser also reads every word by its character n-grams" in result.stderr
    from onlstm_cli.modelfile import load_model
    assert load_model(tmp_path / "failed" / "tiny.onlstm").span_parser.unit_embed is not None


def test_a_recipe_recorded_before_three_options_goes_on_as_it_began(finished, corpus, tmp_path):
    """A record from before failed runs were left out, before the student's units and before teachers voted with
    two layers (one rerun of the span parser stage checks all three, each independent of the others): every
    model votes, the student keeps its host's words although --student-units asks for n-grams, and each
    teacher votes with its parse layer alone."""
    def old_record(record):
        del record["options"]["recipe"]["max_ppl_ratio"]
        record["teachers"][1]["valid_ppl"] = 40 * record["teachers"][0]["valid_ppl"]  # a failed seed, today
        del record["options"]["span_parser"]["units"]
        del record["options"]["recipe"]["extra_layers"], record["options"]["span_parser"]["extra_layers"]
    copy = tmp_path / "old"
    result = rerun_span_parser_stage(finished, corpus, copy, old_record, "--student-units", "ngrams")
    assert result.returncode == 0, result.stderr
    assert "does not vote" not in result.stderr and "on the votes of 2 language models" in result.stderr
    assert "character n-grams" not in result.stderr  # the recipe goes on as it began
    assert "votes with the trees of its layers" not in result.stderr
    meta = student_meta(copy / "tiny.onlstm")
    assert meta["train"]["units"] == "host"
    assert "language models' parse layer weigh 1 each" in meta["recipe"]["votes"]
    assert meta["train"]["extra_layers"] == 0


def test_info_shows_the_recipe_of_a_file_it_made(finished):
    from onlstm_cli.info import info_text, model_info
    text = info_text(model_info(finished))
    assert "recipe (train --seeds 2): seed 1111 (valid ppl" in text and "seed 1112" in text
    assert "stage times: language models" in text
    assert "each one's agreement with the others, validation text" in text


def test_a_record_from_before_an_option_existed_still_resumes(finished, corpus):
    """A newer onlstm adds options whose defaults keep the old behaviour: an older record lacks them."""
    record_path = finished.parent / "tiny.onlstm.recipe.json"
    record = json.loads(record_path.read_text())
    del record["options"]["span_parser"]["right_branching"]
    record_path.write_text(json.dumps(record))
    result = onlstm(recipe_args(corpus, finished))
    assert result.returncode == 0 and "already complete" in result.stderr, result.stderr


def test_a_record_written_before_model_families_is_the_same_recipe(finished, corpus, tmp_path):
    """Issue 51: a record of version 1 (every teacher an ON-LSTM, none naming its family) is migrated in one place
    (record.migrated): its teachers are the ON-LSTM family's, its options today's, and the recipe is complete."""
    import shutil

    from onlstm_cli.training.recipe.record import migrated
    copy = tmp_path / "v1"
    shutil.copytree(finished.parent, copy)
    record_path = copy / "tiny.onlstm.recipe.json"
    record = json.loads(record_path.read_text().replace(str(finished.parent), str(copy)))
    record["version"] = 1
    del record["options"]["recipe"]["families"]
    for teacher in record["teachers"]:
        del teacher["family"]
    record_path.write_text(json.dumps(record))
    assert [t["family"] for t in migrated(json.loads(record_path.read_text()))["teachers"]] == ["onlstm", "onlstm"]
    result = onlstm(recipe_args(corpus, copy / "tiny.onlstm"))
    assert result.returncode == 0 and "already complete" in result.stderr, result.stderr
    assert json.loads(record_path.read_text())["version"] == 2  # written again as this onlstm writes it
    with pytest.raises(ValueError, match="newer than this onlstm's"):
        migrated({**record, "version": 3})


def test_a_record_of_the_options_old_name_for_the_extra_layers_still_resumes(finished, corpus, tmp_path):
    """Records written while the option was `layers_above` (same meaning for a model that parses below its top
    layer) are the same recipe as today's."""
    import shutil
    copy = tmp_path / "old-name"
    shutil.copytree(finished.parent, copy)
    record_path = copy / "tiny.onlstm.recipe.json"
    record = json.loads(record_path.read_text().replace(str(finished.parent), str(copy)))
    for section in ("recipe", "span_parser"):
        record["options"][section]["layers_above"] = record["options"][section].pop("extra_layers")
    record_path.write_text(json.dumps(record))
    result = onlstm(recipe_args(corpus, copy / "tiny.onlstm"))
    assert result.returncode == 0 and "already complete" in result.stderr, result.stderr


def test_each_language_model_votes_with_its_parse_layer_and_the_one_above(finished_run):
    out, log = finished_run
    assert "each teacher votes with the trees of its layers tiny.lm-seed1111.onlstm 2+3, tiny.lm-seed1112" in log
    assert student_meta(out)["train"]["extra_layers"] == 1


def test_a_seeds_line_goes_out_whole_even_when_written_in_pieces():
    """print() writes a line and its newline in two calls: another process's line between them must not be glued
    to it, so each line reaches the shared stderr in one write, with its seed in front."""
    from onlstm_cli.training.recipe.side_by_side import _SeedStream

    class Recorder:
        def __init__(self):
            self.writes = []

        def write(self, text):
            self.writes.append(text)

        def flush(self):
            pass

    shared = Recorder()
    first, second = _SeedStream(shared, "[seed 1111] "), _SeedStream(shared, "[seed 1112] ")
    print("corpus: 1,668 tokens", file=first)
    assert shared.writes == ["[seed 1111] corpus: 1,668 tokens\n"]
    first.write("end of epoch 1")
    print("corpus: 1,668 tokens", file=second)  # between the two halves of the first seed's line
    first.write(" | saved\nend of ")
    assert shared.writes[1:] == ["[seed 1112] corpus: 1,668 tokens\n", "[seed 1111] end of epoch 1 | saved\n"]
    first.flush()  # the process ends: what is left goes out, marked
    assert shared.writes[-1] == "[seed 1111] end of "


def test_side_by_side_shares_the_threads_and_the_budget_in_rounds(monkeypatch):
    from onlstm_cli.training.recipe import side_by_side
    monkeypatch.setattr(side_by_side, "usable_cores", lambda: 8)
    assert side_by_side.slots(3, None, "cpu", None) == 3      # all at once, at most K
    assert side_by_side.slots(3, 2, "cpu", None) == 2         # --threads below the cores: one a thread
    assert side_by_side.slots(20, None, "cpu", None) == 10    # at most two a core, in even rounds
    assert side_by_side.slots(3, None, "cpu", 5) == 3         # asked for more than K
    assert side_by_side.slots(3, None, "cuda", None) == 1     # one process keeps a GPU busy
    assert side_by_side.threads_each(3, None) == 2 and side_by_side.threads_each(2, 1) == 1
    assert [side_by_side.waves(k, 2) for k in (1, 2, 3, 4)] == [1, 1, 2, 2]
    monkeypatch.setattr(side_by_side, "usable_cores", lambda: 2)
    assert side_by_side.slots(3, None, "cpu", None) == 3      # no round with a core idle
    assert side_by_side.slots(3, 2, "cpu", None) == 3         # --threads as many as the cores: the same
    assert side_by_side.slots(5, None, "cpu", None) == 3      # even rounds: 3 then 2
    assert side_by_side.slots(3, 1, "cpu", None) == 1         # --threads 1: one after another


def test_the_recipe_clock_counts_every_run_and_gives_the_span_parser_what_is_left():
    """Issue 41 item 10: the budget is the whole recipe's over its resumed runs. What the record says earlier runs
    spent is taken from the stage left, and the span parser gets the rest, what the language models' stage
    took beyond its share taken from it (tolerances: the few milliseconds this test itself takes)."""
    from onlstm_cli.training.recipe.record import RecipeState
    from onlstm_cli.training.recipe.budget import StagePlan
    from onlstm_cli.training.run.clock import Budget
    state = RecipeState({}, stage_seconds={"language_models": 40.0})
    clock = StagePlan(Budget(60.0), 0.75, teachers=2, slots=1)
    assert clock.lm_budget() == pytest.approx(22.5)  # 45 s of models, one at a time
    assert clock.stage_one_left(state) == pytest.approx(5.0, abs=0.5)
    now = time.time()
    first, second = clock.lm_deadlines(state, 2)  # the 5 s left, in two rounds
    assert first - now == pytest.approx(2.5, abs=0.5) and second - now == pytest.approx(5.0, abs=0.5)
    state.stage_seconds["language_models"] = 50.0  # 5 s beyond the stage's share: the span parser has 10 s
    assert clock.span_parser_budget(state, its_seconds=3.0) == pytest.approx(13.0, abs=0.5)  # over its runs
    clock.count(state, "span_parser")
    assert set(state.stage_seconds) == {"language_models", "span_parser"}
    assert clock.seconds_left(state) == pytest.approx(10.0, abs=0.5)
    state.stage_seconds["span_parser"] = 30.0  # spent: nothing left, never less than nothing
    assert clock.span_parser_budget(state, its_seconds=0.0) == 0.0 and clock.stage_one_left(state) == 0.0


def test_the_recipe_counts_the_start_up_of_its_command(corpus, tmp_path, monkeypatch):
    """`onlstm train --seeds K` gives the recipe the moment the command began, so that its start-up (torch's
    import) is inside --time-budget; a Python caller's recipe counts from its call."""
    import onlstm_cli.training.recipe.runner as recipe_module
    from onlstm_cli.cli.commands import main
    seen = {}
    monkeypatch.setattr(recipe_module, "run_recipe", lambda *args, **kwargs: seen.update(kwargs) or sys.exit(0))
    monkeypatch.setattr(sys, "argv", ["onlstm", "train", str(corpus), "--seeds", "2",
                                      "--out", str(tmp_path / "r.onlstm")])
    before = time.time()
    with pytest.raises(SystemExit):
        main()
    assert before <= seen["budget"].started < time.time()  # the one budget, from the command's start


def test_a_recipe_stopped_after_its_span_parser_and_before_its_checks_does_the_checks_on_a_rerun(
        finished, corpus, tmp_path):
    import shutil
    copy = tmp_path / "unchecked"
    shutil.copytree(finished.parent, copy)
    record_path = copy / "tiny.onlstm.recipe.json"
    record = json.loads(record_path.read_text().replace(str(finished.parent), str(copy)))
    for check in ("student_check", "branching_agreement"):  # as a kill between the record and the checks left it
        record["span_parser"].pop(check, None)
    record_path.write_text(json.dumps(record))
    result = onlstm(recipe_args(corpus, copy / "tiny.onlstm"))
    assert result.returncode == 0, result.stderr
    assert "already complete" not in result.stderr and "was not checked" in result.stderr
    assert "agrees" in result.stderr and "with right-branching trees" in result.stderr
    rerun = json.loads(record_path.read_text())
    checked = rerun["span_parser"]
    assert checked["student_check"]["student"] >= 0 and set(checked["branching_agreement"]) >= {"right", "left"}
    # the student is compared with every teacher: the best is one of the recipe's own language models
    assert checked["student_check"]["best_teacher"] in {t["path"] for t in rerun["teachers"]}
    again = onlstm(recipe_args(corpus, copy / "tiny.onlstm"))
    assert again.returncode == 0 and "already complete" in again.stderr and "was not checked" not in again.stderr
