"""A student never below its teachers (training/student/check.py): measured against the teachers' consensus on the
validation text, and the consensus parser shipped instead where the student is the worse."""
from __future__ import annotations

import shutil
from dataclasses import asdict

import pytest

from onlstm_cli.config import SelfTrainConfig, SpanParserConfig
from onlstm_cli.modelfile import load_model, read_archive
from onlstm_cli.training.student import check as student_check
from onlstm_cli.training.student.train import self_train
from onlstm_cli.training.student.votes import left_branching_spans


@pytest.fixture
def trained(tiny_loaded, tiny_corpus, tmp_path):
    """A student of two teachers (one model twice), and the votes it learned."""
    out = tmp_path / "student.onlstm"
    result = self_train(tiny_corpus["train"], out, [tiny_loaded, tiny_loaded], tiny_corpus["valid"],
                        SpanParserConfig(vocab_size=len(tiny_loaded.vocab), emb_size=20, hidden_size=16, mlp_size=16),
                        SelfTrainConfig(epochs=2, batch_size=8), log=lambda line: None)
    return out, result.votes


def teachers_of(tiny_model_path, tmp_path):
    """The teachers' files: the model and a copy of it."""
    second = tmp_path / "second.onlstm"
    shutil.copy(tiny_model_path, second)
    return [tiny_model_path, second]


def test_the_check_measures_the_student_beside_its_teachers(trained, tiny_model_path, tmp_path):
    student, votes = trained
    lines = []
    check = student_check.check_student(student, teachers_of(tiny_model_path, tmp_path), votes, lines.append)
    assert 0 <= check.student <= 100 and check.teachers == pytest.approx(100) and check.mutual == pytest.approx(100)
    # two copies of one model agree with their consensus (their own trees) wholly: the student can only match them
    assert check.student <= check.teachers
    # a span parser trained outside a recipe has no recipe record: the check goes into the file's own meta
    assert read_archive(student)["meta"]["student_check"] == asdict(check)
    assert f"the span parser agrees {check.student:.1f} with its teachers' consensus" in check.text()


def test_a_student_below_its_teachers_gives_way_to_the_consensus_parser(trained, tiny_model_path, tmp_path,
                                                                       monkeypatch):
    """The student's trees are made left-branching here, far from its teachers' consensus: the consensus parser
    (the teachers as one ensemble) agrees more, and goes to --out; the student stays beside it."""
    real = student_check.model_trees

    def trees(model, sentences, *args, span_parsers=False, **kwargs):
        if span_parsers:
            return [left_branching_spans(len(s)) for s in sentences]
        return real(model, sentences, *args, **kwargs)
    monkeypatch.setattr(student_check, "model_trees", trees)
    student, votes = trained
    lines = []
    check = student_check.check_student(student, teachers_of(tiny_model_path, tmp_path), votes, lines.append)
    assert check.student < check.teachers and check.consensus_parser > check.student
    assert check.shipped == "consensus parser"
    shipped = load_model(student)
    assert shipped.span_parser is None and len(shipped.members) == 1 and shipped.combine == "rank"
    assert load_model(student.with_name("student.student.onlstm")).span_parser is not None
    assert shipped.meta["student_check"]["shipped"] == "consensus parser"
    from onlstm_cli.info import info_text, model_info
    assert "the recipe shipped the consensus parser" in info_text(model_info(student))
    assert "shipped the consensus parser" in check.text()
