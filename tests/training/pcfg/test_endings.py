"""A PCFG that reads a rare word by its ending (`train --family pcfg --units endings`, text/vocab.py): the units its
vocabulary holds, the file that records them, and a word never seen read by its ending where the file holds it."""
import random

import pytest
import torch

from conftest import QuietReporter
from onlstm_cli.config import ENDING_CHARS, PcfgConfig, PcfgTrainConfig
from onlstm_cli.errors import ModelFileError, TrainingError
from onlstm_cli.text.vocab import ENDING_BELOW, UNK, Vocabulary, ending_unit

SMALL = dict(nonterminals=4, preterminals=6, rank=8)
ENDINGS = ["lar", "dan", "nin"]


def words_text(path, lines: int, seed: int):
    """Lines of a few frequent words and, in each, one word seen once whose ending is one of three."""
    rng = random.Random(seed)
    frequent = ["ev", "gel", "bir", "çok", "ve"]
    text = []
    for k in range(lines):
        rare = "".join(rng.choice("bcdfgkmprst") + rng.choice("aeiou") for _ in range(3)) + f"{k}x" + rng.choice(ENDINGS)
        text.append(" ".join(rng.sample(frequent, 3) + [rare] + rng.sample(frequent, 2)))
    path.write_text("\n".join(text) + "\n", encoding="utf-8")
    return path


def test_a_word_seen_once_is_counted_as_its_ending_and_a_word_not_held_is_read_by_it():
    counts = {"evde": 3, "okulda": 1, "bahçede": 1, "geldi": ENDING_BELOW}
    vocab = Vocabulary.build(counts, endings=2)
    assert vocab.itos == [UNK, "<eos>", "evde", "geldi", ending_unit("okulda", 2), ending_unit("bahçede", 2)]
    assert vocab.encode(["evde", "kapıda", "okulda", "xyz"]) == [2, vocab.stoi[" da"], vocab.stoi[" da"], 0]
    assert vocab.encode([UNK]) == [0]  # the literal <unk> stays unknown, not read by its ending
    whole = Vocabulary.build(counts)
    assert whole.encode(["kapıda", "okulda"]) == [0, whole.stoi["okulda"]]  # without endings: as before


def test_an_ending_unit_is_never_a_word_a_reader_gives():
    from onlstm_cli.text.tokenizers import Tokenizer
    text = "kitaplar da a"
    words = Tokenizer().split(text)
    assert words and not any(" " in w for w in words)
    assert all(ending_unit(w, 3).startswith(" ") and ending_unit(w, 3) not in words for w in words)


def test_the_units_are_checked_for_each_family_in_one_line(runner, tmp_path):
    from onlstm_cli.cli.commands import app
    corpus = words_text(tmp_path / "c.txt", 20, 0)
    for args, fragment in ((["--units", "endings"], "is for a PCFG"),
                           (["--seeds", "2", "--units", "endings"], "is for a PCFG"),
                           (["--family", "pcfg", "--units", "auto"], "words or endings")):
        result = runner.invoke(app, ["train", str(corpus), *args, "-o", str(tmp_path / "m.onlstm")])
        assert result.exit_code != 0 and "Traceback" not in result.output
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error:") and fragment in lines[0], result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.txt"]
    with pytest.raises(TrainingError, match="last 1 to 8 characters"):
        PcfgConfig(vocab_size=0, endings=9).check()


@pytest.fixture(scope="module")
def endings_file(tmp_path_factory):
    from typer.testing import CliRunner
    from onlstm_cli.cli.commands import app
    root = tmp_path_factory.mktemp("endings")
    out = root / "e.onlstm"
    result = CliRunner().invoke(app, ["train", str(words_text(root / "train.txt", 60, 0)), "--family", "pcfg",
                                      "--units", "endings", "--valid", str(words_text(root / "valid.txt", 10, 1)),
                                      "--epochs", "2", "--threads", "1", "-o", str(out),
                                      *[str(a) for k, v in SMALL.items() for a in (f"--{k}", v)]])
    assert result.exit_code == 0, result.output
    assert f"words seen once read by their last {ENDING_CHARS} characters" in result.stderr
    return out


def test_the_file_reads_a_word_never_seen_by_its_ending(endings_file, runner):
    from onlstm_cli.cli.commands import app
    from onlstm_cli.modelfile import load_model
    loaded = load_model(endings_file)
    assert loaded.pcfg.config.endings == ENDING_CHARS and loaded.vocab.endings == ENDING_CHARS
    held = {w for w in loaded.vocab.itos if w.startswith(" ")}
    assert held == {ending_unit(e, ENDING_CHARS) for e in ENDINGS}  # the 60 words seen once: three units
    unseen = loaded.vocab.encode(["zzzqqlar", "zzzqqxyz"])
    assert unseen[0] == loaded.vocab.stoi[" lar"] and unseen[1] == 0
    parsed = runner.invoke(app, ["parse", "-m", str(endings_file), "-f", "json"], input="ev gel zzzqqlar bir ve\n")
    assert parsed.exit_code == 0, parsed.output
    assert '"log_likelihood"' in parsed.stdout
    info = runner.invoke(app, ["info", str(endings_file)])
    assert info.exit_code == 0 and "words seen once read by their last 3 characters" in info.stdout


def test_a_damaged_endings_field_is_refused_in_one_line(endings_file, tmp_path):
    from onlstm_cli.modelfile import load_model
    archive = torch.load(endings_file, weights_only=True)
    for bad in (10 ** 9, -1, "3", True):
        section = dict(archive["pcfg"], config=dict(archive["pcfg"]["config"], endings=bad))
        torch.save(dict(archive, pcfg=section), tmp_path / "bad.onlstm")
        with pytest.raises(ModelFileError) as caught:
            load_model(tmp_path / "bad.onlstm")
        assert "\n" not in str(caught.value)


def test_a_resumed_run_reads_by_the_same_endings(tmp_path):
    from onlstm_cli.training.pcfg.train import train_pcfg
    corpus, out = words_text(tmp_path / "c.txt", 40, 2), tmp_path / "p.onlstm"
    sizes = dict(SMALL, endings=ENDING_CHARS)
    first = train_pcfg(corpus, out, sizes, PcfgTrainConfig(epochs=1, time_budget=None), reporter=QuietReporter())
    from onlstm_cli.modelfile import load_model
    first_vocab = load_model(out).vocab.itos
    second = train_pcfg(corpus, out, sizes, PcfgTrainConfig(epochs=2, time_budget=None), resume=first.checkpoint,
                        reporter=QuietReporter())
    vocab = load_model(out).vocab
    assert second.epochs_done == 2 and vocab.itos == first_vocab and vocab.endings == ENDING_CHARS
    with pytest.raises(TrainingError, match="the PCFG's sizes"):  # whole words cannot go on from it
        train_pcfg(corpus, out, SMALL, PcfgTrainConfig(epochs=3, time_budget=None), resume=first.checkpoint,
                   reporter=QuietReporter())
