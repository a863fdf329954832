"""The model file: round trip, every kind of bad file → one-line ModelFileError, atomic writes."""
from __future__ import annotations

import os
import pickle
from pathlib import Path

import pytest
import torch

from onlstm_cli.lm.model import ModelConfig, ONLSTMLanguageModel
from onlstm_cli.modelfile import (CHECKPOINT_FORMAT, FORMAT_VERSION, MODEL_FORMAT, atomic_save, load_model,
                                  model_archive, model_from_archive, read_archive, save_model)
from onlstm_cli.ensemble import with_members
from onlstm_cli.errors import ModelFileError
from onlstm_cli.text.tokenizers import Tokenizer
from onlstm_cli.text.vocab import Vocabulary

WORDS = ["the", "cat", "sat", "on", "mat", "dog"]


def make_model(**overrides):
    torch.manual_seed(3)
    config = dict(vocab_size=len(WORDS) + 2, emb_size=20, hidden_size=40, n_layers=3, chunk_size=5,
                  master_input="symmetric")
    config.update(overrides)
    return ONLSTMLanguageModel(ModelConfig(**config))


@pytest.fixture
def saved(tmp_path):
    model = make_model()
    # Perturb the weights so a load that silently re-initialised would be noticed.
    with torch.no_grad():
        model.decoder_bias.normal_()
    path = tmp_path / "m.onlstm"
    tokenizer = Tokenizer("whitespace", lowercase=False, numbers_to_n=True, nfkc=False)
    meta = {"epochs": 3.5, "valid_ppl": 123.4, "data": {"corpus": "x.txt"}}
    save_model(path, model, Vocabulary(WORDS), tokenizer, "xx", 3, meta)
    return path, model, tokenizer, meta


def assert_one_line_error(excinfo):
    message = str(excinfo.value)
    assert message
    assert "\n" not in message
    assert "Traceback" not in message
    return message


# --- round trip -----------------------------------------------------------------------------------

def test_round_trip(saved):
    path, model, tokenizer, meta = saved
    loaded = load_model(path)
    assert loaded.vocab.itos == ["<unk>", "<eos>"] + WORDS
    assert loaded.tokenizer == tokenizer
    assert loaded.lang == "xx"
    assert loaded.parse_layer == 3
    assert loaded.meta == meta
    assert loaded.config == model.config
    assert loaded.path == str(path)
    assert not loaded.model.training  # loaded models are ready to parse
    # Weights may be stored at reduced precision (float16); they come back as float32 and equal to the
    # stored values, which are the original weights up to that rounding.
    stored = torch.load(path, weights_only=True)["state_dict"]
    assert set(stored) == set(model.state_dict())
    for name, tensor in model.state_dict().items():
        got = loaded.model.state_dict()[name]
        assert got.dtype == tensor.dtype, name
        assert torch.equal(got, stored[name].to(tensor.dtype)), name
        assert stored[name].is_contiguous(), name  # stored row by row, whatever the layout in memory
        assert torch.allclose(got, tensor, rtol=1e-3, atol=1e-4), name
    # So the loaded model computes exactly what the original computes with the stored weights.
    rounded = make_model()
    rounded.load_state_dict({k: v.to(stored[k].dtype).to(v.dtype) for k, v in model.state_dict().items()})
    rounded.eval()
    model.eval()
    x = torch.randint(0, len(WORDS) + 2, (5, 2), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        a, b, orig = rounded(x), loaded.model(x), model(x)
    assert torch.equal(a.logits, b.logits)
    for d1, d2 in zip(a.distances, b.distances):
        assert torch.equal(d1, d2)
    assert torch.allclose(b.logits, orig.logits, atol=1e-2)
    for d1, d2 in zip(orig.distances, b.distances):
        assert torch.allclose(d1, d2, atol=1e-2)


def test_save_then_load_then_save_is_stable(saved, tmp_path):
    """A loaded model saved again holds exactly the same weights (no drift from repeated rounding)."""
    path = saved[0]
    loaded = load_model(path)
    again = tmp_path / "again.onlstm"
    save_model(again, loaded.model, loaded.vocab, loaded.tokenizer, loaded.lang, loaded.parse_layer, loaded.meta)
    a = torch.load(path, weights_only=True)["state_dict"]
    b = torch.load(again, weights_only=True)["state_dict"]
    for name in a:
        assert a[name].dtype == b[name].dtype and torch.equal(a[name], b[name]), name


def test_archive_is_plain_data(saved):
    path = saved[0]
    archive = torch.load(path, weights_only=True)
    assert archive["format"] == MODEL_FORMAT and archive["version"] == FORMAT_VERSION
    assert isinstance(archive["config"], dict) and isinstance(archive["vocab"], list)


def test_checkpoint_is_readable_as_model_but_model_is_not_a_checkpoint(saved, tmp_path):
    path = saved[0]
    archive = torch.load(path, weights_only=True)
    archive["format"] = CHECKPOINT_FORMAT
    ckpt = tmp_path / "m.onlstm.ckpt"
    atomic_save(archive, ckpt)
    assert load_model(ckpt).vocab.itos == load_model(path).vocab.itos
    assert read_archive(ckpt, CHECKPOINT_FORMAT)["format"] == CHECKPOINT_FORMAT
    with pytest.raises(ModelFileError) as excinfo:
        read_archive(path, CHECKPOINT_FORMAT)
    assert "checkpoint" in assert_one_line_error(excinfo)


def test_saved_file_is_not_private(saved):
    """mkstemp makes 0600 files; a model file is chmod-ed to what the umask allows."""
    umask = os.umask(0)
    os.umask(umask)
    assert saved[0].stat().st_mode & 0o777 == 0o666 & ~umask


# --- bad files ------------------------------------------------------------------------------------

class Exploit:
    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def bad_files(tmp_path: Path, good: Path) -> dict[str, Path]:
    files = {}
    files["missing"] = tmp_path / "nope.onlstm"
    (tmp_path / "dir.onlstm").mkdir()
    files["directory"] = tmp_path / "dir.onlstm"
    files["empty"] = tmp_path / "empty.onlstm"
    files["empty"].write_bytes(b"")
    data = good.read_bytes()
    files["truncated"] = tmp_path / "half.onlstm"
    files["truncated"].write_bytes(data[: len(data) // 2])
    files["random"] = tmp_path / "random.onlstm"
    files["random"].write_bytes(os.urandom(4096))
    files["text"] = tmp_path / "text.onlstm"
    files["text"].write_text("hello world\n")
    files["wrong format"] = tmp_path / "format.onlstm"
    torch.save({"format": "something-else", "version": FORMAT_VERSION}, files["wrong format"])
    files["not a dict"] = tmp_path / "list.onlstm"
    torch.save([1, 2, 3], files["not a dict"])
    files["wrong version"] = tmp_path / "version.onlstm"
    archive = torch.load(good, weights_only=True)
    archive["version"] = FORMAT_VERSION + 1
    torch.save(archive, files["wrong version"])
    return files


@pytest.mark.parametrize("kind", ["missing", "directory", "empty", "truncated", "random", "text",
                                  "wrong format", "not a dict", "wrong version"])
def test_bad_files_raise_one_line_error(kind, saved, tmp_path):
    bad = tmp_path / "bad"
    bad.mkdir()
    path = bad_files(bad, saved[0])[kind]
    with pytest.raises(ModelFileError) as excinfo:
        load_model(path)
    message = assert_one_line_error(excinfo)
    assert path.name in message
    if kind == "wrong version":
        assert str(FORMAT_VERSION + 1) in message


@pytest.mark.filterwarnings("ignore:Detected pickle protocol")
@pytest.mark.parametrize("how", ["pickle", "torch.save"])
def test_malicious_pickle_is_not_executed(how, tmp_path):
    marker = tmp_path / "MARKER"
    path = tmp_path / "evil.onlstm"
    if how == "pickle":
        path.write_bytes(pickle.dumps(Exploit(marker)))
    else:
        torch.save({"format": MODEL_FORMAT, "version": FORMAT_VERSION, "config": Exploit(marker)}, path)
    with pytest.raises(ModelFileError) as excinfo:
        load_model(path)
    assert_one_line_error(excinfo)
    assert not marker.exists()


def good_archive():
    return model_archive(make_model(), Vocabulary(WORDS), Tokenizer(), "en", 2, {"a": 1})


DAMAGE = {
    "no state_dict": lambda a: a.pop("state_dict"),
    "state_dict wrong shape": lambda a: a["state_dict"].__setitem__("embedding.weight", torch.zeros(2, 2)),
    "config not a dict": lambda a: a.__setitem__("config", "abc"),
    "config unknown key": lambda a: a["config"].__setitem__("zzz", 1),
    "vocab too short": lambda a: a.__setitem__("vocab", ["<unk>", "<eos>", "the"]),
    "vocab duplicates": lambda a: a.__setitem__("vocab", ["<unk>", "<eos>"] + ["the"] * len(WORDS)),
    "tokenizer kind": lambda a: a.__setitem__("tokenizer", {"kind": "zzz"}),
    "parse layer out of range": lambda a: a.__setitem__("parse_layer", 4),
    "parse layer zero": lambda a: a.__setitem__("parse_layer", 0),
    "parse layer not a number": lambda a: a.__setitem__("parse_layer", "two"),
    "master input rule": lambda a: a["config"].__setitem__("master_input", "zzz"),
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_damaged_archive_raises_model_file_error(damage, tmp_path):
    archive = good_archive()
    DAMAGE[damage](archive)
    path = tmp_path / "damaged.onlstm"
    torch.save(archive, path)
    with pytest.raises(ModelFileError) as excinfo:
        load_model(path)
    assert "damaged.onlstm" in assert_one_line_error(excinfo)


def test_damaged_meta_raises_model_file_error():
    archive = good_archive()
    archive["meta"] = [1, 2]
    with pytest.raises(ModelFileError):
        model_from_archive(archive, "x.onlstm")


def test_zero_chunk_size_raises_model_file_error():
    archive = good_archive()
    archive["config"]["chunk_size"] = 0
    with pytest.raises(ModelFileError):
        model_from_archive(archive, "x.onlstm")


def test_good_archive_loads():
    """The damage cases above start from an archive that is fine as it is."""
    loaded = model_from_archive(good_archive(), "x.onlstm")
    assert loaded.parse_layer == 2 and loaded.meta == {"a": 1}


# --- ensembles ----------------------------------------------------------------------------------------

def member_archive(seed: int, tokenizer: Tokenizer | None = None, parse_layer: int = 2, **overrides):
    torch.manual_seed(seed)
    config = dict(vocab_size=len(WORDS) + 2, emb_size=20, hidden_size=40, n_layers=3, chunk_size=5)
    config.update(overrides)
    model = ONLSTMLanguageModel(ModelConfig(**config))
    return model_archive(model, Vocabulary(WORDS), tokenizer or Tokenizer(), "en", parse_layer, {"seed": seed}), model


def test_ensemble_round_trip(tmp_path):
    first, _ = member_archive(1)
    second, second_model = member_archive(2, parse_layer=1)
    path = tmp_path / "ens.onlstm"
    atomic_save(with_members(first, [second]), path)
    loaded = load_model(path)
    assert loaded.parse_layer == 2 and len(loaded.members) == 1
    member = loaded.members[0]
    assert member.meta == {"seed": 2}
    assert member.parse_layer == 2  # the file's parse layer and split apply to every member
    for name, tensor in second_model.state_dict().items():
        assert torch.allclose(member.model.state_dict()[name], tensor, atol=1e-3)
    assert not torch.allclose(loaded.model.embedding.weight, member.model.embedding.weight)


@pytest.mark.parametrize("mismatch,expected", [
    (dict(hidden_size=30), "layer sizes"),
    (dict(chunk_size=10), "layer sizes"),
    (dict(tokenizer=Tokenizer("whitespace")), "tokenizes"),
])
def test_ensemble_members_must_match(mismatch, expected, tmp_path):
    first, _ = member_archive(1)
    second, _ = member_archive(2, **mismatch)
    with pytest.raises(ModelFileError) as excinfo:
        model_from_archive(with_members(first, [second]), "ens.onlstm")
    assert expected in assert_one_line_error(excinfo)


def test_ensemble_member_that_is_not_a_model():
    first, _ = member_archive(1)
    archive = with_members(first, [])
    archive["members"] = ["nonsense"]
    with pytest.raises(ModelFileError) as excinfo:
        model_from_archive(archive, "ens.onlstm")
    assert "member 1" in assert_one_line_error(excinfo)


# --- atomic_save --------------------------------------------------------------------------------------

def test_atomic_save_leaves_no_temp_files(tmp_path):
    target = tmp_path / "sub" / "x.onlstm"
    atomic_save({"a": torch.ones(3)}, target)
    assert sorted(p.name for p in target.parent.iterdir()) == ["x.onlstm"]
    assert torch.equal(torch.load(target, weights_only=True)["a"], torch.ones(3))


def test_atomic_save_keeps_old_file_when_save_fails(tmp_path, monkeypatch):
    target = tmp_path / "x.onlstm"
    atomic_save({"a": torch.ones(3)}, target)
    before = target.read_bytes()

    def broken_save(obj, f, *args, **kwargs):
        f.write(b"partial garbage")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(torch, "save", broken_save)
    with pytest.raises(ModelFileError, match="could not write .*x.onlstm: no space left on device"):
        atomic_save({"a": torch.zeros(3)}, target)
    assert target.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.onlstm"]


def test_atomic_save_cleans_up_on_keyboard_interrupt(tmp_path, monkeypatch):
    target = tmp_path / "x.onlstm"

    def interrupted(obj, f, *args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(torch, "save", interrupted)
    with pytest.raises(KeyboardInterrupt):
        atomic_save({"a": 1}, target)
    assert list(tmp_path.iterdir()) == []


def test_save_model_failure_keeps_previous_model(saved, monkeypatch):
    path = saved[0]
    before = path.read_bytes()
    monkeypatch.setattr(torch, "save", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("boom")))
    with pytest.raises(ModelFileError, match="could not write"):
        save_model(path, make_model(), Vocabulary(WORDS), Tokenizer(), "en", 1, {})
    assert path.read_bytes() == before
    assert [p.name for p in path.parent.iterdir()] == [path.name]
    monkeypatch.undo()
    assert load_model(path).parse_layer == 3


# --- non-finite weights (a diverged run) -----------------------------------------------------------

def test_a_model_with_non_finite_weights_is_never_saved_nor_loaded(tmp_path):
    from onlstm_cli.modelfile import model_archive, save_model
    from onlstm_cli.errors import ModelFileError
    from onlstm_cli.text.tokenizers import Tokenizer
    from onlstm_cli.text.vocab import Vocabulary
    model = ONLSTMLanguageModel(ModelConfig(vocab_size=12, emb_size=20, hidden_size=40, chunk_size=5))
    vocab = Vocabulary([f"w{k}" for k in range(10)])
    with torch.no_grad():
        model.decoder_bias[3] = 1e6  # finite in float32, inf in float16
    with pytest.raises(ModelFileError, match="not finite"):
        save_model(tmp_path / "m.onlstm", model, vocab, Tokenizer(), "en", 2, {})
    assert list(tmp_path.iterdir()) == []  # nothing written, no temporary file left
    archive = model_archive(model, vocab, Tokenizer(), "en", 2, {}, torch.float32)
    archive["state_dict"]["decoder_bias"][3] = float("nan")
    torch.save(archive, tmp_path / "nan.onlstm")
    with pytest.raises(ModelFileError, match="not finite numbers"):
        load_model(tmp_path / "nan.onlstm")


def test_a_foreign_pickle_is_refused_in_one_line_without_a_warning(tmp_path):
    import pickle
    import warnings

    from onlstm_cli.errors import ModelFileError
    path = tmp_path / "foreign.onlstm"
    path.write_bytes(pickle.dumps({"format": "onlstm-model", "payload": ValueError("a foreign object")}))
    with warnings.catch_warnings(record=True) as caught, pytest.raises(ModelFileError) as error:
        warnings.simplefilter("always")
        load_model(path)
    assert caught == [] and "\n" not in str(error.value)
    truncated = tmp_path / "truncated.onlstm"
    model = ONLSTMLanguageModel(ModelConfig(vocab_size=12, emb_size=20, hidden_size=40, chunk_size=5))
    torch.save({"state": model.state_dict()}, truncated)
    truncated.write_bytes(truncated.read_bytes()[:2000])
    with pytest.raises(ModelFileError) as error:
        load_model(truncated)
    assert str(error.value).endswith(")") and "truncated" in str(error.value)  # a whole sentence, not cut


def test_ensemble_keeps_its_combination_and_each_members_direction(tmp_path):
    first, _ = member_archive(1)
    backwards, _ = member_archive(2, reverse=True)
    path = tmp_path / "ens.onlstm"
    atomic_save(with_members(first, [backwards], combine="zscore"), path)
    loaded = load_model(path)
    assert loaded.combine == "zscore"
    assert not loaded.config.reverse and loaded.members[0].config.reverse
    damaged = with_members(first, [backwards], combine="median")
    with pytest.raises(ModelFileError) as excinfo:
        model_from_archive(damaged, "ens.onlstm")
    assert "combination" in assert_one_line_error(excinfo)


def test_ensemble_weights_round_trip_and_must_fit(tmp_path):
    first, _ = member_archive(1)
    backwards, _ = member_archive(2, reverse=True)
    path = tmp_path / "ens.onlstm"
    atomic_save(with_members(first, [backwards], "zscore", [1.0, 0.25]), path)
    assert load_model(path).weights == [1.0, 0.25]
    for weights in ([1.0], [1.0, -1.0], [0.0, 0.0]):
        with pytest.raises(ModelFileError) as excinfo:
            model_from_archive(with_members(first, [backwards], "zscore", weights), "ens.onlstm")
        assert "weights" in assert_one_line_error(excinfo)


# --- hostile headers: sizes are checked against the bytes and tensors present, before allocating --------

@pytest.fixture
def nothing_allocated(monkeypatch):
    """Once called, fails the test if a language model or span parser is built anywhere but on the meta
    device, where shapes take no memory: a hostile file must be refused before its sizes are allocated."""
    import onlstm_cli.modelfile as modelfile
    import onlstm_cli.span.model as span_parser

    def guarded(real):
        def build(config):
            if torch.empty(0).device.type != "meta":
                raise AssertionError(f"allocated a module for {config}")
            return real(config)
        return build

    def guard():
        monkeypatch.setattr(modelfile, "ONLSTMLanguageModel", guarded(modelfile.ONLSTMLanguageModel))
        monkeypatch.setattr(span_parser, "SpanParser", guarded(span_parser.SpanParser))
    return guard


def self_nesting(depth: int) -> list:
    """A few bytes pickled (each level refers twice to the level below), 2^depth values when walked."""
    value: list = ["x"]
    for _ in range(depth):
        value = [value, value]
    return value


def looped() -> list:
    value: list = ["x"]
    value.append(value)
    return value


def with_span_parser(archive: dict, **overrides) -> dict:
    from onlstm_cli.config import SpanParserConfig
    from onlstm_cli.span.model import SpanParser
    config = SpanParserConfig(vocab_size=len(WORDS) + 2, emb_size=8, hidden_size=6, n_layers=2, mlp_size=5)
    section = {"config": config.to_dict(), "state_dict": dict(SpanParser(config).state_dict()), "meta": {}}
    section["config"].update(overrides)
    return dict(archive, span_parser=section)


HOSTILE = {  # damage → words the one-line message must have
    "vocabulary of 10^8": (lambda a: a["config"].update(vocab_size=10 ** 8), "vocab_size 100000000"),
    "10^6 layers": (lambda a: a["config"].update(n_layers=10 ** 6), "declares 1000000 layers but holds the weights of 3"),
    "hidden size": (lambda a: a["config"].update(hidden_size=4000), "hidden_size 4000"),
    "embedding size": (lambda a: a["config"].update(emb_size=10 ** 6), "emb_size 1000000"),
    "size not a number": (lambda a: a["config"].update(hidden_size="40"), "hidden_size"),
    "size a bool": (lambda a: a["config"].update(n_layers=True), "n_layers"),
    "vocabulary list longer than the weights": (lambda a: a.update(vocab=[f"w{k}" for k in range(10 ** 5)]),
                                                "vocabulary size"),
    "a weight not declared": (lambda a: a["state_dict"].update(zzz=torch.zeros(3)), "'zzz'"),
    "a layer's weight missing": (lambda a: a["state_dict"].pop("layers.2.hh.weight"), "lacks"),
    "weights not tensors": (lambda a: a["state_dict"].update({"decoder_bias": [0.0] * 8}), "no weights"),
    "meta nesting 2^40 values": (lambda a: a["meta"].update(x=self_nesting(40)), "metadata"),
    "meta containing itself": (lambda a: a["meta"].update(x=looped()), "metadata"),
    "span parser of 10^6 layers": (lambda a: a.update(with_span_parser(a, n_layers=10 ** 6)), "1000000 layers"),
    "span parser of 10^8 words": (lambda a: a.update(with_span_parser(a, vocab_size=10 ** 8)), "embed.weight"),
    "span parser's hidden size": (lambda a: a.update(with_span_parser(a, hidden_size=10 ** 5)), "hidden_size 100000"),
}


@pytest.mark.parametrize("hostile", sorted(HOSTILE))
def test_a_hostile_header_is_refused_before_anything_is_allocated(hostile, tmp_path, nothing_allocated):
    archive = good_archive()
    damage, words = HOSTILE[hostile]
    damage(archive)
    path = tmp_path / "hostile.onlstm"
    torch.save(archive, path)
    nothing_allocated()
    with pytest.raises(ModelFileError) as excinfo:
        load_model(path)
    message = assert_one_line_error(excinfo)
    assert "hostile.onlstm" in message and words in message


def test_the_guard_lets_a_good_file_with_a_span_parser_load(tmp_path, monkeypatch):
    """The hostile cases start from files that load: their refusal is the damage's."""
    path = tmp_path / "good.onlstm"
    torch.save(with_span_parser(good_archive()), path)
    loaded = load_model(path)
    assert loaded.span_parser is not None and loaded.config.n_layers == 3


def test_checking_a_header_imports_no_compiler(tmp_path):
    """The guard builds the modules on the meta device for their shapes; an initializer run there would
    import torch._dynamo, more than a second of every `onlstm parse`. A fresh process shows what loads."""
    import subprocess
    import sys
    path = tmp_path / "good.onlstm"
    torch.save(with_span_parser(good_archive()), path)
    code = ("import sys; from onlstm_cli.modelfile import load_model; "
            f"loaded = load_model({str(path)!r}); "
            "print(loaded.span_parser is not None, 'torch._dynamo' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-500:]
    assert result.stdout.split() == ["True", "False"]


def deflated_copy(src: Path, dst: Path) -> None:
    import zipfile
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zout:
        for entry in zin.infolist():
            zout.writestr(entry.filename, zin.read(entry.filename))


def test_deflated_padding_is_refused_before_it_is_inflated(tmp_path, monkeypatch):
    archive = good_archive()
    archive["meta"]["padding"] = "0" * (8 << 20)
    stored, deflated = tmp_path / "stored.onlstm", tmp_path / "padded.onlstm"
    torch.save(archive, stored)
    deflated_copy(stored, deflated)
    assert deflated.stat().st_size < stored.stat().st_size // 20  # megabytes that inflate 20-fold and more
    assert len(torch.load(deflated, weights_only=True)["meta"]["padding"]) == 8 << 20  # torch reads it whole
    loads = []
    monkeypatch.setattr(torch, "load", lambda *a, **k: loads.append(a))
    with pytest.raises(ModelFileError) as excinfo:
        load_model(deflated)
    assert "compressed" in assert_one_line_error(excinfo)
    assert loads == []  # refused from the zip directory alone


def test_entries_claiming_more_than_the_file_are_refused(saved, tmp_path):
    """A zip directory entry that claims more bytes than the file has (uncompressed size patched)."""
    data = bytearray(saved[0].read_bytes())
    central = data.rfind(b"PK\x01\x02")  # the last entry's central directory record
    data[central + 24:central + 28] = (1 << 31).to_bytes(4, "little")
    path = tmp_path / "claims.onlstm"
    path.write_bytes(bytes(data))
    with pytest.raises(ModelFileError) as excinfo:
        load_model(path)
    assert "claims.onlstm" in assert_one_line_error(excinfo)


def test_a_pickle_larger_than_the_bound_is_refused(saved, monkeypatch):
    import onlstm_cli.model_archive as model_archive
    monkeypatch.setattr(model_archive, "MAX_PICKLE_BYTES", 1000)
    with pytest.raises(ModelFileError) as excinfo:
        load_model(saved[0])
    assert "pickled part" in assert_one_line_error(excinfo)


# --- atomic_file: any atomic write (parse --output, pictures) ----------------------------------------------

def test_atomic_file_writes_text_whole_or_not_at_all(tmp_path):
    from onlstm_cli.modelfile import atomic_file
    path = tmp_path / "out.txt"
    path.write_text("old\n")
    with pytest.raises(KeyError):
        with atomic_file(path, "w") as f:
            f.write("half of a new file")
            raise KeyError("the work failed")
    assert path.read_text() == "old\n" and sorted(tmp_path.iterdir()) == [path]
    with atomic_file(path, "w") as f:
        f.write("new: 树\n")
    assert path.read_text(encoding="utf-8") == "new: 树\n" and sorted(tmp_path.iterdir()) == [path]


def test_atomic_file_refuses_a_link_when_asked_and_never_writes_through_one(tmp_path):
    from onlstm_cli.modelfile import atomic_file
    target, link = tmp_path / "target.txt", tmp_path / "link.txt"
    target.write_text("keep\n")
    link.symlink_to(target)
    with pytest.raises(ModelFileError) as excinfo:
        with atomic_file(link, "w", refuse_symlink=True) as f:
            f.write("x")
    assert "symbolic link" in assert_one_line_error(excinfo) and link.is_symlink()
    with atomic_file(link, "w") as f:  # not refused: the link itself is replaced, its target untouched
        f.write("x")
    assert target.read_text() == "keep\n" and not link.is_symlink() and link.read_text() == "x"
    with pytest.raises(ModelFileError, match="is a directory"):
        with atomic_file(tmp_path, "w"):
            pass


def test_weights_that_repeat_a_few_stored_bytes_are_refused(tmp_path, nothing_allocated):
    """A tensor saved as a stride-0 view loads as 10^5 rows of one stored row; a member list can name one
    member a thousand times. Both are small files whose models would be allocated in full."""
    archive = good_archive()
    rows = 10 ** 5  # 4 MB of float16 weights from 40 stored bytes, in a file of about 1 MB (its vocabulary)
    archive["config"]["vocab_size"] = rows
    archive["state_dict"]["embedding.weight"] = archive["state_dict"]["embedding.weight"][:1].expand(rows, -1)
    archive["state_dict"]["decoder_bias"] = archive["state_dict"]["decoder_bias"][:1].expand(rows)
    archive["vocab"] = ["<unk>", "<eos>"] + [f"w{k}" for k in range(rows - 2)]
    repeated = tmp_path / "repeated.onlstm"
    torch.save(archive, repeated)
    assert torch.load(repeated, weights_only=True)["state_dict"]["embedding.weight"].shape == (rows, 20)
    shared = tmp_path / "shared.onlstm"
    member = {k: v for k, v in good_archive().items() if k not in ("format", "version")}
    torch.save(dict(good_archive(), members=[member] * 1000), shared)
    nothing_allocated()
    for path in (repeated, shared):
        with pytest.raises(ModelFileError) as excinfo:
            load_model(path)
        assert "claim more bytes than the file holds" in assert_one_line_error(excinfo)


@pytest.mark.parametrize("weight", [float("nan"), float("inf"), float("-inf")])
def test_ensemble_weights_that_are_not_finite_are_a_damaged_file(tiny_model_path, tmp_path, weight):
    """Issue 41 item 6: else every distance came out null."""
    from onlstm_cli.ensemble import make_ensemble
    from conftest import right_to_left_copy
    ensemble = make_ensemble([tiny_model_path, right_to_left_copy(tiny_model_path, tmp_path)], tmp_path / "e.onlstm")
    archive = torch.load(ensemble.path, weights_only=True)
    archive["weights"] = [1.0, weight]
    torch.save(archive, tmp_path / "bad.onlstm")
    with pytest.raises(ModelFileError, match="is damaged: its ensemble weights"):
        load_model(tmp_path / "bad.onlstm")


# --- issue 50: members within members, complex weights, weights whose sum overflows ---------------------------

def nested_members(levels: int, copies: int = 1) -> dict:
    """A file whose one member holds `copies` members, each holding members in turn, `levels` deep: a few
    models' bytes (every level shares the first's weights) that the loader would build level by level."""
    member = {k: v for k, v in good_archive().items() if k not in ("format", "version")}
    for _ in range(levels):
        member = dict(member, members=[member] * copies)
    return dict(good_archive(), members=[member])


@pytest.mark.parametrize("levels, copies", [(1, 40), (960, 1)])
def test_members_within_members_are_refused_in_one_short_line(levels, copies, tmp_path, nothing_allocated):
    import sys
    path = tmp_path / "nested.onlstm"
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(10_000)  # pickling 960 levels recurses more deeply than Python's default lets it
    try:
        torch.save(nested_members(levels, copies), path)
    finally:
        sys.setrecursionlimit(limit)
    nothing_allocated()
    with pytest.raises(ModelFileError) as excinfo:
        load_model(path)
    message = assert_one_line_error(excinfo)
    assert "member 1 has members of its own" in message and len(message) < 200
    with pytest.raises(ModelFileError, match="members of its own"):
        model_from_archive(nested_members(1), "nested.onlstm")  # an archive in memory too (onlstm ensemble's)


def test_a_member_that_contains_itself_is_refused(tmp_path):
    member = {k: v for k, v in good_archive().items() if k not in ("format", "version")}
    member["members"] = [member]
    path = tmp_path / "loop.onlstm"
    torch.save(dict(good_archive(), members=[member]), path)
    with pytest.raises(ModelFileError) as excinfo:
        load_model(path)
    assert "members of its own" in assert_one_line_error(excinfo)


def test_members_span_parsers_count_against_the_file(tmp_path, monkeypatch):
    """Every section the loader builds is counted, a member's span parser too."""
    from onlstm_cli.modelfile import check_weights_present
    member = {k: v for k, v in with_span_parser(good_archive()).items() if k not in ("format", "version")}
    path = tmp_path / "e.onlstm"
    torch.save(dict(good_archive(), members=[member]), path)
    check_weights_present(torch.load(path, weights_only=True), path)  # fits: counted once each
    counted = sum(t.numel() * t.element_size() for section in (good_archive(), member, member["span_parser"])
                  for t in section["state_dict"].values())
    smaller = os.stat_result((0,) * 6 + (counted - 1,) + (0,) * 3)
    monkeypatch.setattr(Path, "stat", lambda self: smaller)  # a byte short of the weights with the span parser's
    with pytest.raises(ModelFileError, match="claim more bytes"):
        check_weights_present(torch.load(path, weights_only=True), path)


def test_complex_weights_are_a_damaged_file_without_a_warning(tmp_path):
    import warnings
    archive = good_archive()
    archive["state_dict"]["decoder_bias"] = archive["state_dict"]["decoder_bias"].to(torch.complex64)
    path = tmp_path / "complex.onlstm"
    torch.save(archive, path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ModelFileError) as excinfo:
            load_model(path)
    assert "decoder_bias holds complex64 values, not real numbers" in assert_one_line_error(excinfo)


@pytest.mark.parametrize("weights, loaded", [([1e308, 1e308], [1.0, 1.0]), ([2, 1], [1.0, 0.5]),
                                             ([5e-324, 0.0], [1.0, 0.0])])
def test_ensemble_weights_are_divided_by_the_largest(weights, loaded, tmp_path):
    """Issue 50 item 15: 1e308 and 1e308 summed to inf, and every distance was inf / inf."""
    first, _ = member_archive(1)
    second, _ = member_archive(2)
    path = tmp_path / "ens.onlstm"
    atomic_save(with_members(first, [second], "mean", weights), path)
    assert load_model(path).weights == loaded


@pytest.mark.parametrize("field, value", [("version", torch.ones(3)), ("version", "9" * 100_000),
                                          ("format", torch.ones(3)), ("kind", "k" * 100_000)])
def test_a_header_of_the_wrong_type_is_refused_in_one_short_line(field, value, tmp_path):
    path = tmp_path / "header.onlstm"
    torch.save(dict(good_archive(), **{field: value}), path)
    with pytest.raises(ModelFileError) as excinfo:
        load_model(path)
    message = assert_one_line_error(excinfo)
    assert "header.onlstm" in message and len(message) < 300
