"""Sentences → distances → trees: batching, skipped punctuation, model resolution."""
from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest

from onlstm_cli.induction.distances import (combine_distances, attach_skipped, parse_lines, prepare, scaled_ranks,
                                            sentence_distances, standard_scores)
from onlstm_cli.induction.models import BUNDLED_MODELS, ModelCache, models_dir, resolve_model
from onlstm_cli.errors import ParseError
from onlstm_cli.trees import build_tree, tree_leaves

SENTENCES = [
    ["the", "cat", "sat", "on", "the", "mat"],
    ["a", "dog"],
    ["hello"],
    ["the", "man", "saw", "a", "bird", "near", "the", "house", "under", "a", "tree"],
    ["zebra", "the", "unseen"],  # unknown words go in as <unk>
    ["a", "tree", "liked", "the", "woman"],
]


# --- distances ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("batch_size", [1, 2, 128])
def test_batched_distances_equal_one_at_a_time(tiny_loaded, batch_size):
    batched = sentence_distances(tiny_loaded, SENTENCES, batch_size=batch_size)
    assert [len(d) for d in batched] == [len(s) for s in SENTENCES]
    for sentence, got in zip(SENTENCES, batched):
        alone = sentence_distances(tiny_loaded, [sentence])[0]
        assert got == pytest.approx(alone, abs=1e-5)


def test_batches_side_by_side_give_the_same_distances_and_restore_torch_threads(tiny_loaded, monkeypatch):
    import torch

    import onlstm_cli.induction.distances as parser_module
    from onlstm_cli import fast
    before = torch.get_num_threads()
    pools = []
    original = parser_module.batches_side_by_side

    def counted(threads):
        pools.append(threads)
        return original(threads)

    monkeypatch.setattr(parser_module, "batches_side_by_side", counted)
    try:
        torch.set_num_threads(1)
        one_by_one = sentence_distances(tiny_loaded, SENTENCES, batch_size=2, all_layers=True)
        assert pools == []  # one torch thread: batches run in turn
        torch.set_num_threads(2)
        side_by_side = sentence_distances(tiny_loaded, SENTENCES, batch_size=2, all_layers=True)
        if fast.backend_of(next(tiny_loaded.model.parameters())).packs_sentences:  # (only the packed path runs side by side)
            assert pools == [2]
        assert torch.get_num_threads() == 2  # restored after the pool
    finally:
        torch.set_num_threads(before)
    for a, b in zip(one_by_one, side_by_side):
        for x, y in zip(a, b):
            assert x == pytest.approx(y, abs=1e-6)


@pytest.mark.parametrize("all_layers", [False, True])
def test_packed_distances_equal_the_padded_path_and_the_reference(tiny_loaded, all_layers):
    """With the C cell, parsing packs each batch's sentences instead of padding them; same distances."""
    import torch

    from onlstm_cli import fast
    model = tiny_loaded.model
    if not fast.backend_of(next(model.parameters())).packs_sentences:
        pytest.skip("no C kernel here: parsing pads")
    packed = sentence_distances(tiny_loaded, SENTENCES, batch_size=4, all_layers=all_layers)
    with fast.forced(cell="torch"):
        padded = sentence_distances(tiny_loaded, SENTENCES, batch_size=4, all_layers=all_layers)
    vocab, layer = tiny_loaded.vocab, tiny_loaded.parse_layer
    for sentence, a, b in zip(SENTENCES, packed, padded):
        if all_layers:
            assert len(a) == len(b) == tiny_loaded.config.n_layers
            for x, y in zip(a, b):
                assert x == pytest.approx(y, abs=1e-5)
            a = a[layer - 1]
        else:
            assert a == pytest.approx(b, abs=1e-5)
        ids = torch.tensor([vocab.eos_id, *vocab.encode(sentence)])[:, None]
        with torch.no_grad():
            reference = model(ids, reference=True, with_logits=False).distances[layer - 1][1:, 0]
        assert a == pytest.approx(reference.tolist(), abs=1e-5)


def test_distances_all_layers(tiny_loaded):
    per_layer = sentence_distances(tiny_loaded, SENTENCES, all_layers=True)
    n_layers = tiny_loaded.config.n_layers
    for sentence, layers in zip(SENTENCES, per_layer):
        assert len(layers) == n_layers
        assert all(len(d) == len(sentence) for d in layers)
    for k in range(1, n_layers + 1):
        one = sentence_distances(tiny_loaded, SENTENCES, layer=k)
        for a, layers in zip(one, per_layer):
            assert a == pytest.approx(layers[k - 1], abs=1e-6)


@pytest.fixture
def ensemble_paths(tiny_model_path, tmp_path):
    """An ensemble of the tiny model and a perturbed copy, and that copy on its own."""
    import torch
    from onlstm_cli.ensemble import with_members
    from onlstm_cli.modelfile import atomic_save, read_archive
    first = read_archive(tiny_model_path)
    second = dict(first)
    generator = torch.Generator().manual_seed(0)
    second["state_dict"] = {k: v + 0.05 * torch.randn(v.shape, generator=generator).to(v.dtype)
                            for k, v in first["state_dict"].items()}
    alone, both = tmp_path / "second.onlstm", tmp_path / "ensemble.onlstm"
    atomic_save(second, alone)
    atomic_save(with_members(first, [second]), both)
    return both, alone


@pytest.mark.parametrize("all_layers", [False, True])
def test_ensemble_distances_are_the_members_mean(tiny_loaded, ensemble_paths, all_layers):
    from onlstm_cli.modelfile import load_model
    both, alone = map(load_model, ensemble_paths)
    got = sentence_distances(both, SENTENCES, all_layers=all_layers)
    first = sentence_distances(tiny_loaded, SENTENCES, all_layers=all_layers)
    second = sentence_distances(alone, SENTENCES, all_layers=all_layers)
    if not all_layers:
        got, first, second = [[x] for x in got], [[x] for x in first], [[x] for x in second]
    for g, a, b in zip(got, first, second):
        for gl, al, bl in zip(g, a, b):
            assert gl == pytest.approx([(x + y) / 2 for x, y in zip(al, bl)], abs=1e-5)
    assert first != second


def test_distances_default_to_the_parse_layer(tiny_loaded):
    default = sentence_distances(tiny_loaded, SENTENCES[:2])
    explicit = sentence_distances(tiny_loaded, SENTENCES[:2], layer=tiny_loaded.parse_layer)
    assert default == explicit
    other = sentence_distances(tiny_loaded, SENTENCES[:2], layer=1)
    assert other != default


def test_distances_are_within_the_level_range(tiny_loaded):
    n_levels = tiny_loaded.model.layers[tiny_loaded.parse_layer - 1].n_levels
    for d in sentence_distances(tiny_loaded, SENTENCES):
        assert all(math.isfinite(x) and 1 - 1e-4 <= x <= n_levels + 1e-4 for x in d)


def test_distances_read_each_sentence_from_a_fresh_state(tiny_loaded):
    """A sentence's distances do not depend on which sentences share its batch."""
    first = sentence_distances(tiny_loaded, [SENTENCES[0], SENTENCES[3]])[0]
    second = sentence_distances(tiny_loaded, [SENTENCES[3], SENTENCES[1], SENTENCES[0]])[2]
    assert first == pytest.approx(second, abs=1e-5)


def test_empty_sentences_get_empty_distances(tiny_loaded):
    got = sentence_distances(tiny_loaded, [[], ["a", "dog"], []])
    assert got[0] == [] and got[2] == [] and len(got[1]) == 2
    got = sentence_distances(tiny_loaded, [[]], all_layers=True)
    assert got == [[[] for _ in range(tiny_loaded.config.n_layers)]]


@pytest.mark.parametrize("layer", [0, 4, -1])
def test_layer_out_of_range(tiny_loaded, layer):
    with pytest.raises(ParseError):
        sentence_distances(tiny_loaded, SENTENCES[:1], layer=layer)


# --- parse_lines -------------------------------------------------------------------------------------------

def test_parse_keeps_unknown_punctuation_as_leaves(tiny_model_path, tiny_loaded):
    assert "," not in tiny_loaded.vocab and "!" not in tiny_loaded.vocab
    [parsed] = parse_lines(["Hello , world !"], model=str(tiny_model_path))
    assert parsed.tokens == ["Hello", ",", "world", "!"]
    assert tree_leaves(parsed.tree) == parsed.tokens
    assert parsed.distances[1] is None and parsed.distances[3] is None
    assert isinstance(parsed.distances[0], float) and isinstance(parsed.distances[2], float)
    assert parsed.model == str(tiny_model_path)


def test_parse_distances_are_the_fed_words_distances(tiny_model_path, tiny_loaded):
    [parsed] = parse_lines(["The cat, sat on the mat."], model=str(tiny_model_path))
    assert parsed.tokens == ["The", "cat", ",", "sat", "on", "the", "mat", "."]
    fed = [t.lower() for t, d in zip(parsed.tokens, parsed.distances) if d is not None]
    assert fed == ["the", "cat", "sat", "on", "the", "mat"]
    expected = sentence_distances(tiny_loaded, [fed])[0]
    assert [d for d in parsed.distances if d is not None] == pytest.approx(expected, abs=1e-5)
    assert tree_leaves(parsed.tree) == parsed.tokens


def test_parse_tree_is_built_from_the_distances(tiny_model_path):
    [parsed] = parse_lines(["the cat sat on the mat"], model=str(tiny_model_path))
    assert parsed.tree == build_tree(parsed.distances, parsed.tokens, "paper")
    [sym] = parse_lines(["the cat sat on the mat"], model=str(tiny_model_path), split="symmetric")
    assert sym.tree == build_tree(sym.distances, sym.tokens, "symmetric")


def test_parse_known_punctuation_is_fed(tmp_path, tiny_corpus):
    """Punctuation that is in the vocabulary (a --keep-punct model) is read by the model."""
    from conftest import TINY_MODEL, QuietReporter, tiny_train_config
    from onlstm_cli.modelfile import load_model
    from onlstm_cli.training.lm.train import train_model
    out = tmp_path / "punct.onlstm"
    train_model(tiny_corpus["train"], out, dict(TINY_MODEL), tiny_train_config(epochs=1), keep_punct=True,
                reporter=QuietReporter())
    assert "," in load_model(out).vocab
    [parsed] = parse_lines(["Hello , world !"], model=str(out))
    assert all(d is not None for d in parsed.distances)
    assert tree_leaves(parsed.tree) == parsed.tokens


def test_parse_only_punctuation(tiny_model_path):
    [parsed] = parse_lines(["! , ?"], model=str(tiny_model_path))
    assert tree_leaves(parsed.tree) == ["!", ",", "?"]
    assert parsed.distances == [None, None, None]


def test_parse_single_word(tiny_model_path):
    [parsed] = parse_lines(["hello"], model=str(tiny_model_path))
    assert parsed.tree == "hello" and len(parsed.distances) == 1


def test_empty_lines_give_no_tree(tiny_model_path):
    results = parse_lines(["", "the cat", "   ", "a dog sat"], model=str(tiny_model_path))
    assert results[0].tree is None and results[2].tree is None
    assert results[0].tokens == [] and results[0].distances == []
    assert tree_leaves(results[1].tree) == ["the", "cat"]
    assert tree_leaves(results[3].tree) == ["a", "dog", "sat"]


CONTROL_LINES = ["\x00\x00\x00", "\t\x1b\x7f", "\x85", "\x1b\x9b "]


@pytest.mark.parametrize("pretokenized", [False, True])
def test_a_line_of_control_characters_is_an_empty_line(tiny_model_path, pretokenized):
    """Control characters are read as spaces: a line of nothing else has no words, like an empty line, and
    the lines around it are parsed (it used to end the whole block: no tree has zero words)."""
    lines = ["the cat", *CONTROL_LINES, "a dog sat"]
    results = parse_lines(lines, model=str(tiny_model_path), pretokenized=pretokenized)
    assert [(r.tokens, r.tree, r.distances, r.error) for r in results[1:-1]] == [([], None, [], None)] * 4
    assert tree_leaves(results[0].tree) == ["the", "cat"] and tree_leaves(results[-1].tree) == ["a", "dog", "sat"]



def test_a_byte_order_mark_inside_a_text_is_read_as_a_space(tiny_model_path):
    """U+FEFF where files were joined (mid-file, or mid-line) is in no word: it used to stay inside one."""
    results = parse_lines(["the\ufeffcat", "\ufeff", "\ufeffa dog"], model=str(tiny_model_path))
    assert results[0].tokens == ["the", "cat"] and results[2].tokens == ["a", "dog"]
    assert (results[1].tokens, results[1].tree, results[1].error) == ([], None, None)

def test_a_line_its_tokenizer_finds_no_token_in_is_an_empty_line(tiny_model_path, tiny_loaded, monkeypatch):
    from onlstm_cli.text import tokenizers
    kind = tiny_loaded.tokenizer.kind
    monkeypatch.setitem(tokenizers.TOKENIZERS, kind, lambda line: [] if line == "~~" else line.split())
    results = parse_lines(["the cat", "~~", "a dog"], model=str(tiny_model_path))
    assert [r.tree for r in results][1] is None and results[1].tokens == []
    assert tree_leaves(results[2].tree) == ["a", "dog"]


def test_parse_pretokenized(tiny_model_path):
    [parsed] = parse_lines(["don't stop."], model=str(tiny_model_path), pretokenized=True)
    assert parsed.tokens == ["don't", "stop."]
    [ptb] = parse_lines(["don't stop."], model=str(tiny_model_path))
    assert ptb.tokens == ["do", "n't", "stop", "."]


def test_parse_batching_does_not_change_trees(tiny_model_path):
    lines = [" ".join(s) for s in SENTENCES]
    together = parse_lines(lines, model=str(tiny_model_path), batch_size=128)
    apart = parse_lines(lines, model=str(tiny_model_path), batch_size=1)
    for a, b in zip(together, apart):
        assert a.tokens == b.tokens
        assert a.distances == pytest.approx(b.distances, abs=1e-5)


def test_parse_stream_keeps_order_across_blocks(tiny_model_path):
    lines = [" ".join(s) for s in SENTENCES] + ["", "a dog"]
    from onlstm_cli.api import Parser
    streamed = list(Parser(tiny_model_path).parse_lines(iter(lines), block=2))
    assert [p.tokens for p in streamed] == [p.tokens for p in parse_lines(lines, model=str(tiny_model_path))]
    assert len(streamed) == len(lines)


def test_model_cache_loads_once(tiny_model_path, monkeypatch):
    import onlstm_cli.modelfile as modelfile
    calls = []
    real = modelfile.load_model
    monkeypatch.setattr(modelfile, "load_model", lambda p: calls.append(p) or real(p))
    cache = ModelCache()
    assert cache.get(Path(tiny_model_path)) is cache.get(Path(tiny_model_path))
    assert len(calls) == 1


def test_prepare_marks_unknown_punctuation_only(tiny_loaded):
    tokens, fed_tokens, fed = prepare(tiny_loaded, "Zebra , 29 cats !")
    assert tokens == ["Zebra", ",", "29", "cats", "!"]
    assert fed == [True, False, True, True, False]  # unknown words are fed (as <unk>), punctuation is not
    assert fed_tokens == ["zebra", "N", "cats"]


def test_prepare_reads_a_symbol_the_vocabulary_lacks_as_an_unknown_word(tiny_loaded):
    """`&` and `%` are words in a treebank (PTB: CC, NN): read, as unknown words; a mark it lacks is not."""
    tokens, fed_tokens, fed = prepare(tiny_loaded, "cats & dogs , 5 %", pretokenized=True)
    assert "&" not in tiny_loaded.vocab and "%" not in tiny_loaded.vocab
    assert fed == [True, True, True, False, True, True] and fed_tokens == ["cats", "&", "dogs", "N", "%"]


# --- attach_skipped -------------------------------------------------------------------------------------

def check_attached(tokens, fed, expected):
    positions = [i for i, f in enumerate(fed) if f]
    inner = build_tree(list(range(len(positions)))[::-1], positions) if positions else None
    tree = attach_skipped(inner, fed, tokens)
    assert tree_leaves(tree) == tokens
    if expected is not None:
        assert tree == expected
    return tree


def test_attach_nothing_skipped():
    # distances decreasing → right-branching [a, [b, c]]
    check_attached(["a", "b", "c"], [True, True, True], ["a", ["b", "c"]])


def test_attach_leading_skipped():
    check_attached(["``", "(", "a", "b"], [False, False, True, True], ["``", ["(", ["a", "b"]]])


def test_attach_trailing_skipped():
    check_attached(["a", "b", ".", "''"], [True, True, False, False], [[["a", "b"], "."], "''"])


def test_attach_inner_skipped_goes_to_the_word_before():
    check_attached(["a", ",", "b", "c"], [True, False, True, True], [["a", ","], ["b", "c"]])
    check_attached(["a", "b", ",", "--", "c"], [True, True, False, False, True], ["a", [[["b", ","], "--"], "c"]])


def test_attach_an_opening_bracket_or_quote_inside_goes_to_the_word_after():
    check_attached(["a", ",", "(", "b", ")", "c"], [True, False, False, True, False, True],
                   [["a", ","], [["(", ["b", ")"]], "c"]])
    check_attached(["a", '"', "b", '"', "c"], [True, False, True, False, True], ["a", [['"', ["b", '"']], "c"]])


def test_attach_a_closing_quote_after_the_last_word_to_it_and_the_full_stop_at_the_root():
    check_attached(["a", "“", "b", "”", "."], [True, False, True, False, False], [["a", ["“", ["b", "”"]]], "."])
    check_attached(["a", "b", ")", "."], [True, True, False, False], [[["a", "b"], ")"], "."])  # ) opened nowhere


def test_attach_all_kinds_at_once():
    tokens = ["(", "a", ",", "b", ")", "."]
    fed = [False, True, False, True, False, False]
    check_attached(tokens, fed, ["(", [[[["a", ","], "b"], ")"], "."]])


def test_attach_single_fed_word():
    check_attached([",", "a", "!"], [False, True, False], [",", ["a", "!"]])


def test_attach_nothing_fed():
    tree = check_attached(["!", ",", "?"], [False, False, False], None)
    assert isinstance(tree, list)


def test_attach_deep_tree_does_not_recurse():
    n = 3000
    tokens = [f"w{i}" if i % 2 == 0 else "," for i in range(n)]
    fed = [i % 2 == 0 for i in range(n)]
    tree = check_attached(tokens, fed, None)
    assert len(tree_leaves(tree)) == n


# --- resolve_model ------------------------------------------------------------------------------------------

def test_resolve_model_by_script():
    zh = models_dir() / BUNDLED_MODELS["zh"]
    en = models_dir() / BUNDLED_MODELS["en"]
    assert resolve_model(None, "爱真的需要勇气") == zh
    assert resolve_model(None, "The cat sat.") == en
    assert resolve_model(None, "") == en
    assert resolve_model(None, "mixed text with 中文") == zh
    assert resolve_model("en") == en
    assert resolve_model("zh") == zh
    assert resolve_model("en-ptb") == en  # the bundled file's stem works too
    assert en.name == "en-ptb.onlstm" and zh.name == "zh-pcfg.onlstm"


def test_bundled_models_dir_is_the_repo_models_folder():
    here = Path(__file__).resolve().parents[2] / "models"
    if not any(here.glob("*.onlstm")):
        pytest.skip("no bundled models in the checkout")
    assert models_dir().resolve() == here.resolve()


def test_resolve_model_passes_paths_through(tmp_path):
    assert resolve_model(str(tmp_path / "x.onlstm")) == tmp_path / "x.onlstm"
    assert resolve_model("some/dir/model.bin") == Path("some/dir/model.bin")
    existing = tmp_path / "model"
    existing.write_bytes(b"")
    assert resolve_model(str(existing)) == existing
    assert resolve_model("missing.onlstm", "爱") == Path("missing.onlstm")  # an explicit name wins over script


@pytest.mark.parametrize("name", ["fr", "english", "xx-model"])
def test_resolve_unknown_name(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no file of that name in the working directory
    with pytest.raises(ParseError) as excinfo:
        resolve_model(name)
    assert name in str(excinfo.value) and "\n" not in str(excinfo.value)


# --- right-to-left models and ensembles ---------------------------------------------------------------

def reading_right_to_left(loaded):
    """The same weights, marked as a right-to-left model."""
    import copy
    twin = copy.copy(loaded)
    twin.model = copy.copy(loaded.model)  # the same weights; its own config
    twin.model.config = dataclasses.replace(loaded.model.config, reverse=True)
    twin.members = []
    return twin


def test_a_right_to_left_model_reads_the_reversed_sentence_and_gives_boundaries_before_words(tiny_loaded):
    backwards = reading_right_to_left(tiny_loaded)
    got = sentence_distances(backwards, SENTENCES, batch_size=4)
    read = sentence_distances(tiny_loaded, [s[::-1] for s in SENTENCES], batch_size=4)
    for sentence, g, r in zip(SENTENCES, got, read):
        after = r[::-1]  # after[t]: the boundary between word t and word t + 1
        assert len(g) == len(sentence)
        assert g[1:] == pytest.approx(after[:-1], abs=1e-6)
        assert g[0] == pytest.approx(min(after), abs=1e-6)  # never preferred over a boundary inside
    per_layer = sentence_distances(backwards, SENTENCES, batch_size=4, all_layers=True)
    for layers, g in zip(per_layer, got):
        assert layers[tiny_loaded.parse_layer - 1] == pytest.approx(g, abs=1e-6)


def test_standard_scores_and_scaled_ranks():
    assert standard_scores([1.0, 2.0, 3.0]) == pytest.approx([-1.2247449, 0.0, 1.2247449])
    assert standard_scores([5.0, 5.0]) == [0.0, 0.0]
    assert scaled_ranks([10.0, 30.0, 20.0]) == [0.0, 1.0, 0.5]
    assert scaled_ranks([1.0, 1.0, 2.0]) == [0.25, 0.25, 1.0]  # ties share their mean rank
    assert scaled_ranks([7.0]) == [0.0]


@pytest.mark.parametrize("combine", ["mean", "zscore", "rank"])
def test_an_ensemble_combines_its_models_distances_per_sentence(tiny_loaded, combine):
    import copy
    backwards = reading_right_to_left(tiny_loaded)
    ensemble = copy.copy(tiny_loaded)
    ensemble.members = [backwards]
    got = sentence_distances(ensemble, SENTENCES, batch_size=3, combine=combine)
    forward = sentence_distances(tiny_loaded, SENTENCES)
    reverse = sentence_distances(backwards, SENTENCES)
    scale = {"mean": list, "zscore": standard_scores, "rank": scaled_ranks}[combine]
    for g, f, r in zip(got, forward, reverse):
        expected = [(a + b) / 2 for a, b in zip(scale(f), scale(r))]
        assert g == pytest.approx(expected, abs=1e-5)
    with pytest.raises(ParseError, match="combination"):
        sentence_distances(ensemble, SENTENCES, combine="median")


def test_weighted_combination():
    assert combine_distances([[1.0, 3.0], [3.0, 1.0]], "mean", [3.0, 1.0]) == pytest.approx([1.5, 2.5])
    assert combine_distances([[1.0, 3.0], [3.0, 1.0]]) == pytest.approx([2.0, 2.0])
    assert combine_distances([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]], "rank", [1.0, 0.0]) == pytest.approx([0.0, 0.5, 1.0])


def test_a_character_model_gives_each_word_its_first_characters_distance(tiny_loaded):
    """The same weights reading characters: a word's distance is the one its first character gets."""
    import copy
    chars = copy.copy(tiny_loaded)
    chars.tokenizer = dataclasses.replace(tiny_loaded.tokenizer, characters=True)
    chars.members = []
    # CJK "words" of one to three characters, each character a word of the tiny model's vocabulary
    # (unknown to it: they read as <unk>, which is enough to check where the distances come from)
    words = [["猫", "坐在", "垫子上"], ["狗"], [], ["我们", "N", "年"]]
    got = sentence_distances(chars, words, batch_size=2)
    per_char = sentence_distances(tiny_loaded, [[c for w in s for c in (list(w) if w != "N" else [w])]
                                                for s in words], batch_size=2)
    for sentence, g, d in zip(words, got, per_char):
        starts = [sum(len(w) if w != "N" else 1 for w in sentence[:k]) for k in range(len(sentence))]
        assert g == pytest.approx([d[i] for i in starts], abs=1e-6)
    backwards = reading_right_to_left(chars)
    got_back = sentence_distances(backwards, words, batch_size=2)
    per_char_back = sentence_distances(reading_right_to_left(tiny_loaded),
                                       [[c for w in s for c in (list(w) if w != "N" else [w])] for s in words])
    for sentence, g, d in zip(words, got_back, per_char_back):
        starts = [sum(len(w) if w != "N" else 1 for w in sentence[:k]) for k in range(len(sentence))]
        assert g == pytest.approx([d[i] for i in starts], abs=1e-6)  # the boundary before each word


def test_a_jieba_model_gives_each_word_the_distance_of_the_jieba_word_it_begins(tiny_loaded):
    """Words segmented unlike jieba (a treebank's) are read as jieba cuts them; a word that begins inside a
    jieba word is bound tighter than any boundary of its sentence."""
    import copy
    jieba_model = copy.copy(tiny_loaded)
    jieba_model.tokenizer = dataclasses.replace(tiny_loaded.tokenizer, kind="jieba")
    jieba_model.members = []
    words = [["我们", "爱", "北", "京", "天安门"], ["狗"], []]
    units = [jieba_model.tokenizer.reading(s)[0] for s in words]
    got = sentence_distances(jieba_model, words, batch_size=2)
    as_read = sentence_distances(tiny_loaded, units, batch_size=2)
    assert got[0][:3] == pytest.approx(as_read[0][:3], abs=1e-6)  # 我们 爱 北(京)
    assert got[0][4] == pytest.approx(as_read[0][-1], abs=1e-6)  # 天安门
    assert got[0][3] < min(as_read[0])  # 京 begins inside 北京
    assert got[1] == pytest.approx(as_read[1], abs=1e-6) and got[2] == []
    layers = sentence_distances(jieba_model, words, all_layers=True)
    assert layers[0][jieba_model.parse_layer - 1] == pytest.approx(got[0], abs=1e-6)


def test_a_jieba_models_own_cut_is_read_as_it_is(tiny_loaded):
    import copy
    jieba_model = copy.copy(tiny_loaded)
    jieba_model.tokenizer = dataclasses.replace(tiny_loaded.tokenizer, kind="jieba")
    jieba_model.members = []
    words = [["我们", "爱", "北", "京"]]
    as_given = sentence_distances(tiny_loaded, words)
    assert sentence_distances(jieba_model, words, model_tokens=True)[0] == pytest.approx(as_given[0], abs=1e-6)
    assert sentence_distances(jieba_model, words)[0][3] < min(as_given[0])  # cut again: 京 is inside 北京


def test_a_model_trained_now_cuts_its_trees_at_punctuation_marks_first(tiny_model_path):
    """A file written by `train` since issue 40 says "boundaries": the words after a mark are split before any
    other, whatever the model's distances; --punctuation ignore (and the bundled files) keep the model's tree."""
    from onlstm_cli.modelfile import load_model
    from onlstm_cli.trees import tree_spans
    assert load_model(tiny_model_path).punctuation == "boundaries"
    assert load_model(models_dir() / "en-ptb.onlstm").punctuation == "ignore"
    line = "the cat sat on the mat , a dog sat"
    [cut] = parse_lines([line], model=str(tiny_model_path))
    [plain] = parse_lines([line], model=str(tiny_model_path), punctuation="ignore")
    assert cut.distances == plain.distances  # the model's, whatever the rule
    assert (0, 7) in tree_spans(cut.tree) and (7, 10) in tree_spans(cut.tree)  # "... mat ," | "a dog sat"
    fed = [t != "," for t in plain.tokens]
    inner = build_tree([d for d in plain.distances if d is not None], [i for i, f in enumerate(fed) if f], "paper")
    assert plain.tree == attach_skipped(inner, fed, plain.tokens)
    with pytest.raises(ValueError, match="unknown punctuation rule"):
        from onlstm_cli.induction.line_parser import LineParser
        LineParser(str(tiny_model_path), punctuation="commas")


@pytest.mark.parametrize("rising", [True, False])
def test_a_long_line_is_parsed_in_time_linear_in_its_length(tiny_model_path, monkeypatch, rising):
    """Everything between the model's distances and the tree: tokens, marks that pair or not, the cut at them, the
    tree and the marks put back. Distances that rise or fall along the line made the tree's top-down search
    quadratic (and marks' pairing searched the open ones): 56,000 tokens took 20 s, these a minute or more."""
    from onlstm_cli.induction import distances as parser_module

    def monotone(loaded, sentences, *args, **kwargs):
        return [[float(k if rising else -k) for k in range(len(s))] for s in sentences]

    monkeypatch.setattr(parser_module, "sentence_distances", monotone)
    tokens = ["the", "cat", "(", "’", '"', "sat", ","] * 14_000  # 98,000: under MAX_SENTENCE_WORDS
    [parsed] = parse_lines([" ".join(tokens)], model=str(tiny_model_path))
    assert parsed.error is None and tree_leaves(parsed.tree) == parsed.tokens and len(parsed.tokens) >= len(tokens)
