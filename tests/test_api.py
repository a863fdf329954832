"""`from onlstm_cli import Parser`: the Python API, its NLTK shape, and that it gives the CLI's trees."""
from __future__ import annotations

import nltk
import pytest
from nltk.parse.api import ParserI

from onlstm_cli import Parser
from onlstm_cli.text.formats import to_bracket
from onlstm_cli.induction.distances import parse_lines

LINES = ["The cat sat on the mat.", "A dog saw a bird near the house.", "", "Hello , world !"]


def test_parse_gives_the_tree_parse_lines_gives_as_an_nltk_tree(tiny_model_path):
    parser = Parser.load(tiny_model_path)
    expected = parse_lines(LINES, model=str(tiny_model_path))
    for line, want in zip(LINES, expected):
        if want.tree is None:  # an empty line: parse_sents gives an empty S, parse refuses it (below)
            assert next(parser.parse_sents([line])) == nltk.Tree("S", [])
            continue
        tree = parser.parse(line)
        assert isinstance(tree, nltk.Tree)
        assert tree.leaves() == want.tokens
        # the same tree `onlstm parse -f bracket` prints
        assert nltk.Tree.fromstring(to_bracket(want.tree)) == tree


def test_parse_sents_streams_in_order_in_batches(tiny_model_path):
    parser = Parser(tiny_model_path, batch_size=2)
    consumed = []

    def lines():
        for line in LINES * 3:
            consumed.append(line)
            yield line

    trees = parser.parse_sents(lines())
    first = next(trees)
    assert first.leaves() == ["The", "cat", "sat", "on", "the", "mat", "."]
    assert len(consumed) < len(LINES) * 3  # it did not read everything before the first tree
    rest = list(trees)
    assert [t.leaves() for t in [first, *rest]] == [parser.parse(line).leaves() if line else [] for line in LINES * 3]


def test_tokens_are_kept_as_given_and_distances_come_per_token(tiny_model_path):
    parser = Parser(tiny_model_path)
    tokens = ["the", "cat", "sat", "on", "the", "mat"]
    tree = parser.parse(tokens)
    assert tree.leaves() == tokens
    distances = parser.distances(tokens)
    assert len(distances) == len(tokens) and all(isinstance(d, float) for d in distances)
    assert parser.distances("the cat , sat")[2] is None  # punctuation the model has no word for
    # token lists in parse_sents, as NLTK parsers take them, mixed with text, in order
    mixed = [tokens, "The cat sat.", ["Hello", ",", "world"], tokens]
    trees = list(parser.parse_sents(mixed))
    assert [t.leaves() for t in trees] == [tokens, ["The", "cat", "sat", "."], ["Hello", ",", "world"], tokens]
    assert trees[0] == tree == trees[3]
    assert [t.leaves() for t in Parser(tiny_model_path, pretokenized=True).parse_sents([tokens])] == [tokens]


def test_it_works_where_nltk_expects_a_parser(tiny_model_path):
    parser = Parser(tiny_model_path)
    assert isinstance(parser, ParserI)
    assert parser.parse_one("The cat sat.") == parser.parse("The cat sat.")
    assert parser.parse_all("The cat sat.") == [parser.parse("The cat sat.")]


def test_a_bad_model_fails_at_load_with_one_line(tmp_path):
    from onlstm_cli.errors import OnlstmError
    with pytest.raises(OnlstmError) as error:
        Parser.load(tmp_path / "missing.onlstm")
    assert "\n" not in str(error.value)
    with pytest.raises(ValueError):
        Parser(batch_size=0)


def test_parse_batches_answers_each_batch_before_reading_the_next(tiny_model_path):
    """What `onlstm parse` runs: a batch (what stdin had ready) is parsed and answered as one list."""
    parser = Parser(tiny_model_path)
    batches = [["The cat sat on the mat.", ""], ["Hello , world !"]]
    consumed = []

    def source():
        for batch in batches:
            consumed.append(batch)
            yield batch

    answers = parser.parse_batches(source())
    first = next(answers)
    assert consumed == batches[:1]  # the second batch was not waited for
    assert [p.tokens for p in first] == [["The", "cat", "sat", "on", "the", "mat", "."], []]
    assert [[p.tokens for p in batch] for batch in answers] == [[["Hello", ",", "world", "!"]]]
    assert [p.tokens for p in parser.parse_lines(line for batch in batches for line in batch)] == \
        [p.tokens for batch in parser.parse_batches(batches) for p in batch]


# --- input checks: documented exception types, one clear line each ------------------------------------------

BAD_SENTENCES = {  # sentence → (exception type, words of its message)
    "None": (None, TypeError, "not NoneType"),
    "a number": (3, TypeError, "not int"),
    "bytes": (b"the cat", TypeError, "not bytes"),
    "a token that is not a string": (["the", 3], TypeError, "token 2 is a int"),
    "an empty token": (["", "x"], ValueError, "token 1 is empty"),
    "a token with a space": (["a b", "c"], ValueError, "token 1 ('a b') holds whitespace"),
    "a token with a tab": (["a\tb"], ValueError, "holds whitespace"),
    "a token with a control character": (["a\x00b"], ValueError, "control character"),
}


@pytest.mark.parametrize("case", sorted(BAD_SENTENCES))
def test_a_bad_sentence_is_refused_clearly(case, tiny_model_path):
    parser = Parser(tiny_model_path)
    sentence, kind, words = BAD_SENTENCES[case]
    for call in (parser.parse, parser.distances):
        with pytest.raises(kind) as error:
            call(sentence)
        assert words in str(error.value) and "\n" not in str(error.value)
    with pytest.raises(kind) as error:
        list(parser.parse_sents(["The cat sat.", sentence]))
    assert str(error.value).startswith("sentence 2: ")


def test_parse_sents_takes_an_iterable_of_sentences(tiny_model_path):
    parser = Parser(tiny_model_path)
    for bad in (None, "The cat sat.", 3):
        with pytest.raises(TypeError, match="iterable of sentences"):
            parser.parse_sents(bad)
    assert list(parser.parse_sents(iter([]))) == []
    assert list(parser.parse_sents([[], ""])) == [nltk.Tree("S", [])] * 2  # no words: an empty S, as an empty line


@pytest.mark.parametrize("sentence", ["", "   ", "\x00", "\x00\x00\x00", "\t\x1b\x7f", "\x85", []],
                         ids=["empty", "spaces", "NUL", "NULs", "tab ESC DEL", "NEL", "no tokens"])
def test_parse_refuses_a_sentence_without_words(sentence, tiny_model_path):
    """parse returns one tree, and no tree has zero words: a clear ValueError, not an empty (S )."""
    parser = Parser(tiny_model_path)
    with pytest.raises(ValueError, match="the sentence has no words") as error:
        parser.parse(sentence)
    assert "\n" not in str(error.value)
    assert list(parser.parse_sents([sentence, "The cat sat."]))[0] == nltk.Tree("S", [])  # a line of a stream


def test_parse_reads_an_iterator_of_tokens_once(tiny_model_path):
    parser = Parser(tiny_model_path)
    assert parser.parse(iter(["the", "cat", "sat"])) == parser.parse(["the", "cat", "sat"])
    assert parser.parse(iter(["the", "cat", "sat"])).leaves() == ["the", "cat", "sat"]
    assert parser.parse(token for token in ("a", "dog")).leaves() == ["a", "dog"]


BAD_OPTIONS = {
    "batch_size a string": (dict(batch_size="8"), TypeError, "batch_size must be a whole number"),
    "batch_size a bool": (dict(batch_size=True), TypeError, "batch_size"),
    "batch_size zero": (dict(batch_size=0), ValueError, "batch_size must be at least 1"),
    "layer a float": (dict(layer=1.5), TypeError, "layer"),
    "layer zero": (dict(layer=0), ValueError, "layer must be at least 1"),
    "split unknown": (dict(split="bogus"), ValueError, "expected one of paper, symmetric"),
    "device not a string": (dict(device=0), TypeError, "device"),
    "pretokenized not a bool": (dict(pretokenized="yes"), TypeError, "pretokenized"),
    "warn not a bool": (dict(warn=None), TypeError, "warn must be True or False"),
}


@pytest.mark.parametrize("case", sorted(BAD_OPTIONS))
def test_bad_options_are_refused_before_any_model_is_read(case, monkeypatch):
    from onlstm_cli.induction.models import ModelCache
    monkeypatch.setattr(ModelCache, "get", lambda *a: pytest.fail("read a model for bad options"))
    options, kind, words = BAD_OPTIONS[case]
    with pytest.raises(kind, match=words):
        Parser.load("en", **options)


def test_a_model_that_is_no_name_is_refused(tmp_path):
    with pytest.raises(ValueError, match="model is empty"):
        Parser.load("")
    with pytest.raises(ValueError, match="model is empty"):
        Parser.load("  ")
    with pytest.raises(TypeError, match="model must be"):
        Parser.load(3)
    from onlstm_cli.errors import OnlstmError
    with pytest.raises(OnlstmError, match="is a directory"):
        Parser.load(tmp_path)


# --- a warning when the model cannot read the text ---------------------------------------------------------

def test_text_the_model_cannot_read_is_warned_about_once_per_parser():
    import warnings

    from onlstm_cli.api import UnreadableTextWarning
    parser = Parser.load("en")
    with pytest.warns(UnreadableTextWarning, match="CJK script") as caught:
        tree = parser.parse("爱真的需要勇气")
        parser.parse("我们爱和平")
    assert tree.leaves() == ["爱真的需要勇气"]  # still a tree, but the warning says what it is worth
    assert len(caught) == 1
    # what the CLI does: no warnings.warn, its own line on stderr for each model that cannot read the text
    messages = []
    quiet = Parser.load("en", warn=False)
    batches = [["Der Hund schläft heute unter dem Tisch"], ["Die Katze auch"], ["The cat sat."]]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        answered = list(quiet.unreadable_warnings(quiet.parse_batches(batches), messages.append))
    assert [[p.tokens for p in batch] for batch in answered][2] == [["The", "cat", "sat", "."]]
    assert len(messages) == 1 and "words are unknown to model en-ptb.onlstm" in messages[0]


def test_latin_text_to_the_chinese_model_is_warned_about_and_fitting_text_is_not(recwarn):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning for text the model reads
        Parser.load("en").parse("The cat sat on the mat.")
        Parser.load("zh").parse("我们都爱和平。")
        Parser().parse_sents(["The cat sat.", "我们都爱和平。"])  # by script: each line to its model
    with pytest.warns(UserWarning, match="not in CJK script"):
        Parser.load("zh").parse("The cat sat on the mat.")


# --- pickling: a reference to the model, loaded once per process ---------------------------------------------

def test_a_parser_pickles_to_a_reference_and_back(tiny_model_path, monkeypatch):
    import pickle

    from onlstm_cli.induction.models import ModelCache
    parser = Parser.load(tiny_model_path, batch_size=3, layer=1, split="symmetric")
    parser.parse("The cat sat.")
    data = pickle.dumps(parser)
    assert len(data) < 10_000
    assert len(pickle.dumps(Parser.load("en"))) < 10_000  # the bundled model: 17 MB of weights, by name
    copy = pickle.loads(data)
    assert (copy.model, copy.batch_size, copy.layer, copy.split) == (str(tiny_model_path), 3, 1, "symmetric")
    loads = []
    monkeypatch.setattr(ModelCache, "get", lambda *a: loads.append(a))
    assert copy.parse("The cat sat on the mat.") == parser.parse("The cat sat on the mat.")
    assert loads == []  # this process has the model already: the copy shares it


def test_a_relative_path_is_pickled_as_an_absolute_one(tiny_model_path, tmp_path, monkeypatch):
    import pickle
    monkeypatch.chdir(tiny_model_path.parent)
    data = pickle.dumps(Parser(tiny_model_path.name))
    monkeypatch.chdir(tmp_path)  # a worker in another directory still finds the file
    assert pickle.loads(data).model == str(tiny_model_path)
    assert pickle.loads(pickle.dumps(Parser("en"))).model == "en"  # a bundled name stays a name


def test_a_process_pool_maps_parse_to_the_trees_of_this_process(tiny_model_path):
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    parser = Parser.load(tiny_model_path)
    lines = [line for line in LINES * 3 if line]  # (parse refuses an empty line: no tree has zero words)
    # spawn: the workers start without this process's models, so each loads the file from the reference
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        trees = list(pool.map(parser.parse, lines))
    assert trees == [parser.parse(line) for line in lines]
    assert all(isinstance(tree, nltk.Tree) for tree in trees)


# --- trees that Jupyter draws without svgling ------------------------------------------------------------------

def test_a_tree_draws_itself_as_svg_with_every_word(tiny_model_path):
    import re
    import xml.dom.minidom
    tree = Parser(tiny_model_path).parse(["the", "cat", "<&>", "sat", "—", "on", "the", "mat"])
    assert isinstance(tree, nltk.Tree)
    svg = tree._repr_svg_()
    assert svg.startswith("<svg") and svg.endswith("</svg>")
    xml.dom.minidom.parseString(svg)  # well-formed: the word <&> is escaped
    words = re.findall(r'<text class="word"[^>]*>([^<]*)</text>', svg)
    assert words == ["the", "cat", "&lt;&amp;&gt;", "sat", "—", "on", "the", "mat"]
    # the parser's distances: a bar per word the model read (<&>, a symbol, is read as an unknown word); the dash
    # (a mark it has no word for) is grey
    assert svg.count('class="bar"') == 7 and svg.count('class="unread"') == 1
    assert svg in tree._repr_html_()


def test_svg_of_any_tree_shape(tiny_model_path):
    from onlstm_cli.api import ParseTree
    deep = ParseTree("S", [ParseTree("X", ["w0"])])
    for k in range(1, 3000):  # a chain deeper than Python's recursion limit
        deep = ParseTree("S", [deep, ParseTree("X", [f"w{k}"])])
    svg = deep._repr_svg_()
    assert svg.count('class="word"') == 3000 and "w2999" in svg
    assert "<svg" in ParseTree("S", [])._repr_svg_()  # an empty line
    assert "<svg" in next(Parser(tiny_model_path).parse_sents([""]))._repr_svg_()


def documented_imports() -> set[str]:
    """Every name a `from onlstm_cli import ...` line of the README or docs/ shows."""
    import re
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    names = set()
    for doc in [root / "README.md", *sorted((root / "docs").rglob("*.md"))]:
        for line in re.findall(r"from onlstm_cli import ([\w, ]+)", doc.read_text(encoding="utf-8")):
            names.update(name.strip() for name in line.split(",") if name.strip())
    return names


def test_every_documented_name_and_every_name_in_all_imports():
    """Issue 50 item 16: the lazy-import table sent read_gold and Tokenizer to modules without them."""
    import onlstm_cli
    documented = documented_imports()
    assert {"Parser", "read_gold", "load_model", "evaluate"} <= documented  # the docs' lines were found
    assert documented <= set(onlstm_cli.__all__)
    namespace: dict = {}
    exec("from onlstm_cli import *", namespace)  # every name in __all__, as a user's star import takes them
    assert set(onlstm_cli.__all__) <= set(namespace)
    from onlstm_cli.text.tokenizers import Tokenizer
    from onlstm_cli.text.treebanks import read_gold
    assert namespace["Tokenizer"] is Tokenizer and namespace["read_gold"] is read_gold


def test_parse_sents_answers_a_sentence_not_parsed_and_goes_on(tiny_model_path, monkeypatch):
    """Issue 50: a sentence no model reads ended the stream; it gets an empty S that says why, as `onlstm parse`
    answers such a line with an empty line and a message, and the sentences after it are parsed."""
    from onlstm_cli import induction
    from onlstm_cli.api import NotParsedWarning
    monkeypatch.setattr(induction.distances, "MAX_SENTENCE_WORDS", 3)
    with pytest.warns(NotParsedWarning, match="sentence 2 not parsed: 4 words, more than the 3"):
        trees = list(Parser(tiny_model_path).parse_sents(["the cat", "a b c d", "a dog"]))
    assert [tree.leaves() for tree in trees] == [["the", "cat"], [], ["a", "dog"]]
    assert trees[0].error is None and "more than the 3" in trees[1].error
    with pytest.warns(NotParsedWarning, match="sentence 1 not parsed: no bundled model reads Hangul text"):
        assert list(Parser().parse_sents(["한국어 문장"])) == [nltk.Tree("S", [])]


def test_parse_sents_answers_the_sentences_before_a_failure(tiny_model_path):
    """Issue 50: a generator that failed after two sentences gave no tree: the two are answered, then it fails."""
    def sentences():
        yield "the cat sat"
        yield ["a", "dog"]
        raise OSError("the source failed")
    for source, failure in ((sentences(), OSError), (["the cat sat", ["a", "dog"], ["", "x"]], ValueError)):
        answered = []
        with pytest.raises(failure):
            for tree in Parser(tiny_model_path, batch_size=1).parse_sents(source):
                answered.append(tree.leaves())
        assert answered == [["the", "cat", "sat"], ["a", "dog"]]
