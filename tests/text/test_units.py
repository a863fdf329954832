"""Words read by their character n-grams (onlstm_cli/text/units.py), in the models and through a model file."""
from __future__ import annotations

from collections import Counter

import pytest
import torch

from onlstm_cli.config import ModelConfig, SpanParserConfig
from onlstm_cli.lm.model import ONLSTMLanguageModel
from onlstm_cli.span.model import SpanParser, span_distances
from onlstm_cli.text.units import (EDGE, MAX_N, MIN_N, UnitEmbedding, UnitTable, batch_units, reads_ngrams,
                                   unit_rows, unit_vectors, word_units)

WORDS = ["<unk>", "<eos>", "ev", "evler", "evlerde", "okul", "okullarda"]


def test_a_words_ngrams_are_those_of_the_marked_word():
    assert word_units("ev") == ["<e", "ev", "v>", "<ev", "ev>", "<ev>"]
    grams = word_units("evlerde")
    assert "de>" in grams and "<ev" in grams and all(MIN_N <= len(g) <= MAX_N for g in grams)


def test_a_very_long_word_is_read_by_its_beginning_and_end_in_bounded_units():
    word = "a" * 2000 + "b" * 3000 + "lar"
    grams = word_units(word)
    assert len(grams) < 4 * 2 * (EDGE + 1)
    assert "ar>" in grams and "<aa" in grams
    assert not any("\x00" in g for g in grams)  # no n-gram spans the cut
    assert len(word_units("x" * 10)) < len(word_units("x" * 100)) == len(word_units("x" * 5000))


def test_buckets_are_stable_numbers_in_range():
    rows = unit_rows("okullarda", 97)
    assert rows == unit_rows("okullarda", 97) and all(0 <= r < 97 for r in rows)
    assert rows != unit_rows("okullar", 97)


def test_the_vector_of_a_word_is_the_mean_of_its_ngram_rows():
    weight = torch.randn(50, 4)
    table = UnitTable.of_words(WORDS, 50)
    rows = torch.tensor([[3, 6], [2, 2]])
    got = unit_vectors(weight, rows, table)
    assert got.shape == (2, 2, 4)
    for (i, j) in [(0, 0), (0, 1), (1, 0)]:
        expected = weight[list(unit_rows(WORDS[int(rows[i, j])], 50))].mean(0)
        assert torch.allclose(got[i, j], expected, atol=1e-6)


def test_a_batch_table_gives_each_distinct_word_one_row_and_the_padding_row_0():
    row_of, table = batch_units([["ev", "okul"], ["okul", "evde"]], 64, "<eos>")
    assert row_of == {"<eos>": 0, "ev": 1, "okul": 2, "evde": 3}
    assert table.counts.tolist() == [len(unit_rows(w, 64)) for w in row_of]


@pytest.mark.parametrize("counts, ngrams", [
    (Counter({"the": 50, "cat": 50}), False),                          # nothing seen once
    (Counter({"the": 95, **{f"w{k}": 1 for k in range(5)}}), True),    # 5% of the tokens seen once
    (Counter({"the": 96, **{f"w{k}": 1 for k in range(4)}}), False),
    (Counter({f"w{k}": 2 for k in range(100)}), True),                 # most tokens beyond a 12-word vocabulary
    (Counter(), False),
])
def test_auto_reads_ngrams_where_new_text_would_have_unknown_words(counts, ngrams):
    assert reads_ngrams(counts, 12) is ngrams


def ngram_lm(**overrides) -> ONLSTMLanguageModel:
    torch.manual_seed(0)
    config = dict(vocab_size=len(WORDS), emb_size=10, hidden_size=20, n_layers=3, chunk_size=5, word_rows=4,
                  unit_buckets=64)
    return ONLSTMLanguageModel(ModelConfig(**{**config, **overrides}), WORDS).eval()


def test_an_ngram_model_reads_a_word_beyond_its_rows_by_its_ngrams_and_predicts_it_as_unk():
    model = ngram_lm()
    assert model.embedding.weight.shape[0] == 4 and model.decoder_bias.shape[0] == 4
    ids = torch.tensor([[5], [6]])  # okul, okullarda: no rows of their own
    vectors = model.word_vectors(ids)
    assert torch.allclose(vectors[1, 0], model.unit_embedding(torch.tensor(6)))  # its n-grams alone, not <unk>'s row
    assert torch.allclose(model.word_vectors(torch.tensor([0])), model.unit_embedding(torch.tensor([0])))
    assert torch.allclose(model.word_vectors(torch.tensor([3])),
                          model.embedding.weight[3] + model.unit_embedding(torch.tensor([3])))
    assert not torch.allclose(vectors[0], vectors[1])
    loss = model(ids[:1], targets=ids[1:]).loss
    logits = model(ids[:1]).logits
    assert torch.allclose(loss, torch.nn.functional.cross_entropy(logits[0], torch.tensor([0])), atol=1e-5)


def test_a_word_the_vocabulary_lacks_is_read_by_its_own_ngrams_at_parse_time():
    model = ngram_lm()
    ids = torch.tensor([[2], [0]])  # ev, then a word the vocabulary lacks: <unk>
    words = [["ev", "evlerimizde"]], [["ev", "kitaplar"]]
    distances = []
    for sentence in words:
        row_of, table = batch_units(sentence, 64, "<eos>")
        rows = torch.tensor([[row_of[w]] for w in sentence[0]])
        distances.append(model(ids, units=(rows, table), with_logits=False).distances[1][1, 0])
    assert distances[0] != distances[1]


def test_a_model_of_whole_words_has_no_ngram_weights():
    model = ngram_lm(word_rows=0, unit_buckets=0)
    assert model.unit_embedding is None and "unit_embedding.weight" not in model.state_dict()
    assert model.embedding.weight.shape[0] == len(WORDS)


def test_out_of_range_rows_are_refused():
    with pytest.raises(ValueError, match="out of range"):
        ngram_lm(word_rows=len(WORDS) + 1)
    with pytest.raises(ValueError, match="built without its vocabulary"):
        ONLSTMLanguageModel(ModelConfig(vocab_size=7, emb_size=10, hidden_size=20, chunk_size=5, unit_buckets=64))(
            torch.tensor([[1]]))


def test_the_span_parser_reads_unknown_words_by_their_ngrams():
    torch.manual_seed(0)
    parser = SpanParser(SpanParserConfig(vocab_size=len(WORDS), emb_size=8, hidden_size=8, mlp_size=8, word_rows=4,
                                         unit_buckets=64), WORDS).eval()
    assert isinstance(parser.unit_embed, UnitEmbedding)
    sentences = [["ev", "okul", "evlerde", "x"], ["ev", "okul", "evlerde", "kitaplarımızdan"]]
    ids = [[2, 5, 4, 0], [2, 5, 4, 0]]
    with torch.no_grad():
        scores = [parser.fenceposts(*_padded(row), units=_units(s)) for row, s in zip(ids, sentences)]
    assert not torch.allclose(scores[0], scores[1])  # the same ids, other words: other span scores
    heights = span_distances(parser, ids, 1, words_of=sentences)
    assert [len(h) for h in heights] == [4, 4]


def _padded(ids):
    return torch.tensor([[1, *ids, 1]]), torch.tensor([len(ids)])


def _units(sentence):
    row_of, table = batch_units([sentence], 64, "<eos>")
    return torch.tensor([[0, *[row_of[w] for w in sentence], 0]]), table


# --- trained and written: the file, its trees, its card ----------------------------------------------

def agglutinative_corpus(path, n=80, seed=0):
    """Sentences whose words are stems with endings: most word forms are seen once."""
    import random
    rng = random.Random(seed)
    stems, endings = ["ev", "okul", "kitap", "araba", "kapı", "yol"], ["", "ler", "de", "lerde", "den", "imiz"]
    lines = [" ".join(rng.choice(stems) + rng.choice(endings) + rng.choice(["", "a", "ı", "m"])
                      for _ in range(rng.randint(3, 7))) + " gitti" for _ in range(n)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def ngram_model(tmp_path_factory):
    from conftest import TINY_MODEL, QuietReporter, tiny_train_config
    from onlstm_cli.training.lm.train import train_model
    folder = tmp_path_factory.mktemp("units")
    train, valid = agglutinative_corpus(folder / "train.txt"), agglutinative_corpus(folder / "valid.txt", 20, 1)
    reporter = QuietReporter()
    train_model(train, folder / "m.onlstm", dict(TINY_MODEL), tiny_train_config(epochs=1), valid=valid,
                max_vocab=20, reporter=reporter, lang="tr", units="auto")
    return folder, reporter


def test_auto_reads_an_agglutinative_corpus_by_ngrams_and_says_so(ngram_model):
    from onlstm_cli.modelfile import load_model
    folder, reporter = ngram_model
    loaded = load_model(folder / "m.onlstm")
    assert loaded.config.unit_buckets > 0 and loaded.config.word_rows == 20
    assert len(loaded.vocab) > 20  # every word type of the corpus has an input id
    from onlstm_cli.text.corpus import read_corpus
    train_words = {w for s in read_corpus(folder / "train.txt", loaded.tokenizer) for w in s}
    valid_words = {w for s in read_corpus(folder / "valid.txt", loaded.tokenizer) for w in s}
    assert valid_words - train_words and valid_words <= set(loaded.vocab.itos)  # validation read by n-grams too
    assert any("character n-grams" in m and "--units words" in m for m in reporter.messages)


def test_an_ngram_model_file_parses_words_it_never_saw_and_its_card_says_how(ngram_model):
    from typer.testing import CliRunner

    from onlstm_cli.api import Parser
    from onlstm_cli.cli.commands import app
    folder, _ = ngram_model
    parser = Parser(str(folder / "m.onlstm"))
    seen, unseen = "evlerde okul gitti", "evlerimizden okullarımızda gitti"
    trees = [parser.parse(s) for s in (seen, unseen)]
    assert [t.leaves() for t in trees] == [s.split() for s in (seen, unseen)]
    with _no_warning():
        parser.parse("kitaplarımızdan arabalarımızla gitti")
    result = CliRunner().invoke(app, ["info", str(folder / "m.onlstm")])
    assert result.exit_code == 0 and "character n-grams" in result.output and "no word is unknown" in result.output


def _no_warning():
    import warnings
    from contextlib import contextmanager

    @contextmanager
    def check():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            yield
        assert not [w for w in caught if "unknown" in str(w.message)]
    return check()


@pytest.mark.parametrize("units", ["words", None])
def test_whole_words_are_the_default_and_units_words_asks_for_them(tmp_path, units):
    from conftest import TINY_MODEL, tiny_train_config
    from onlstm_cli.modelfile import load_model
    from onlstm_cli.training.lm.train import train_model
    train = agglutinative_corpus(tmp_path / "train.txt")
    train_model(train, tmp_path / "w.onlstm", dict(TINY_MODEL), tiny_train_config(epochs=1), max_vocab=20, lang="tr",
                **({"units": units} if units else {}))
    loaded = load_model(tmp_path / "w.onlstm")
    assert loaded.config.unit_buckets == 0 and len(loaded.vocab) == 20


def test_a_header_with_more_word_rows_than_words_is_a_damaged_file(ngram_model, tmp_path):
    from onlstm_cli.errors import ModelFileError
    from onlstm_cli.modelfile import model_from_archive, read_archive
    folder, _ = ngram_model
    archive = read_archive(folder / "m.onlstm")
    archive["config"]["word_rows"] = len(archive["vocab"]) + 5
    with pytest.raises(ModelFileError, match="damaged"):
        model_from_archive(archive, "bad.onlstm")


def test_a_student_of_an_ngram_teacher_reads_ngrams_and_parses_unseen_words(ngram_model, tmp_path):
    from onlstm_cli.api import Parser
    from onlstm_cli.config import SelfTrainConfig
    from onlstm_cli.modelfile import load_model
    from onlstm_cli.training.student.train import self_train
    folder, _ = ngram_model
    teacher = load_model(folder / "m.onlstm")
    result = self_train(folder / "train.txt", tmp_path / "s.onlstm", [teacher], folder / "valid.txt", None,
                        SelfTrainConfig(epochs=1, batch_size=8), log=lambda line: None)
    student = load_model(result.out)
    assert student.span_parser.unit_embed is not None
    assert student.span_parser.config.word_rows == teacher.config.word_rows == 20
    tree = Parser(str(result.out)).parse("kitaplarımızdan arabalarımızla evde gitti")
    assert tree.leaves() == ["kitaplarımızdan", "arabalarımızla", "evde", "gitti"]
    from onlstm_cli.info import info_text, model_info
    assert "every word also read by its character n-grams (8,192 rows)" in info_text(model_info(result.out))


def test_a_corpus_where_every_word_is_unique_trains_an_ngram_model_that_reads_a_5000_letter_word(tmp_path):
    from typer.testing import CliRunner

    from onlstm_cli.cli.commands import app
    from onlstm_cli.modelfile import load_model
    words = iter(f"w{k}x{'abcdefgh'[k % 8]}" for k in range(10_000))
    corpus = tmp_path / "unique.txt"
    corpus.write_text("\n".join(" ".join(next(words) for _ in range(6)) for _ in range(120)) + "\n", encoding="utf-8")
    out = tmp_path / "u.onlstm"
    result = CliRunner().invoke(app, ["train", str(corpus), "--lang", "xx", "--units", "auto", "--epochs", "1", "--emb-size", "10",
                                      "--hidden-size", "10", "--chunk-size", "5", "--batch-size", "4",
                                      "--max-vocab", "50", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "character n-grams (100% of the tokens are words seen once)" in result.output
    loaded = load_model(out)
    assert loaded.config.word_rows == 50 and len(loaded.vocab) == 2 + 720
    long_word = "ab" * 2500
    result = CliRunner().invoke(app, ["parse", "-m", str(out)], input=f"w1xa {long_word} w9xb\n")
    assert result.exit_code == 0 and long_word in result.output and "unknown" not in result.output


def test_a_student_of_ngrams_learns_the_ngrams_of_words_its_whole_word_teacher_lacks(tmp_path):
    """A span parser that reads n-grams over a whole-word language model: its teacher's vocabulary has no id
    for a rare word (<unk>), so the student must be given the words themselves to learn their n-grams."""
    from conftest import TINY_MODEL, QuietReporter, tiny_train_config
    from onlstm_cli.config import SelfTrainConfig, SpanParserConfig
    from onlstm_cli.modelfile import load_model
    from onlstm_cli.span.model import SpanParser
    from onlstm_cli.text.corpus import read_corpus
    from onlstm_cli.text.units import unit_rows
    from onlstm_cli.training.student.train import self_train
    from onlstm_cli.training.lm.train import train_model
    train, valid = agglutinative_corpus(tmp_path / "train.txt"), agglutinative_corpus(tmp_path / "valid.txt", 20, 1)
    train_model(train, tmp_path / "m.onlstm", dict(TINY_MODEL), tiny_train_config(epochs=1), valid=valid,
                max_vocab=20, reporter=QuietReporter(), lang="tr", units="words")
    teacher = load_model(tmp_path / "m.onlstm")
    assert teacher.config.unit_buckets == 0
    buckets = 100_003
    config = SpanParserConfig(vocab_size=len(teacher.vocab), emb_size=8, hidden_size=6, mlp_size=5, unit_buckets=buckets)
    settings = SelfTrainConfig(epochs=1, batch_size=8, seed=7)
    torch.manual_seed(settings.seed)
    before = SpanParser(config, teacher.vocab.itos).unit_embed.weight.detach().half()  # as self_train starts it
    # (and as a file stores it: in float16)
    result = self_train(train, tmp_path / "s.onlstm", [teacher], valid, config, settings, log=lambda line: None)
    after = load_model(result.out).span_parser.unit_embed.weight.detach()
    known = {b for w in teacher.vocab.itos for b in unit_rows(w, buckets)}
    rare = {w for s in read_corpus(train, teacher.tokenizer) for w in s if w not in teacher.vocab.stoi}
    only_rare = sorted({b for w in rare for b in unit_rows(w, buckets)} - known)
    assert rare and only_rare
    untouched = sorted(set(range(buckets)) - known - set(only_rare))[:1000]
    assert torch.equal(after[untouched], before[untouched])  # a row no word reads is as it started
    assert not torch.equal(after[only_rare], before[only_rare])  # the rare words' n-grams were read, and learned
    from onlstm_cli.text.coverage import coverage_warning
    student, unseen = load_model(result.out), [["zzqa", "qqzb", "xxwc"]]
    assert coverage_warning(student, unseen, "s.onlstm") is None  # the span parser reads them by their n-grams
    assert "3 of 3 words are unknown" in coverage_warning(student, unseen, "s.onlstm", by_span_parser=False)


def test_a_student_over_whole_words_reads_ngrams_where_its_text_has_many_rare_words(tmp_path):
    """SelfTrainConfig.units: auto gives the span parser n-grams where the training text has many words seen once,
    so that no word is unknown to the parser shipped; a text of a few words repeated keeps the host's words."""
    from conftest import TINY_MODEL, QuietReporter, tiny_train_config
    from onlstm_cli.config import DEFAULT_UNIT_BUCKETS
    from onlstm_cli.errors import TrainingError
    from onlstm_cli.modelfile import load_model
    from onlstm_cli.training.student.train import student_config
    from onlstm_cli.training.lm.train import train_model
    rare = agglutinative_corpus(tmp_path / "train.txt")
    train_model(rare, tmp_path / "m.onlstm", dict(TINY_MODEL), tiny_train_config(epochs=1), max_vocab=20,
                reporter=QuietReporter(), lang="tr", units="words")
    host = load_model(tmp_path / "m.onlstm")
    said = []
    assert student_config(host, rare, "auto", said.append).unit_buckets == DEFAULT_UNIT_BUCKETS
    assert said and "character n-grams" in said[0] and "are words seen once" in said[0] and "reads as <unk>" in said[0]
    assert student_config(host, rare, "host").unit_buckets == 0
    repeated = tmp_path / "repeated.txt"
    repeated.write_text("ev okul gitti\n" * 50, encoding="utf-8")
    assert student_config(host, repeated, "auto").unit_buckets == 0
    assert student_config(host, repeated, "ngrams").unit_buckets == DEFAULT_UNIT_BUCKETS
    config = student_config(host, rare, "auto")
    assert (config.vocab_size, config.output_size) == (len(host.vocab), len(host.vocab))  # the host's words, each its row
    with pytest.raises(TrainingError, match="unknown student units 'chars'"):
        student_config(host, rare, "chars")
