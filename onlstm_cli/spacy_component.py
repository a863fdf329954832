"""A spaCy pipeline component (the optional extra `onlstm[spacy]`) with benepar's extension API:

    import spacy
    nlp = spacy.blank("en")            # or any pipeline that sets sentence boundaries
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("onlstm", config={"model": "en"})
    sent = next(nlp("The cat sat on the mat.").sents)
    sent._.parse_string                # "(S (S (S (X The) (X cat)) …)", as `onlstm parse -f bracket`
    sent._.constituents                # every constituent as a Span, in pre-order (the sentence first)
    sent._.children                    # the constituents one level down; each has ._.parent == sent
    sent._.labels                      # ("S",): see LABEL

Every constituent span (a sentence, each span of its tree, each token) has `_.parse_string`, `_.labels`,
`_.constituents`, `_.children` and `_.parent`, as benepar's spans do; a token has `_.parse_string`,
`_.labels` and `_.parent`. A span that is not a constituent raises NotAConstituent (a ValueError), as
benepar's does. The trees are unlabeled, so every constituent of two tokens or more, and every sentence,
has the one label "S" (the label `parse_string` writes); a token that is not a sentence has none, ().

The component reads spaCy's tokens as they are (no re-tokenization): each token is one leaf. A token with
spaces inside (after `merge_entities` or `doc.retokenize()`: "New York") is read by the model, and written
in `parse_string`, with "_" for each run of spaces ("New_York"). For Chinese, make the tokens words:
`spacy.blank("zh", config={"nlp": {"tokenizer": {"segmenter": "jieba"}}})` (spaCy's default segmenter
cuts characters, so each character would be a leaf). "onlstm" is registered as a spaCy factory when the
package is installed (an entry point) and when this module is imported.
"""
from __future__ import annotations

import warnings

from spacy.language import Language
from spacy.tokens import Doc, Span, Token

from onlstm_cli.api import NotParsedWarning, Parser
from onlstm_cli.text.formats import _preterminal, to_bracket  # (_preterminal: how a bracket tree writes one word)
from onlstm_cli.induction.distances import without_controls
from onlstm_cli.trees import tree_spans

LABEL = "S"
DOC_EXTENSION = "onlstm_constituents"


class NotAConstituent(ValueError):
    """A span that is not a constituent of the doc's onlstm trees (or a doc the component has not parsed)."""


@Language.factory("onlstm", default_config={"model": "en", "batch_size": 64, "device": "cpu", "layer": None,
                                            "ensemble": True, "punctuation": None})
def create_onlstm_component(nlp: Language, name: str, model: str, batch_size: int, device: str,
                            layer: int | None, ensemble: bool, punctuation: str | None) -> "OnlstmComponent":
    if nlp.lang == "zh" and getattr(nlp.tokenizer, "segmenter", None) == "char":
        warnings.warn('spaCy cuts this Chinese pipeline\'s text into characters, so each character is a leaf; '
                      'for words use spacy.blank("zh", config={"nlp": {"tokenizer": {"segmenter": "jieba"}}})',
                      stacklevel=2)
    return OnlstmComponent(model, batch_size=batch_size, device=device, layer=layer, ensemble=ensemble,
                           punctuation=punctuation)


class OnlstmComponent:
    """Parses each sentence of a doc and stores its constituents on the doc (`doc._.onlstm_constituents`)."""

    def __init__(self, model: str = "en", **options):
        self.parser = Parser.load(model, pretokenized=True, **options)
        install_extensions()

    def __call__(self, doc: Doc) -> Doc:
        if len(doc) and not doc.has_annotation("SENT_START"):
            raise ValueError('onlstm needs sentence boundaries: add "sentencizer" (or a parser) before "onlstm"')
        sentences = list(doc.sents) if len(doc) else []
        words = [model_word(token.text) for token in doc]
        parsed = self.parser.parse_lines(" ".join(words[sent.start:sent.end]) for sent in sentences)
        preorder, not_parsed = [], []
        for number, (sent, result) in enumerate(zip(sentences, parsed), 1):
            if result.error:  # more words than a sentence may have: said now, and by its spans (position_of)
                warnings.warn(f"sentence {number} (tokens {sent.start}-{sent.end}) not parsed: {result.error}",
                              NotParsedWarning, stacklevel=2)
                not_parsed.append([sent.start, sent.end, result.error])
                continue
            if result.tree is None:  # (cannot happen: every token is a word)
                continue
            if len(result.tokens) != len(sent):  # (cannot happen: no word has spaces inside)
                raise ValueError(f"onlstm read {len(result.tokens)} tokens in a sentence of {len(sent)}")
            preorder += [(sent.start + i, sent.start + j) for i, j in sentence_constituents(result.tree, len(sent))]
        doc._.set(DOC_EXTENSION, {**constituent_table(preorder, words), "not_parsed": not_parsed})
        return doc

    def pipe(self, docs, batch_size: int = 128):
        for doc in docs:
            yield self(doc)


def model_word(text: str) -> str:
    """What the model reads for one spaCy token: one word whatever the token holds. Spaces inside a token
    become "_" (a merged entity, "New York"); a control character would split it (the parser reads them as
    spaces) and a token that is only whitespace (spaCy keeps runs of spaces) would vanish."""
    return "_".join(without_controls(text, "").split()) or "_"


def sentence_constituents(tree, n: int) -> list[tuple[int, int]]:
    """The (start, end) of every constituent of a sentence's tree, its n tokens included, in pre-order."""
    spans = tree_spans(tree) | {(0, n)} | {(k, k + 1) for k in range(n)}
    return sorted(spans, key=lambda span: (span[0], -span[1]))  # pre-order: outer spans first


def constituent_table(preorder: list[tuple[int, int]], words: list[str]) -> dict:
    """A doc's constituents as plain lists (so that `doc.to_bytes()` keeps them), as benepar stores them:
    starts, ends and parent positions in pre-order, each token's first constituent, the words read."""
    parents, open_positions = [], []
    for start, end in preorder:
        while open_positions and preorder[open_positions[-1]][1] <= start:
            open_positions.pop()  # ends before this span: not an ancestor (and a new sentence clears all)
        parents.append(open_positions[-1] if open_positions else None)
        open_positions.append(len(parents) - 1)
    first = [None] * len(words)
    for position, (start, _) in reversed(list(enumerate(preorder))):
        first[start] = position
    return {"starts": [s for s, _ in preorder], "ends": [e for _, e in preorder], "parents": parents,
            "first": first, "words": list(words)}


def position_of(span: Span) -> tuple[dict, int]:
    """The doc's table and the span's place in it; NotAConstituent if it has none."""
    table = span.doc._.get(DOC_EXTENSION)
    if table is None:
        raise NotAConstituent('this doc has no onlstm trees: add the "onlstm" component to the pipeline')
    position = table["first"][span.start] if span.start < len(table["first"]) and len(span) else None
    # the constituents that start where the span starts come outermost first: their ends decrease
    while position is not None and position < len(table["ends"]) and table["starts"][position] == span.start:
        if table["ends"][position] == span.end:
            return table, position
        position += 1
    for start, end, why in table.get("not_parsed", ()):  # (a doc stored before has none)
        if start <= span.start < end:
            raise NotAConstituent(f"onlstm did not parse the sentence of {span.text[:40]!r}: {why}")
    raise NotAConstituent(f"not a constituent of the onlstm trees: {span.text!r}")


def subtree_positions(table: dict, position: int) -> range:
    """The positions of a constituent and of all the constituents inside it (pre-order keeps them together)."""
    end, last = table["ends"][position], position + 1
    while last < len(table["starts"]) and table["starts"][last] < end:
        last += 1
    return range(position, last)


def get_constituents(span: Span) -> list[Span]:
    table, position = position_of(span)
    return [span.doc[table["starts"][q]:table["ends"][q]] for q in subtree_positions(table, position)]


def get_children(span: Span) -> list[Span]:
    table, position = position_of(span)
    return [span.doc[table["starts"][q]:table["ends"][q]] for q in subtree_positions(table, position)
            if table["parents"][q] == position]


def get_parent(span: Span) -> Span | None:
    table, position = position_of(span)
    parent = table["parents"][position]
    return None if parent is None else span.doc[table["starts"][parent]:table["ends"][parent]]


def get_labels(span: Span) -> tuple[str, ...]:
    table, position = position_of(span)
    is_sentence = table["parents"][position] is None
    return (LABEL,) if is_sentence or len(span) > 1 else ()


def get_parse_string(span: Span) -> str:
    """The constituent's bracket tree, as `onlstm parse -f bracket` writes one (a token: `(X word)`)."""
    table, position = position_of(span)
    nodes: dict[int, object] = {}
    for q in subtree_positions(table, position):  # parents come before their children in pre-order
        start, end = table["starts"][q], table["ends"][q]
        nodes[q] = table["words"][start] if end - start == 1 else []
        if q != position:
            nodes[table["parents"][q]].append(nodes[q])
    if table["parents"][position] is not None and len(span) == 1:
        return _preterminal(nodes[position])
    return to_bracket(nodes[position])


def as_span(getter):
    return lambda token: getter(token.doc[token.i:token.i + 1])


def install_extensions() -> None:
    """benepar's names; `force`: a pipeline holds one constituency parser, the last one created."""
    if not Doc.has_extension(DOC_EXTENSION):
        Doc.set_extension(DOC_EXTENSION, default=None)
    getters = {"parse_string": get_parse_string, "labels": get_labels, "constituents": get_constituents,
               "children": get_children, "parent": get_parent}
    for name, getter in getters.items():
        Span.set_extension(name, getter=getter, force=True)
    for name in ("parse_string", "labels", "parent"):
        Token.set_extension(name, getter=as_span(getters[name]), force=True)
