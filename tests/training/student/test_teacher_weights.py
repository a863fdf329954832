"""Teachers weighted by their agreement with the others above chance (SelfTrainConfig.teacher_weights)."""
import random

import pytest

from onlstm_cli.cli.commands import app
from onlstm_cli.config import SelfTrainConfig
from onlstm_cli.errors import TrainingError
from onlstm_cli.evaluation.metrics import left_branching_spans, mutual_agreement, right_branching_spans
from onlstm_cli.induction.teachers import TeacherBase
from onlstm_cli.trees import random_tree, tree_spans
from onlstm_cli.training.student.votes import agreement_weights, chance_agreement, vote, votes_of

LENGTHS = [random.Random(3).randint(2, 25) for _ in range(300)]


def test_random_trees_agree_more_than_trees_that_share_nothing_and_less_than_a_fixed_shape():
    chance = chance_agreement(LENGTHS)
    right = [right_branching_spans(n) for n in LENGTHS]
    left = [left_branching_spans(n) for n in LENGTHS]
    assert mutual_agreement([right, left])[0] == 0.0 < chance < 1.0
    assert chance_agreement(LENGTHS) == chance  # one draw: a rerun weighs alike


def test_weights_follow_agreement_above_chance_and_average_one():
    chance = chance_agreement(LENGTHS)
    weights = agreement_weights([chance + 0.2, chance + 0.1, chance - 0.05], LENGTHS)
    assert sum(weights) == pytest.approx(3.0)
    assert weights[0] == pytest.approx(2 * weights[1], rel=1e-6)  # proportional to the agreement above chance
    assert weights[2] == pytest.approx(weights[0] * 0.01 / 0.2)  # at or below chance: the floor, never negative
    assert agreement_weights([0.5, 0.5], LENGTHS) == pytest.approx([1.0, 1.0])  # two teachers: alike by symmetry


def test_a_span_weighs_its_teachers_weights():
    spans_a, spans_b = [{(0, 2)}], [{(1, 3)}]
    equal = vote([spans_a, spans_b], [3])[0]
    assert equal == pytest.approx({(0, 2): 0.5, (1, 3): 0.5})
    weighted = vote([spans_a, spans_b], [3], weights=[1.5, 0.5])[0]
    assert weighted == pytest.approx({(0, 2): 0.75, (1, 3): 0.25})


def test_an_unknown_weighting_is_one_line():
    with pytest.raises(TrainingError, match="--teacher-weights must be one of equal, agreement"):
        SelfTrainConfig(teacher_weights="gold").check()


class FixedTeacher(TeacherBase):
    """Right-branching trees ("right"), or seeded random trees of each sentence ("noise")."""

    def __init__(self, name, shape, tokenizer):
        self.name, self.shape, self.tokenizer = name, shape, tokenizer

    def voter_trees(self, sentences, batch_size=64, model_tokens=True):
        if self.shape == "right":
            return [[right_branching_spans(len(words)) for words in sentences]]
        rng = random.Random(self.name)
        return [[tree_spans(random_tree(list(range(len(words))), rng)) for words in sentences]]


@pytest.mark.parametrize("weighting", ["equal", "agreement"])
def test_the_votes_weigh_a_teacher_that_agrees_with_no_other_as_the_option_says(tiny_loaded, tiny_corpus, weighting):
    teachers = [FixedTeacher("a", "right", tiny_loaded.tokenizer), FixedTeacher("b", "right", tiny_loaded.tokenizer),
                FixedTeacher("c", "noise", tiny_loaded.tokenizer)]
    said = []
    votes = votes_of(teachers, tiny_corpus["train"], tiny_corpus["valid"],
                     SelfTrainConfig(right_branching=0.0, max_branching_agreement=100.0, teacher_weights=weighting),
                     said.append, host=tiny_loaded)
    shares = [share for spans, sentence in zip(votes.spans, votes.sentences) if len(sentence) >= 4
              for span, share in spans.items() if span in right_branching_spans(len(sentence))]
    assert shares
    weights = [line for line in said if line.startswith("the teachers' weights in the vote")]
    if weighting == "equal":
        assert not weights and min(shares) >= 2 / 3 - 1e-9
    else:  # the noise teacher agrees with the others about as random trees do: a small part of theirs
        assert len(weights) == 1
        a, b, c = (float(part.split()[-1]) for part in weights[0].split(": ")[1].split(", "))
        assert a == b and c < a / 5 and a + b + c == pytest.approx(3.0, abs=0.02)
        assert min(shares) >= (a + b) / 3 - 0.01 > 0.9


def test_teacher_weights_is_an_option_of_a_span_parser_only(runner, tiny_corpus, tmp_path):
    result = runner.invoke(app, ["train", str(tiny_corpus["train"]), "-o", str(tmp_path / "m.onlstm"),
                                 "--teacher-weights", "agreement"])
    assert result.exit_code == 2 and result.stderr.strip().splitlines() == [
        "error: --teacher-weights is for a span parser's teachers: give --seeds K (K ≥ 2) or --teacher"]
