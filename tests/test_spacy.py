"""The spaCy component (the `spacy` extra): skipped where spaCy is not installed."""
from __future__ import annotations

import nltk
import pytest

spacy = pytest.importorskip("spacy", reason="spaCy is not installed (pip install 'onlstm[spacy]')")


@pytest.fixture
def nlp(tiny_model_path):
    import onlstm_cli.spacy_component  # noqa: F401  (registers the factory where no entry point was installed)
    pipeline = spacy.blank("en")
    pipeline.add_pipe("sentencizer")
    pipeline.add_pipe("onlstm", config={"model": str(tiny_model_path)})
    return pipeline


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


def test_control_characters_inside_spacy_tokens_keep_one_tree_leaf_a_token(nlp):
    """The parser reads control characters as spaces; inside a spaCy token they must not split it."""
    doc = nlp("The cat\x00s sat \x07 on the mat.")
    [sent] = list(doc.sents)
    leaves = nltk.Tree.fromstring(sent._.parse_string).leaves()
    assert len(leaves) == len(sent)
    assert not any(ord(c) < 32 for leaf in leaves for c in leaf)
