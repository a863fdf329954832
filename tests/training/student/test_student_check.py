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
    # the student is compared with every teacher: the best one (here each, with 100) is named
    assert check.best_teacher == tiny_model_path.name and check.best_teacher_agreement == pytest.approx(100)
    assert f"the best of them {tiny_model_path.name} 100.0" in check.text()
    assert ("the student agrees less with the consensus than that teacher" in check.text()) == (check.student < 100)


def test_a_check_recorded_before_the_best_teacher_reads_as_it_did():
    """`info` on a file whose check predates the comparison with every teacher says what it said then."""
    from onlstm_cli.info import student_check_text
    old = {"student": 80.0, "teachers": 60.0, "mutual": 50.0, "consensus_parser": None, "shipped": "student"}
    assert "best of them" not in student_check_text(old)
    new = {**old, "best_teacher": "b.onlstm", "best_teacher_agreement": 85.0}
    assert student_check_text(new).endswith(", the best of them b.onlstm 85.0; the student agrees less with the "
                                           "consensus than that teacher, whose own trees are among the votes")


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
    assert check.student < check.best_teacher_agreement
    assert "the student agrees less with the consensus than that teacher" in check.text()
    assert check.shipped == "consensus parser"
    shipped = load_model(student)
    assert shipped.span_parser is None and len(shipped.members) == 1 and shipped.combine == "rank"
    assert load_model(student.with_name("student.student.onlstm")).span_parser is not None
    assert shipped.meta["student_check"]["shipped"] == "consensus parser"
    from onlstm_cli.info import info_text, model_info
    assert "the recipe shipped the consensus parser" in info_text(model_info(student))
    assert "shipped the consensus parser" in check.text()


real_trees = student_check.model_trees  # the real trees, for a test that shapes only the student's


def test_a_shipped_consensus_parser_carries_its_recipe_for_info(trained, tiny_model_path, tmp_path, monkeypatch):
    """`info` on the consensus parser a recipe shipped names the recipe's teachers, votes and stage times, as it
    does on a student (it said only which was shipped)."""
    from onlstm_cli.modelfile import atomic_save
    from onlstm_cli.training.recipe.runner import record_in_file
    monkeypatch.setattr(student_check, "model_trees", lambda model, sentences, *a, span_parsers=False, **k: (
        [left_branching_spans(len(s)) for s in sentences] if span_parsers else real_trees(model, sentences, *a, **k)))
    student, votes = trained
    archive = read_archive(student)
    archive["span_parser"]["meta"]["recipe"] = {
        "seeds": [1111, 1112], "votes": "each of the 2 language models' trees weigh 1",
        "teachers": [{"family": "onlstm", "seed": s, "path": f"x.lm-seed{s}.onlstm", "valid_ppl": 250.0 + s - 1111,
                      "epochs": 30} for s in (1111, 1112)],
        "stage_seconds": {"language_models": 2700.0}}
    archive["span_parser"]["meta"].update(seconds=900.0, parse_seconds=60.0)
    atomic_save(archive, student)
    check = student_check.check_student(student, teachers_of(tiny_model_path, tmp_path), votes, lambda line: None)
    assert check.shipped == "consensus parser"
    record_in_file(student, {"right": 30.0, "left": 40.0}, archive["span_parser"]["meta"]["recipe"]["teachers"])
    from onlstm_cli.info import info_text, model_info
    text = info_text(model_info(student))
    recipe = text[text.index("\nRecipe\n"):]
    assert "made by    recipe (train --seeds 2): seed 1111 (valid ppl 250.0, 30 epochs), seed 1112" in recipe
    assert "votes      each of the 2 language models' trees weigh 1" in recipe
    assert "stage times: language models 45.0 min, the teachers' parse 1.0 min, the span parser 14.0 min" in recipe
    assert "its trees of the validation text agree 30.0 with right-branching trees, 40.0 with left" in recipe
    assert "the recipe shipped the consensus parser" in recipe

