"""--lean-from word-order: `auto` reads the direction from the part of the teachers' lean that shuffling each
sentence's words takes away (direction.WordOrder); a lean the teachers keep on shuffled words is their own."""
from __future__ import annotations

import random

import pytest

from onlstm_cli.config import SelfTrainConfig
from onlstm_cli.errors import TrainingError
from onlstm_cli.induction.teachers import TeacherBase
from onlstm_cli.trees import build_tree, tree_spans
from onlstm_cli.training.student.direction import MAX_LEXICAL_AGREEMENT, WordOrder
from onlstm_cli.training.student.votes import left_branching_spans, right_branching_spans, votes_of


class OrderTeacher(TeacherBase):
    """`reads` "order": right-branching trees of the sentences as written (the validation text's), seeded random
    trees of any other word order; "position": left-branching trees whatever the words (a drift of its own)."""

    def __init__(self, name, reads, written, tokenizer):
        self.name, self.reads, self.written, self.tokenizer = name, reads, written, tokenizer

    def voter_trees(self, sentences, batch_size=64, model_tokens=True):
        trees = []
        for words in sentences:
            if self.reads == "position":
                trees.append(left_branching_spans(len(words)))
            elif tuple(words) in self.written:
                trees.append(right_branching_spans(len(words)))
            else:
                rng = random.Random(f"{self.name}:{' '.join(words)}")
                trees.append(tree_spans(build_tree([rng.random() for _ in words], list(range(len(words))),
                                                   "symmetric")))
        return [trees]


@pytest.mark.parametrize("parts, direction", [([3.0, 5.0], "right"), ([-2.5, -4.0, -1.0], "left"),
                                              ([6.0, -1.0], None), ([1.0, 1.5], None), ([9.0], None)])
def test_a_direction_needs_every_teacher_on_one_side_and_a_mean_of_two_points(parts, direction):
    assert WordOrder(parts, [0.0] * len(parts)).direction == direction
    assert WordOrder([p + 10 for p in parts], [10.0] * len(parts)).direction == direction  # a lean of their own


def run_votes(tiny_loaded, tiny_corpus, reads, lean_from):
    from onlstm_cli.text.corpus import read_as_trained
    written = {tuple(s) for s in read_as_trained(tiny_corpus["valid"], tiny_loaded)}
    teachers = [OrderTeacher(f"{reads}-{k}", reads, written, tiny_loaded.tokenizer) for k in range(2)]
    said = []
    votes = votes_of(teachers, tiny_corpus["train"], tiny_corpus["valid"],
                     SelfTrainConfig(right_branching="auto", max_branching_agreement=100.0, lean_from=lean_from),
                     said.append, host=tiny_loaded)
    return votes, said


def test_a_lean_the_teachers_keep_on_shuffled_words_chooses_no_voter(tiny_loaded, tiny_corpus):
    votes, said = run_votes(tiny_loaded, tiny_corpus, "position", "word-order")
    assert (votes.right_branching, votes.left_branching) == (0.0, 0.0)
    assert any(line.startswith("the teachers' word order: no direction (") for line in said)
    assert any(line.startswith("the branching voter: none (auto: the teachers' word order shows no direction")
               for line in said)
    trees, said = run_votes(tiny_loaded, tiny_corpus, "position", "trees")  # read from the trees: their own lean
    assert trees.left_branching > 0 and trees.right_branching == 0.0
    assert any(line.startswith("warning: the left-branching voter follows the way the teachers' trees lean, but "
                               "their word order (the part of that lean that shuffling each sentence's words takes "
                               "away) shows no direction: the lean may be the models' own") for line in said)


def test_a_lean_that_shuffling_takes_away_chooses_its_direction(tiny_loaded, tiny_corpus):
    votes, said = run_votes(tiny_loaded, tiny_corpus, "order", "word-order")
    assert votes.right_branching > 0 and votes.left_branching == 0.0
    assert votes.lexical < MAX_LEXICAL_AGREEMENT  # trees that are not word frequency's: the guard lets them be
    assert any(line.startswith("the teachers' word order: they lean right (") for line in said)
    trees, said = run_votes(tiny_loaded, tiny_corpus, "order", "trees")  # the two readings agree: no warning
    assert trees.right_branching > 0 and not any(line.startswith("warning") for line in said)


def test_an_unknown_lean_from_is_one_line():
    with pytest.raises(TrainingError, match="--lean-from must be one of trees, word-order"):
        SelfTrainConfig(lean_from="gold").check()


def test_lean_from_is_an_option_of_a_span_parser_only_and_checked(runner, tiny_corpus, tmp_path):
    from onlstm_cli.cli.commands import app
    out = str(tmp_path / "m.onlstm")
    result = runner.invoke(app, ["train", str(tiny_corpus["train"]), "--lean-from", "trees", "-o", out])
    assert result.exit_code != 0 and "--lean-from is for a span parser's teachers" in result.output
    result = runner.invoke(app, ["train", str(tiny_corpus["train"]), "--seeds", "2", "--lean-from", "gold", "-o", out])
    assert result.exit_code == 2 and "Traceback" not in result.output and "gold" in result.output


def test_a_recipe_recorded_before_word_order_reads_the_trees_lean():
    from dataclasses import asdict
    from onlstm_cli.config import RecipeConfig
    from onlstm_cli.training.recipe.runner import as_recorded
    options = {"recipe": asdict(RecipeConfig()), "span_parser": asdict(SelfTrainConfig(lean_from="word-order"))}
    assert as_recorded(options, RecipeConfig(), SelfTrainConfig(lean_from="word-order"))[1].lean_from == "word-order"
    del options["span_parser"]["lean_from"]
    assert as_recorded(options, RecipeConfig(), SelfTrainConfig(lean_from="word-order"))[1].lean_from == "trees"


class PaperSplitTeacher:
    weighing = 0

    def __init__(self):
        self.split = "paper"

    def use_split(self, rule):
        self.split = rule


@pytest.mark.parametrize("written, split", [([5.0, 4.0], "symmetric"), ([-9.0, -6.0], "symmetric"),
                                            ([9.0, 6.0], "paper")])
def test_the_paper_split_stays_only_where_word_order_leans_right(written, split):
    """The paper's split leans right by itself: it is kept only where the teachers' word order leans right."""
    from onlstm_cli.training.student.votes import lean_split
    teachers, said = [PaperSplitTeacher(), PaperSplitTeacher()], []
    lengths = [5, 6]
    free = [[[right_branching_spans(n) for n in lengths]] for _ in teachers]  # their trees lean right as written
    chosen = lean_split(teachers, free, lengths, said.append, WordOrder(written, [5.0, 4.0]))
    assert [t.split for t in teachers] == [split, split] and chosen == (None if split == "paper" else split)
    if split == "symmetric":
        shown = "no direction" if written[0] > 0 else "a left lean"
        assert said == [f"the split: symmetric (the teachers' word order shows {shown}: the paper's split, which "
                        "leans right, is not used)"]


def test_teachers_too_lexical_for_a_direction_keep_the_symmetric_split_and_say_why():
    from onlstm_cli.training.student.votes import lean_split
    teachers, said = [PaperSplitTeacher(), PaperSplitTeacher()], []
    lengths = [5, 6]
    free = [[[right_branching_spans(n) for n in lengths]] for _ in teachers]
    order = WordOrder([19.0, 16.0], [5.0, 4.0], MAX_LEXICAL_AGREEMENT + 1)  # word order alone would read right
    assert lean_split(teachers, free, lengths, said.append, order) == "symmetric"
    assert [t.split for t in teachers] == ["symmetric", "symmetric"]
    assert said[0].startswith("the split: symmetric (the teachers' trees are too lexical to show the text's "
                              "direction: they agree with word frequency's trees 16.0 points above random trees'")


@pytest.mark.parametrize("lean_from", ["word-order", "trees"])
def test_auto_gives_no_voter_where_a_teacher_votes_with_a_span_parsers_trees(tiny_loaded, tiny_corpus, lean_from):
    """A second round: a span parser learned its lean from an earlier round's votes, so the lean its trees keep on
    shuffled words is not the model's own, and neither reading is the text's; the teachers of
    test_a_lean_that_shuffling_takes_away_chooses_its_direction get a right-branching voter, these none."""
    import types
    from onlstm_cli.induction.teachers import SpanParserTeacher
    from onlstm_cli.text.corpus import read_as_trained
    from onlstm_cli.training.student.votes import learned_from_votes

    class SecondRoundTeacher(OrderTeacher, SpanParserTeacher):
        def coverage_warning(self, sentences):
            return None

    written = {tuple(s) for s in read_as_trained(tiny_corpus["valid"], tiny_loaded)}
    said, teachers = [], [SecondRoundTeacher(f"r2-{k}.onlstm", "order", written, tiny_loaded.tokenizer)
                          for k in range(2)]
    teachers[1].host = types.SimpleNamespace(kind="onlstm", tree_parser=None)  # no span parser: its LM's trees
    assert learned_from_votes(teachers) == []
    teachers[1].host = types.SimpleNamespace(kind="pcfg", tree_parser=object())  # a PCFG: its own grammar's trees
    assert learned_from_votes(teachers) == []
    teachers[1].host = types.SimpleNamespace(kind="onlstm", tree_parser=object())  # a self-trained file's parser
    assert learned_from_votes(teachers) == ["r2-1.onlstm"]
    assert learned_from_votes([OrderTeacher("lm.onlstm", "order", written, tiny_loaded.tokenizer)]) == []
    votes = votes_of(teachers, tiny_corpus["train"], tiny_corpus["valid"],
                     SelfTrainConfig(right_branching="auto", max_branching_agreement=100.0, lean_from=lean_from),
                     said.append, host=tiny_loaded)
    assert (votes.right_branching, votes.left_branching) == (0.0, 0.0)
    assert any(line.startswith("the branching voter: none (auto: r2-1.onlstm votes with a span parser's trees, "
                               "whose lean was learned from an earlier round's votes") for line in said), said
    assert not any(line.startswith("warning") for line in said)
