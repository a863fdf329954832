"""`onlstm ensemble`: language models as one file whose distances are combined (it replaced scripts/ship_model.py)."""
from __future__ import annotations

from conftest import right_to_left_copy
from onlstm_cli.cli.commands import app
from onlstm_cli.modelfile import load_model


def test_ensemble_builds_a_file_of_both_directions(runner, tiny_model_path, tmp_path):
    backwards = right_to_left_copy(tiny_model_path, tmp_path)
    target = tmp_path / "ens.onlstm"
    got = runner.invoke(app, ["ensemble", str(tiny_model_path), str(backwards), "-o", str(target),
                              "--combine", "rank", "--parse-layer", "3", "--weights", "1,0.5"])
    assert got.exit_code == 0, got.output
    assert "2 models combined by rank, parse layer 3" in got.output
    loaded = load_model(target)
    assert loaded.combine == "rank" and loaded.parse_layer == 3 and loaded.weights == [1.0, 0.5]
    assert [m.config.reverse for m in (loaded, *loaded.members)] == [False, True]
    parsed = runner.invoke(app, ["parse", "-m", str(target), "-f", "json"], input="the cat sat on the mat\n")
    assert parsed.exit_code == 0 and parsed.output.startswith("{")


def test_ensemble_refuses_bad_options_in_one_line(runner, tiny_model_path, tmp_path):
    backwards = right_to_left_copy(tiny_model_path, tmp_path)
    target = tmp_path / "ens.onlstm"
    for extra, message in ((["--weights", "1"], "one finite, non-negative weight per model"),
                           (["--weights", "1,nan"], "one finite, non-negative weight per model"),
                           (["--weights", "a,b"], "expected numbers"),
                           (["--parse-layer", "9"], "has layers 1 to 3")):
        got = runner.invoke(app, ["ensemble", str(tiny_model_path), str(backwards), "-o", str(target), *extra])
        assert got.exit_code == 2 and message in got.output and "Traceback" not in got.output, got.output
    alone = runner.invoke(app, ["ensemble", str(tiny_model_path), "-o", str(target)])
    assert alone.exit_code == 2 and "at least two models" in alone.output
    assert not target.exists()
