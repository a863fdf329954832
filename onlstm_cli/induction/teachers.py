"""Teachers: what a model must give to vote in self-training (training/student/train.py) — its name, the
tokenizer it cuts text with, and its trees of a batch of sentences, one list of trees a voter.

A language model votes with its layers' trees (each layer a voter: `OnlstmTeacher`); a self-trained file can vote
with its span parser's trees instead (`SpanParserTeacher`, a second round). Another model family (a PCFG, say) is a
class with the same three things (`PcfgTeacher`), and one line in TEACHER_KINDS if its model files should teach from
`--teacher`.
"""
from __future__ import annotations

from pathlib import Path
from typing import Protocol, Sequence, runtime_checkable

from onlstm_cli.errors import TrainingError
from onlstm_cli.induction.distances import sentence_distances, split_rule
from onlstm_cli.text.tokenizers import Tokenizer
from onlstm_cli.trees import build_tree, tree_spans

Spans = set  # a tree as its constituents (start, end) over word positions, end exclusive


@runtime_checkable
class Teacher(Protocol):
    name: str              # how logs and the model's record name it (a model file's path)
    tokenizer: Tokenizer   # how it cuts text into words: every teacher of a run must cut alike
    weighing: int          # which of its voters stands for it where one tree a teacher is read (agreement, auto)

    host: object           # a loaded ON-LSTM model file the student can be written into (its vocabulary), or None
    lang: str              # the language its files name ("" where none)

    def voter_trees(self, sentences: Sequence[Sequence[str]], batch_size: int = 64,
                    model_tokens: bool = True) -> list[list[Spans]]:
        """Each voter's constituents of each sentence (normalized words): one list of span sets a voter.
        `model_tokens`: the words are the teacher's own tokenizer's cut (training text), not a treebank's."""
        ...

    def coverage_warning(self, sentences: Sequence[Sequence[str]]) -> str | None:
        """Why this teacher cannot read the text (a Chinese model on English text), or None."""
        ...

    @property
    def split(self) -> str | None:
        """The split rule (trees.SPLIT_RULES) its trees are built with; None where they are not split distances."""
        ...

    def use_split(self, rule: str) -> None:
        """Build its trees with split rule `rule` from now on (only where `split` is not None)."""
        ...


class TeacherBase:
    """What a teacher family need not write: no host file, no layers, no coverage warning, no split rule."""
    host = None
    weighing = 0
    lang = ""           # the language its files name, where they name one
    layers: tuple = ()  # the layers whose trees vote, for a family whose models have layers

    def coverage_warning(self, sentences) -> str | None:
        return None

    split = None

    def use_split(self, rule: str) -> None:
        raise TypeError(f"{self.name} builds no trees from distances: it has no split rule")


def layer_trees(teacher, sentences: Sequence[Sequence[str]], layers: tuple[int, ...], batch_size: int = 64,
                model_tokens: bool = True) -> list[list[Spans]]:
    """A loaded language model's constituents of each sentence by each of its `layers` (1-based), from one pass
    over the text: one list of trees a layer, each a voter of its own (--teacher-layers)."""
    n_layers = teacher.config.n_layers
    for layer in layers:
        if not 1 <= layer <= n_layers:
            raise TrainingError(f"--teacher-layers {layer}: {teacher.path} has layers 1 to {n_layers}")
    per_sentence = sentence_distances(teacher, sentences, batch_size=batch_size, all_layers=True,
                                      model_tokens=model_tokens)
    return [[tree_spans(build_tree(d[layer - 1], list(range(len(d[layer - 1]))), teacher.split))
             for d in per_sentence] for layer in layers]


def voting_layers(teacher, teacher_layers: tuple[int, ...] = (), extra_layers: int = 0) -> tuple[int, ...]:
    """The language-model layers whose trees a loaded model votes with: `teacher_layers` (--teacher-layers), else
    its parse layer and `extra_layers` more next to it: those above it, and below it where it has too few above (a
    model that parses with its top layer votes with the layers under it)."""
    if teacher_layers:
        return tuple(teacher_layers)
    n_layers = teacher.config.n_layers
    top = min(teacher.parse_layer + extra_layers, n_layers)
    bottom = max(1, min(teacher.parse_layer, top - extra_layers))
    return tuple(range(bottom, top + 1))


def weighing_layer(teacher, layers: tuple[int, ...]) -> int:
    """The one of a teacher's voting layers that its agreement and the auto weight are read over: its parse
    layer, else (--teacher-layers without it) the first."""
    return teacher.parse_layer if teacher.parse_layer in layers else layers[0]


class OnlstmTeacher(TeacherBase):
    """An ON-LSTM language model (a loaded model file) voting with the trees of some of its layers, each built
    with the model's split rule."""

    def __init__(self, loaded, layers: tuple[int, ...] = (), extra_layers: int = 0):
        self.host = loaded
        self.name, self.tokenizer, self.lang = str(loaded.path), loaded.tokenizer, loaded.lang
        self.layers = voting_layers(loaded, layers, extra_layers)
        self.weighing = self.layers.index(weighing_layer(loaded, self.layers))

    def voter_trees(self, sentences, batch_size: int = 64, model_tokens: bool = True) -> list[list[Spans]]:
        return layer_trees(self.host, sentences, self.layers, batch_size=batch_size, model_tokens=model_tokens)

    def coverage_warning(self, sentences) -> str | None:
        from onlstm_cli.text.coverage import coverage_warning
        return coverage_warning(self.host, sentences, Path(self.name).name, by_span_parser=False)

    @property
    def split(self) -> str | None:
        return self.host.split

    def use_split(self, rule: str) -> None:
        self.host.split = rule


class SpanParserTeacher(TeacherBase):
    """A self-trained file voting with its span parser's trees (a second round of self-training); a file without
    a span parser votes with its language model's parse layer."""

    def __init__(self, loaded, layers: tuple[int, ...] = (), extra_layers: int = 0):
        self.host = loaded
        self.name, self.tokenizer, self.lang = str(loaded.path), loaded.tokenizer, loaded.lang

    def voter_trees(self, sentences, batch_size: int = 64, model_tokens: bool = True) -> list[list[Spans]]:
        return [model_trees(self.host, sentences, batch_size, model_tokens, span_parsers=True)]

    def coverage_warning(self, sentences) -> str | None:
        from onlstm_cli.text.coverage import coverage_warning
        return coverage_warning(self.host, sentences, Path(self.name).name, by_span_parser=True)


class PcfgTeacher(TeacherBase):
    """A neural PCFG's file voting with its MBR trees (pcfg/model.py). It hosts no student: a PCFG file has no
    language model to write a span parser beside."""

    def __init__(self, loaded, layers: tuple[int, ...] = (), extra_layers: int = 0):
        self.model = loaded
        self.name, self.tokenizer, self.lang = str(loaded.path), loaded.tokenizer, loaded.lang

    def voter_trees(self, sentences, batch_size: int = 64, model_tokens: bool = True) -> list[list[Spans]]:
        return [model_trees(self.model, sentences, batch_size, model_tokens, span_parsers=True)]

    def coverage_warning(self, sentences) -> str | None:
        from onlstm_cli.text.coverage import coverage_warning
        return coverage_warning(self.model, sentences, Path(self.name).name, by_span_parser=True)


def model_trees(loaded, sentences: Sequence[Sequence[str]], batch_size: int = 64, model_tokens: bool = True,
                span_parsers: bool = False) -> list[Spans]:
    """A loaded model file's constituents of each sentence, as it parses (a teacher's, a student's, a consensus
    parser's): its language model's parse layer and split rule (a self-trained file teaches with its language
    model's trees), or with `span_parsers` its span parser's, where it has one."""
    own = span_parsers and loaded.tree_parser is not None
    distances = sentence_distances(loaded, sentences, None if own else loaded.parse_layer, batch_size,
                                   model_tokens=model_tokens)
    rule = split_rule(loaded) if own else loaded.split
    return [tree_spans(build_tree(d, list(range(len(d))), rule)) for d in distances]


# a model file's kind (modelfile.MODEL_KINDS) → the teacher it makes with `--teacher FILE`
TEACHER_KINDS = {"onlstm": OnlstmTeacher, "span": SpanParserTeacher, "pcfg": PcfgTeacher}


def as_teacher(model, layers: tuple[int, ...] = (), extra_layers: int = 0, span_parsers: bool = False) -> Teacher:
    """The teacher of a loaded model file (or a Teacher already, as it is)."""
    if isinstance(model, Teacher):
        return model
    if callable(getattr(model, "voter_trees", None)):  # a teacher class that gives less than the protocol asks
        raise TrainingError(f"{type(model).__name__} is not a whole Teacher: subclass induction.teachers.TeacherBase, "
                            "which gives what a family need not write")
    if span_parsers:
        return SpanParserTeacher(model)
    kind = getattr(model, "kind", "onlstm")
    if kind not in TEACHER_KINDS:
        raise TrainingError(f"{Path(model.path).name}: a model of kind {kind!r} cannot teach")
    return TEACHER_KINDS[kind](model, layers, extra_layers)
