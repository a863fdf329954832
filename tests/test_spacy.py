"""The spaCy component (the `spacy` extra): skipped where spaCy is not installed."""
from __future__ import annotations

import warnings

import nltk
import pytest

spacy = pytest.importorskip("spacy", reason="spaCy is not installed (pip install 'onlstm[spacy]')")

from spacy.tokens import Doc  # noqa: E402

from onlstm_cli.spacy_component import NotAConstituent  # noqa: E402  (also registers the factory)


def pipeline(model_path, lang="en", **config):
    nlp = spacy.blank(lang, **config)
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("onlstm", config={"model": str(model_path)})
    return nlp


@pytest.fixture
def nlp(tiny_model_path):
    return pipeline(tiny_model_path)


def test_each_sentence_gets_the_bracket_tree_and_its_constituents(nlp, tiny_model_path):
    from onlstm_cli import Parser
    doc = nlp("The cat sat on the mat. A dog saw a bird near the house.")
    sentences = list(doc.sents)
    assert len(sentences) == 2
    parser = Parser(tiny_model_path, pretokenized=True)
    for sent in sentences:
        tree = nltk.Tree.fromstring(sent._.parse_string)
        assert tree.leaves() == [token.text for token in sent]
        assert tree == parser.parse([token.text for token in sent])  # spaCy's tokens, not re-tokenized
        constituents = sent._.constituents
        assert constituents[0].text == sent.text  # the sentence first
        # a binary tree over n words has 2n − 1 nodes, each a span of the doc inside the sentence
        assert len(constituents) == 2 * len(sent) - 1
        assert all(sent.start <= c.start < c.end <= sent.end for c in constituents)
        assert {c.text for c in constituents if len(c) == 1} == {token.text for token in sent}


def subtrees_with_spans(tree: nltk.Tree, start: int):
    """(start, end, subtree) for each node of a bracket tree in pre-order, preterminals as the tokens."""
    for child in tree:
        width = len(child.leaves())
        yield start, start + width, child
        if child.height() > 2:
            yield from subtrees_with_spans(child, start)
        start += width


def test_every_constituent_has_benepars_extensions_matching_the_sentence_tree(nlp):
    doc = nlp("The cat sat on the mat. A dog saw a bird near the house.")
    for sent in doc.sents:
        tree = nltk.Tree.fromstring(sent._.parse_string)
        expected = [(sent.start, sent.end, tree)] + [(sent.start + i, sent.start + j, t)
                                                     for i, j, t in subtrees_with_spans(tree, 0)]
        constituents = sent._.constituents
        assert [(c.start, c.end) for c in constituents] == [(i, j) for i, j, _ in expected]  # pre-order
        for c, (_, _, subtree) in zip(constituents, expected):
            assert nltk.Tree.fromstring(c._.parse_string) == subtree
            assert c._.labels == (("S",) if len(c) > 1 or c == sent else ())
            assert [(x.start, x.end) for x in c._.constituents] == [(x.start, x.end) for x in
                                                                    constituents if c.start <= x.start < x.end <= c.end]
            children = c._.children
            if len(c) == 1:
                assert children == []
            else:  # the children tile the constituent, and each one's parent is it
                assert children[0].start == c.start and children[-1].end == c.end
                assert all(a.end == b.start for a, b in zip(children, children[1:]))
                assert all(child._.parent == c for child in children)
        assert sent._.parent is None
        assert all(c._.parent is not None and c._.parent.start <= c.start and c.end <= c._.parent.end
                   for c in constituents[1:])


def test_tokens_have_parse_string_labels_and_parent(nlp):
    doc = nlp("The cat sat on the mat.")
    for token in doc:
        assert token._.parse_string == f"(X {token.text})"
        assert token._.labels == ()
        span = doc[token.i:token.i + 1]
        assert token._.parent == span._.parent and span in token._.parent._.children


def test_a_one_token_sentence_is_its_own_constituent(nlp):
    doc = nlp("Hello")
    [sent] = doc.sents
    assert sent._.parse_string == "(S (X Hello))"
    assert sent._.labels == ("S",) and sent._.parent is None and sent._.children == []
    assert doc[0]._.parent is None


def test_a_span_that_is_no_constituent_raises_a_value_error(nlp):
    doc = nlp("The cat sat on the mat. A dog barked.")
    sent = next(doc.sents)
    constituents = {(c.start, c.end) for c in sent._.constituents}
    other = next((i, j) for i in range(len(sent)) for j in range(i + 2, len(sent) + 1)
                 if (i, j) not in constituents)
    with pytest.raises(NotAConstituent, match="not a constituent"):
        doc[other[0]:other[1]]._.parse_string
    with pytest.raises(ValueError, match="not a constituent"):  # across two sentences
        doc[sent.end - 1:sent.end + 1]._.children
    with pytest.raises(NotAConstituent, match="add the \"onlstm\" component"):
        spacy.blank("en")("Not parsed.")[0:2]._.labels


def test_a_doc_without_sentence_boundaries_is_refused_in_one_line(tiny_model_path):
    nlp = spacy.blank("en")
    nlp.add_pipe("onlstm", config={"model": str(tiny_model_path)})
    with pytest.raises(ValueError, match='add "sentencizer"'):
        nlp("The cat sat.")
    assert len(nlp("")) == 0  # an empty doc has no sentences to parse


def parse_doc(nlp, doc: Doc) -> Doc:
    for _, component in nlp.pipeline:
        doc = component(doc)
    return doc


def test_a_merged_token_with_spaces_is_one_leaf(nlp):
    """After merge_entities (here doc.retokenize, no model needed) a token may hold spaces."""
    doc = nlp.make_doc("I love New York very much. We saw Los Angeles too.")
    with doc.retokenize() as retokenizer:
        retokenizer.merge(doc[2:4])
        retokenizer.merge(doc[9:11])
    assert doc[2].text == "New York" and doc[8].text == "Los Angeles"
    doc = parse_doc(nlp, doc)
    for sent in doc.sents:
        leaves = nltk.Tree.fromstring(sent._.parse_string).leaves()
        assert leaves == [token.text.replace(" ", "_") for token in sent]
    for token in (doc[2], doc[8]):
        assert token._.parse_string == f"(X {token.text.replace(' ', '_')})"
        assert doc[token.i:token.i + 1] in token._.parent._.children


def test_control_characters_inside_spacy_tokens_keep_one_tree_leaf_a_token(nlp):
    """The parser reads control characters as spaces; inside a spaCy token they must not split it."""
    doc = nlp("The cat\x00s sat \x07 on the mat.")
    [sent] = list(doc.sents)
    leaves = nltk.Tree.fromstring(sent._.parse_string).leaves()
    assert len(leaves) == len(sent)
    assert not any(ord(c) < 32 for leaf in leaves for c in leaf)


HOSTILE = {"whitespace only": " \n\t  ", "control characters": "\x1b[31mred\x1b[0m cat \x00 sat.\x07",
           "bidirectional controls": "the \u202ecat sat \u2066on\u2069 it.", "Hangul": "한국어 문장입니다. 고양이.",
           "private use": "\ue000\ue001 \uf8ff.", "5,000 words": "the cat sat on the mat . " * 715}


@pytest.mark.parametrize("text", list(HOSTILE.values()), ids=list(HOSTILE))
def test_hostile_text_gets_a_tree_a_sentence_with_a_leaf_a_token(nlp, text):
    """Issue 50 (not yet tried): the component under hostile text parses every sentence, a leaf a token."""
    doc = nlp(text)
    assert len(doc) and list(doc.sents)
    for sent in doc.sents:
        assert len(nltk.Tree.fromstring(sent._.parse_string).leaves()) == len(sent)
        assert len(sent._.constituents) == 2 * len(sent) - 1


def test_a_sentence_not_parsed_says_why_and_the_others_are_parsed(nlp, monkeypatch):
    """Issue 50: a sentence longer than a sentence may be was skipped silently; its spans then said only
    "not a constituent". It gives a NotParsedWarning, and its spans say why they have no tree."""
    from onlstm_cli import induction
    from onlstm_cli.api import NotParsedWarning
    monkeypatch.setattr(induction.distances, "MAX_SENTENCE_WORDS", 5)
    with pytest.warns(NotParsedWarning, match=r"sentence 2 \(tokens 4-12\) not parsed: 8 words, more than the 5"):
        doc = nlp("The cat sat. A dog saw a bird near it. The end.")
    first, long, last = doc.sents
    assert first._.parse_string.startswith("(S") and last._.parse_string.startswith("(S")
    with pytest.raises(NotAConstituent, match="did not parse the sentence of 'A dog saw a bird near it.': 8 words"):
        long._.parse_string
    with pytest.raises(NotAConstituent, match="did not parse"):
        long[0]._.parent
    again = Doc(nlp.vocab).from_bytes(doc.to_bytes())  # kept with the doc
    with pytest.raises(NotAConstituent, match="did not parse"):
        list(again.sents)[1]._.labels


def test_the_trees_survive_doc_serialization(nlp):
    doc = nlp("The cat sat on the mat. A dog barked.")
    again = Doc(nlp.vocab).from_bytes(doc.to_bytes())
    assert [s._.parse_string for s in again.sents] == [s._.parse_string for s in doc.sents]
    assert [c.text for c in next(again.sents)._.constituents] == [c.text for c in next(doc.sents)._.constituents]


JIEBA = {"nlp": {"tokenizer": {"segmenter": "jieba"}}}


def test_a_chinese_pipeline_with_jieba_words_has_words_as_leaves(tiny_model_path):
    nlp = pipeline(tiny_model_path, "zh", config=JIEBA)
    doc = nlp("我爱北京天安门。爱真的需要勇气。")
    assert [t.text for t in doc][:4] == ["我", "爱", "北京", "天安门"]  # jieba words, offline
    for sent in doc.sents:
        assert nltk.Tree.fromstring(sent._.parse_string).leaves() == [t.text for t in sent]


def test_a_chinese_pipeline_that_cuts_characters_warns(tiny_model_path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pipeline(tiny_model_path, "zh")
    assert any("segmenter" in str(w.message) and "jieba" in str(w.message) for w in caught)


def test_the_punctuation_rule_is_the_model_files_unless_the_config_says(tiny_model_path):
    """A file trained now cuts at punctuation marks ("boundaries"); the config's "ignore" gives the model's
    distances alone: the constituents are those of the parser's tree either way."""
    from onlstm_cli.api import Parser
    from onlstm_cli.spacy_component import sentence_constituents
    line = "the cat sat on the mat , a dog sat"

    def constituents(**config):
        nlp = spacy.blank("en")
        nlp.add_pipe("sentencizer")
        nlp.add_pipe("onlstm", config={"model": str(tiny_model_path), **config})
        [sent] = list(nlp(line).sents)
        assert nlp.get_pipe("onlstm").parser.punctuation == config.get("punctuation")  # passed on to the parser
        return {(c.start, c.end) for c in sent._.constituents}

    def parsers(**options):
        [parsed] = Parser.load(str(tiny_model_path), pretokenized=True, **options).parse_lines([line])
        return set(sentence_constituents(parsed.tree, 10))
    cut = constituents()
    assert cut == parsers() and (0, 7) in cut and (7, 10) in cut  # "… mat ," | "a dog sat"
    assert constituents(punctuation="ignore") == parsers(punctuation="ignore")
