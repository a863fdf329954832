"""A spaCy pipeline component (the optional extra `onlstm[spacy]`), shaped like benepar's:

    import spacy
    nlp = spacy.blank("en")            # or any pipeline that sets sentence boundaries
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("onlstm", config={"model": "en"})
    sent = next(nlp("The cat sat on the mat.").sents)
    sent._.parse_string                # "(S (X The) (S (X cat) …))", as `onlstm parse -f bracket`
    sent._.constituents                # every constituent as a Span, in pre-order (the sentence first)

The component reads spaCy's tokens as they are (no re-tokenization) and parses a doc's sentences in
batches. "onlstm" is registered as a spaCy factory when the package is installed (an entry point) and
when this module is imported.
"""
from __future__ import annotations

from spacy.language import Language
from spacy.tokens import Doc, Span

from .api import Parser
from .formats import to_bracket
from .parser import without_controls
from .trees import tree_spans

EXTENSIONS = ("parse_string", "constituents")


@Language.factory("onlstm", default_config={"model": "en", "batch_size": 64, "device": "cpu", "layer": None,
                                            "ensemble": True})
def create_onlstm_component(nlp: Language, name: str, model: str, batch_size: int, device: str,
                            layer: int | None, ensemble: bool) -> "OnlstmComponent":
    return OnlstmComponent(model, batch_size=batch_size, device=device, layer=layer, ensemble=ensemble)


class OnlstmComponent:
    """Sets `sent._.parse_string` and `sent._.constituents` on each sentence of a doc."""

    def __init__(self, model: str = "en", **options):
        self.parser = Parser.load(model, pretokenized=True, **options)
        for name in EXTENSIONS:
            if not Span.has_extension(name):
                Span.set_extension(name, default=None)

    def __call__(self, doc: Doc) -> Doc:
        sentences = list(doc.sents)
        # a token that is only whitespace (spaCy keeps runs of spaces) would vanish when split on spaces, and a
        # control character inside a token would split it (the parser reads them as spaces): drop them here
        words = [[without_controls(token.text, "").strip() or "_" for token in sent] for sent in sentences]
        parsed = self.parser.parse_lines(" ".join(w) for w in words)
        for sent, result in zip(sentences, parsed):
            if result.tree is None:
                continue
            if len(result.tokens) != len(sent):  # (cannot happen for tokens without spaces inside)
                raise ValueError(f"onlstm read {len(result.tokens)} tokens in a sentence of {len(sent)}")
            sent._.parse_string = to_bracket(result.tree)
            spans = tree_spans(result.tree) | {(0, len(sent))} | {(k, k + 1) for k in range(len(sent))}
            ordered = sorted(spans, key=lambda span: (span[0], -span[1]))  # pre-order: outer spans first
            sent._.constituents = [doc[sent.start + i:sent.start + j] for i, j in ordered]
        return doc

    def pipe(self, docs, batch_size: int = 128):
        for doc in docs:
            yield self(doc)
