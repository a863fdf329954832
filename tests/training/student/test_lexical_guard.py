"""`auto` sets aside the word-order direction of teachers whose trees are mostly word frequency's
(direction.lexical_agreement): such trees lean the way rare words fall in a sentence, not the way it branches."""
from __future__ import annotations

import random
from collections import Counter

from onlstm_cli.config import SelfTrainConfig
from onlstm_cli.induction.teachers import TeacherBase
from onlstm_cli.text.corpus import read_as_trained
from onlstm_cli.training.student.direction import (MAX_LEXICAL_AGREEMENT, WordOrder, frequency_trees,
                                                   lexical_agreement, word_order)
from onlstm_cli.training.student.votes import votes_of
from onlstm_cli.trees import random_tree, tree_spans

COMMON = ["alpha", "beta", "gamma", "delta", "epsilon"]  # each rarer than the one before in the training text


def ordered_text(tmp_path, lines: int, seed: int) -> str:
    """Sentences of the common words in order, most frequent first, then a word seen nowhere else: their
    frequency trees are left-branching as written, and lean nowhere with the words shuffled."""
    rng = random.Random(seed)
    rows = [" ".join(COMMON + ["z" + "".join(rng.choice("qxjv") for _ in range(6))]) for _ in range(lines)]
    rows += [" ".join(w for k, w in enumerate(COMMON) for _ in range(len(COMMON) - k))] * 3  # alpha ×5 … epsilon ×1
    path = tmp_path / f"text{seed}.txt"
    path.write_text("\n".join(rows) + "\n")
    return str(path)


class FrequencyTeacher(TeacherBase):
    """Trees of word frequency alone (the training text's counts), whatever the word order: a teacher that
    learned which words are rare and nothing else."""

    def __init__(self, name, counts, tokenizer):
        self.name, self.counts, self.tokenizer = name, counts, tokenizer

    def voter_trees(self, sentences, batch_size=64, model_tokens=True):
        return [frequency_trees([list(s) for s in sentences], self.counts)]


class RandomTeacher(TeacherBase):
    def __init__(self, name, tokenizer=None):
        self.name, self.tokenizer = name, tokenizer

    def voter_trees(self, sentences, batch_size=64, model_tokens=True):
        return [[tree_spans(random_tree(list(range(len(s))), random.Random(f"{self.name}{' '.join(s)}")))
                 for s in sentences]]


def test_trees_of_word_frequency_are_far_above_chance_and_random_trees_are_not():
    rng = random.Random(0)
    train = [[f"w{rng.randrange(40)}" for _ in range(rng.randrange(3, 20))] for _ in range(300)]
    valid = [[f"w{rng.randrange(45)}" for _ in range(rng.randrange(1, 30))] for _ in range(200)]
    counts = Counter(w for s in train for w in s)
    lexical = frequency_trees(valid, counts)
    noise = RandomTeacher("r").voter_trees(valid)[0]
    assert lexical_agreement([lexical, lexical], valid, train) > 40
    assert abs(lexical_agreement([noise], valid, train)) < 5
    # the sentences of fewer than 3 words (no span to agree on) and past the first 1,000 are not read
    assert lexical_agreement([lexical], [["w1", "w2"]] * 5, train) == 0.0


def test_a_lexical_guard_above_the_threshold_hides_a_direction_the_parts_show():
    assert WordOrder([-8.0, -9.0], [0.0, 0.0], MAX_LEXICAL_AGREEMENT - 0.1).direction == "left"
    guarded = WordOrder([-8.0, -9.0], [0.0, 0.0], MAX_LEXICAL_AGREEMENT)
    assert guarded.direction is None and guarded.too_lexical
    assert "too lexical" in guarded.why_none and "too lexical" in str(guarded)
    assert WordOrder([-8.0, -9.0], [0.0, 0.0]).direction == "left"  # not read: no guard


def test_teachers_of_word_frequency_read_a_left_lean_that_the_guard_sets_aside(tmp_path, tiny_loaded):
    train, valid = ordered_text(tmp_path, 60, 0), ordered_text(tmp_path, 20, 1)
    train_sentences = read_as_trained(train, tiny_loaded)
    valid_sentences = read_as_trained(valid, tiny_loaded)
    counts = Counter(w for s in train_sentences for w in s)
    teachers = [FrequencyTeacher(f"f{k}", counts, tiny_loaded.tokenizer) for k in range(2)]
    free = [t.voter_trees(valid_sentences) for t in teachers]
    lengths = [len(s) for s in valid_sentences]
    order = word_order(teachers, free, valid_sentences, lengths, train_sentences)
    assert WordOrder(order.written, order.shuffled).direction == "left"  # what word order alone would read
    assert order.lexical >= MAX_LEXICAL_AGREEMENT and order.direction is None

    said = []
    votes = votes_of(teachers, train, valid, SelfTrainConfig(right_branching="auto", max_branching_agreement=100.0,
                                                             lean_from="word-order"), said.append, host=tiny_loaded)
    assert (votes.right_branching, votes.left_branching) == (0.0, 0.0)
    assert votes.lexical == order.lexical
    assert any(line.startswith("the branching voter: none (auto: the teachers' trees are too lexical")
               for line in said)
