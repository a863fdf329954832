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


def other_sizes_copy(tiny_model_path, tmp_path, hidden_size=60):
    """A language model that reads the tiny model's words, but with other layer sizes."""
    from onlstm_cli.lm.model import ModelConfig, ONLSTMLanguageModel
    from onlstm_cli.modelfile import save_model
    tiny = load_model(tiny_model_path)
    model = ONLSTMLanguageModel(ModelConfig(**dict(tiny.config.to_dict(), hidden_size=hidden_size)))
    path = tmp_path / f"tiny_h{hidden_size}.onlstm"
    save_model(path, model, tiny.vocab, tiny.tokenizer, tiny.lang, tiny.parse_layer, {})
    return path


def test_a_failed_ensemble_leaves_an_existing_out_as_it_was(runner, tiny_model_path, tmp_path):
    """Issue 50 item 4: members of other layer sizes were found only in the written file, which replaced OUT."""
    previous = tmp_path / "prev.onlstm"
    previous.write_bytes(tiny_model_path.read_bytes())
    before = previous.read_bytes()
    wider = other_sizes_copy(tiny_model_path, tmp_path)
    got = runner.invoke(app, ["ensemble", str(tiny_model_path), str(wider), "-o", str(previous)])
    assert got.exit_code == 2 and "other layer sizes" in got.output and "Traceback" not in got.output, got.output
    assert previous.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["prev.onlstm", wider.name]  # no temporary file left


def test_huge_weights_give_the_trees_of_equal_weights(runner, tiny_model_path, tmp_path):
    """Issue 50 item 15: weights 1e308,1e308 summed to inf; every distance was null, every tree right-branching."""
    import torch

    from onlstm_cli.induction.distances import parse_lines
    backwards = right_to_left_copy(tiny_model_path, tmp_path)
    lines = ["the cat sat on the mat", "a dog saw a bird near the house"]
    parsed = {}
    for weights in ("1,1", "1e308,1e308"):
        target = tmp_path / f"ens_{weights}.onlstm"
        got = runner.invoke(app, ["ensemble", str(tiny_model_path), str(backwards), "-o", str(target),
                                  "--weights", weights])
        assert got.exit_code == 0, got.output
        parsed[weights] = parse_lines(lines, model=str(target))
    in_file = tmp_path / "in_file.onlstm"  # the same weights written into a file by hand
    archive = torch.load(tmp_path / "ens_1,1.onlstm", weights_only=True)
    torch.save(dict(archive, weights=[1e308, 1e308]), in_file)
    parsed["in file"] = parse_lines(lines, model=str(in_file))
    equal = parsed["1,1"]
    assert all(None not in p.distances for p in equal)
    for name in ("1e308,1e308", "in file"):
        assert [p.distances for p in parsed[name]] == [p.distances for p in equal], name
        assert [str(p.tree) for p in parsed[name]] == [str(p.tree) for p in equal], name
