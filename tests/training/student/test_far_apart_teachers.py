"""A teacher whose trees agree with the other teachers' far less than theirs do with each other does not vote
(left_out.without_far_apart): the votes, the log, the span parser's file, the recipe's record and `info` say so;
--min-relative-agreement 0 and a recipe recorded before the rule let it vote."""
from __future__ import annotations

from dataclasses import asdict

import pytest

from onlstm_cli.config import RecipeConfig, SelfTrainConfig
from onlstm_cli.evaluation.metrics import mutual_agreement
from onlstm_cli.training.student.left_out import Collapsed, FarApart, without_far_apart
from onlstm_cli.training.student.votes import votes_of
from training.student.test_collapsed_teachers import teachers

EVERY_SHAPE_VOTES = 100.0  # --max-branching-agreement that keeps a right-branching teacher in the vote


def test_a_teacher_far_from_the_others_does_not_vote(tiny_loaded, tiny_corpus):
    said = []
    shaped = teachers(tiny_loaded, "right", "right", "random")
    votes = votes_of(shaped, tiny_corpus["train"], tiny_corpus["valid"],
                     SelfTrainConfig(max_branching_agreement=EVERY_SHAPE_VOTES, min_relative_agreement=0.75),
                     said.append, host=tiny_loaded)
    assert [a.teacher for a in votes.far_apart] == ["random-2"] and votes.collapsed == []
    apart = votes.far_apart[0]
    assert apart.agreement < apart.line
    assert any(line.startswith(f"random-2 does not vote: its trees of the validation text agree {apart.agreement:.1f} "
                               f"with the other teachers', below {apart.line:.1f}") for line in said)
    assert votes.teacher_names == ["right-0", "right-1"] and len(votes.valid_parse_trees) == 2
    assert all(set(spans.values()) <= {1.0} for spans in votes.spans)  # the two left agree on every span
    every = votes_of(shaped, tiny_corpus["train"], tiny_corpus["valid"],
                     SelfTrainConfig(max_branching_agreement=EVERY_SHAPE_VOTES), lambda line: None, host=tiny_loaded)
    assert every.far_apart == [] and len(every.teacher_names) == 3  # by default every teacher votes


def test_the_line_is_a_share_of_the_teachers_median_agreement(tiny_loaded):
    lengths = [6] * 8
    a = [{(0, 2), (2, 6), (0, 6)}] * 8
    b = [{(0, 2), (3, 6), (0, 6)}] * 8
    c = [{(0, 3), (3, 6), (0, 6)}] * 8
    d = [{(1, 3), (4, 6), (0, 6)}] * 8
    free = [[a], [a], [b], [d]]
    shaped = teachers(tiny_loaded, "random", "random", "random", "random")
    mutual = mutual_agreement([trees for trees, in free])
    median = sorted(mutual)[1:3]
    line = 0.75 * sum(median) / 2
    below = [k for k, m in enumerate(mutual) if m < line]
    assert below == [3]  # the case is one teacher far below the others, and the others above the line
    kept, trees, apart = without_far_apart(shaped, free, 0.75, lambda line: None)
    assert kept == shaped[:3] and trees == free[:3]
    assert apart == [FarApart("random-3", round(100 * mutual[3], 2), round(100 * line, 2))]
    # a line under every teacher's agreement leaves every one in
    share = min(mutual) / (sum(median) / 2) * 0.99
    assert without_far_apart(shaped, free, share, lambda line: None)[2] == []
    assert without_far_apart(shaped, free, 0.0, lambda line: None)[0] == shaped
    # two teachers agree with each other alike, however little
    assert without_far_apart(shaped[:2], [[a], [c]], 1.0, lambda line: None)[2] == []


def test_at_least_half_of_the_teachers_vote(tiny_loaded):
    """The median's share: however the agreements fall, no more than half of the teachers are left out."""
    import random
    rng = random.Random(7)
    shapes = [{(0, 2), (2, 6), (0, 6)}, {(0, 2), (3, 6), (0, 6)}, {(0, 3), (3, 6), (0, 6)}, {(1, 3), (4, 6), (0, 6)},
              {(0, 4), (0, 6)}, {(2, 6), (0, 6)}]
    for _ in range(50):
        k = rng.randint(3, 7)
        free = [[[rng.choice(shapes) for _ in range(5)]] for _ in range(k)]
        shaped = teachers(tiny_loaded, *["random"] * k)
        kept, _, apart = without_far_apart(shaped, free, 1.0, lambda line: None)
        assert len(kept) + len(apart) == k and len(kept) >= k / 2


def test_the_recipe_records_a_teacher_far_apart_and_info_says_why():
    from onlstm_cli.info import teacher_text
    from onlstm_cli.training.recipe.runner import RecipeRun

    class Loaded:
        def __init__(self, name):
            self.name = name
    record = [{"seed": s, "valid_ppl": 300.0, "epochs": 3} for s in (1111, 1112, 1113)]
    voting = RecipeRun.without_left_out(list(record), [Loaded("a"), Loaded("b"), Loaded("c")],
                                        [FarApart("b", 40.5, 47.25), Collapsed("c", "left", 95.0)])
    assert voting == record[:1]
    assert record[1]["votes"] is False and record[1]["far_apart"] == {"agreement": 40.5, "line": 47.25}
    assert teacher_text(record[1]).endswith("; no vote: its trees agree 40.5 with the other teachers', below 47.2)")
    assert teacher_text(record[2]).endswith("; no vote: its trees agree 95.0 with left-branching ones)")
    assert teacher_text({**record[0], "votes": False, "far_apart": {"agreement": "x"}}).endswith(
        "; no vote: a failed run)")


def test_a_recipe_recorded_before_the_rule_lets_every_teacher_vote():
    from onlstm_cli.training.recipe.runner import as_recorded
    given = SelfTrainConfig(min_relative_agreement=0.75)
    options = {"recipe": asdict(RecipeConfig()), "span_parser": asdict(given)}
    assert as_recorded(options, RecipeConfig(), given)[1].min_relative_agreement == 0.75
    del options["span_parser"]["min_relative_agreement"]
    assert as_recorded(options, RecipeConfig(), given)[1].min_relative_agreement == 0.0


@pytest.mark.parametrize("args, message", [
    (["--seeds", "2", "--min-relative-agreement", "1.5"], "--min-relative-agreement must be between 0 and 1"),
    (["--min-relative-agreement", "0.5"], "--min-relative-agreement is for a span parser's teachers"),
])
def test_a_bad_share_is_refused_in_one_line(args, message, runner, tiny_corpus, tmp_path):
    from onlstm_cli.cli.commands import app
    result = runner.invoke(app, ["train", str(tiny_corpus["train"]), *args, "-o", str(tmp_path / "m.onlstm")])
    assert result.exit_code != 0 and message in result.output
    assert "Traceback" not in result.output and not (tmp_path / "m.onlstm").exists()
