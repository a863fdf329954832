"""A teacher whose trees are a branching rule's does not vote (left_out.without_collapsed): the votes, the log, the
recipe's record and `info` say so; --max-branching-agreement 100 and a recipe recorded before the rule let it."""
from __future__ import annotations

import random

import pytest

from onlstm_cli.config import SelfTrainConfig
from onlstm_cli.induction.teachers import TeacherBase
from onlstm_cli.trees import build_tree, tree_spans
from onlstm_cli.training.student.left_out import Collapsed, without_collapsed
from onlstm_cli.training.student.votes import left_branching_spans, right_branching_spans, votes_of


class ShapeTeacher(TeacherBase):
    """A teacher of one voter whose trees are a fixed shape's, or drawn at random (seeded by the sentence)."""

    def __init__(self, name, shape, tokenizer):
        self.name, self.shape, self.tokenizer = name, shape, tokenizer

    def voter_trees(self, sentences, batch_size=64, model_tokens=True):
        if self.shape == "right":
            return [[right_branching_spans(len(s)) for s in sentences]]
        if self.shape == "left":
            return [[left_branching_spans(len(s)) for s in sentences]]
        trees = []
        for words in sentences:
            rng = random.Random(f"{self.name}:{' '.join(words)}")
            trees.append(tree_spans(build_tree([rng.random() for _ in words], list(range(len(words))), "symmetric")))
        return [trees]


def teachers(tiny_loaded, *shapes):
    return [ShapeTeacher(f"{shape}-{k}", shape, tiny_loaded.tokenizer) for k, shape in enumerate(shapes)]


def test_a_teacher_of_right_branching_trees_does_not_vote(tiny_loaded, tiny_corpus):
    said = []
    random_teacher, right = teachers(tiny_loaded, "random", "right")
    votes = votes_of([random_teacher, right], tiny_corpus["train"], tiny_corpus["valid"], SelfTrainConfig(),
                     said.append, host=tiny_loaded)
    assert votes.collapsed == [Collapsed("right-1", "right", 100.0)]
    assert any(line.startswith("right-1 does not vote: its trees of the validation text agree 100.0 with "
                               "right-branching trees") for line in said)
    assert all(set(spans.values()) <= {1.0} for spans in votes.spans)  # one voter left: every span it has is 1
    assert len(votes.valid_parse_trees) == 1
    every = votes_of([random_teacher, right], tiny_corpus["train"], tiny_corpus["valid"],
                     SelfTrainConfig(max_branching_agreement=100.0), lambda line: None, host=tiny_loaded)
    assert every.collapsed == [] and any(0.5 in spans.values() for spans in every.spans)  # both vote


def test_where_every_teacher_is_a_branching_rule_all_vote_with_a_warning(tiny_loaded, tiny_corpus):
    said = []
    votes = votes_of(teachers(tiny_loaded, "right", "left"), tiny_corpus["train"], tiny_corpus["valid"],
                     SelfTrainConfig(), said.append, host=tiny_loaded)
    assert votes.collapsed == [] and len(votes.valid_parse_trees) == 2
    assert any(line.startswith("warning: every teacher's trees of the validation text are nearly branching trees "
                               "(right-0 100.0 right, left-1 100.0 left)") for line in said)


def test_the_threshold_is_a_share_of_the_sentences_trees(tiny_loaded):
    """A teacher is left out above the threshold only: its agreement is the mean sentence F1 with the shape."""
    lengths = [6] * 10
    right = [right_branching_spans(n) for n in lengths]
    other = [{(0, 2), (3, 6), (0, 6)}] * 10
    mostly = right[:9] + other[:1]  # 9 of 10 sentences right-branching
    shaped = teachers(tiny_loaded, "random", "random")
    kept, trees, collapsed = without_collapsed(shaped, [[mostly], [other]], lengths, 90.0, lambda line: None)
    agreement = collapsed[0].agreement
    assert 90.0 < agreement < 100.0 and kept == shaped[1:] and trees == [[other]]
    kept, _, collapsed = without_collapsed(shaped, [[mostly], [other]], lengths, agreement, lambda line: None)
    assert collapsed == [] and kept == shaped  # not more than the threshold: it votes


def test_the_recipe_records_a_teacher_left_out_and_info_says_why():
    from onlstm_cli.info import teacher_text
    from onlstm_cli.training.recipe.runner import RecipeRun

    class Loaded:
        def __init__(self, name):
            self.name = name
    record = [{"seed": 1111, "valid_ppl": 300.0, "epochs": 3}, {"seed": 1112, "valid_ppl": 310.0, "epochs": 3}]
    voting = RecipeRun.without_left_out(list(record), [Loaded("a"), Loaded("b")],
                                     [Collapsed("b", "left", 95.9)])
    assert voting == record[:1]
    assert record[1]["votes"] is False and record[1]["branching_rule"] == {"side": "left", "agreement": 95.9}
    assert teacher_text(record[1]).endswith("; no vote: its trees agree 95.9 with left-branching ones)")
    assert teacher_text({**record[0], "votes": False}).endswith("; no vote: a failed run)")


def test_a_recipe_recorded_before_the_rule_lets_every_teacher_vote():
    from dataclasses import asdict
    from onlstm_cli.config import RecipeConfig
    from onlstm_cli.training.recipe.runner import as_recorded
    options = {"recipe": asdict(RecipeConfig()), "span_parser": asdict(SelfTrainConfig())}
    assert as_recorded(options, RecipeConfig(), SelfTrainConfig())[1].max_branching_agreement == 90.0
    del options["span_parser"]["max_branching_agreement"]
    assert as_recorded(options, RecipeConfig(), SelfTrainConfig())[1].max_branching_agreement == 100.0


@pytest.mark.parametrize("value", ["-1", "101"])
def test_a_threshold_outside_0_to_100_is_refused_in_one_line(value, runner, tiny_corpus, tmp_path):
    from onlstm_cli.cli.commands import app
    result = runner.invoke(app, ["train", str(tiny_corpus["train"]), "--seeds", "2", "--max-branching-agreement", value,
                                 "-o", str(tmp_path / "m.onlstm")])
    assert result.exit_code != 0
    assert "--max-branching-agreement must be between 0 and 100" in result.output
