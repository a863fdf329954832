"""Teachers weighted by their agreement with the others above chance (SelfTrainConfig.teacher_weights)."""
import random

import pytest

from onlstm_cli.config import SelfTrainConfig
from onlstm_cli.errors import TrainingError
from onlstm_cli.evaluation.metrics import left_branching_spans, mutual_agreement, right_branching_spans
from onlstm_cli.training.student.votes import agreement_weights, chance_agreement, vote

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
