"""Which way the teachers' trees lean for the text's own reasons: the part of their lean that shuffling each
sentence's words takes away (word order), set aside where their trees are mostly word frequency's, and what
random trees agree by chance, the floor both of these are read against. No gold tree is read."""
from __future__ import annotations

import math
import random
from collections import Counter
from dataclasses import dataclass

from onlstm_cli.evaluation.metrics import branching_agreements, mutual_agreement, pairwise_agreement
from onlstm_cli.trees import build_tree, random_tree, tree_spans


def direction_free_trees(teachers: list, sentences: list) -> list:
    """Each teacher's voters' trees of `sentences`, a language model's built with the symmetric split: the paper's
    hangs the rest of a constituent to the right of the word it splits at, a right-branching lean of its own that
    is not the model's (votes.lean_split)."""
    paper = [t for t in teachers if t.split == "paper"]
    for teacher in paper:
        teacher.use_split("symmetric")
    try:
        return [t.voter_trees(sentences) for t in teachers]
    finally:
        for teacher in paper:
            teacher.use_split("paper")


RANDOM_TREES_SEED = 0  # the draws of random trees that chance agreement is read from: a rerun weighs alike


def chance_agreement(lengths: list[int]) -> float:
    """The mean agreement (as mutual_agreement reads it) of two independent draws of random trees (each split
    drawn uniformly, trees.random_tree) of sentences of these lengths: what teachers that share nothing agree."""
    rng = random.Random(RANDOM_TREES_SEED)
    draws = [[tree_spans(random_tree(list(range(n)), rng)) for n in lengths] for _ in range(2)]
    return mutual_agreement(draws)[0]


MAX_LEXICAL_AGREEMENT = 15.0  # points above chance: trees this much word frequency's show no direction
LEXICAL_LENGTHS = (3, 40)     # the validation sentences the lexical agreement is read on (shorter ones have no span)
LEXICAL_SENTENCES = 1000      # the first this many of them: enough for a mean, cheap beside the teachers' parse


def frequency_trees(sentences: list[list[str]], counts: Counter) -> list[set]:
    """Each sentence's tree from word frequency alone (its spans): a word's distance is its surprisal under the
    unigram `counts` (add-½), split symmetrically, so rare words open constituents."""
    total = sum(counts.values()) or 1
    return [tree_spans(build_tree([-math.log((counts[w] + 0.5) / total) for w in words], list(range(len(words))),
                                  "symmetric")) for words in sentences]


def lexical_agreement(trees: list[list[set]], sentences: list[list[str]], train_sentences: list[list[str]]) -> float:
    """How far the teachers' trees of `sentences` (one list a teacher, direction-free) are word frequency's: their
    mean agreement with frequency_trees (unigram counts of `train_sentences`) minus what random trees agree, in
    points of sentence F1, over the sentences of LEXICAL_LENGTHS words (the first LEXICAL_SENTENCES).
    Why: language models trained on a small text can learn little more than which words are rare; the lean of
    such trees is where rare words fall in a sentence, and it was read as the text's direction, the wrong one,
    where models whose direction helped were far below the threshold (docs/experiments/small-corpora.md)."""
    low, high = LEXICAL_LENGTHS
    picked = [k for k, words in enumerate(sentences) if low <= len(words) <= high][:LEXICAL_SENTENCES]
    if not picked or not trees:
        return 0.0
    lexical = frequency_trees([sentences[k] for k in picked], Counter(w for s in train_sentences for w in s))
    agreements = [pairwise_agreement([[own[k] for k in picked], lexical])[0, 1] for own in trees]
    chance = chance_agreement([len(sentences[k]) for k in picked])
    return round(100 * (sum(agreements) / len(agreements) - chance), 2)


def no_branching_tree_text(lexical) -> str:
    """", and no branching tree: …" where a run's recorded lexical agreement (meta, record: a number, or anything a
    file holds) was too lexical for a direction, for the lines that say who voted; "" otherwise."""
    if not isinstance(lexical, (int, float)) or lexical < MAX_LEXICAL_AGREEMENT:
        return ""
    return (f", and no branching tree: their trees agree with word frequency's trees {lexical:.1f} points above "
            "random trees', too lexical to show the text's direction")


MIN_WORD_ORDER_LEAN = 2.0  # points of sentence F1: the smallest mean lean word order must add for a direction
WORD_ORDER_SHUFFLE_SEED = 0  # the one shuffle the leans are compared with: a rerun reads the same direction
NO_DIRECTION = "the teachers' word order shows no direction"  # WordOrder.why_none where its trees are not lexical


@dataclass
class WordOrder:
    """Each teacher's lean (its trees' agreement with right-branching trees − with left-branching ones, in points,
    direction-free trees of the validation text) as written and with each sentence's words shuffled, and how
    lexical their trees are (lexical_agreement; None: not read).
    Why: a language model can lean one way whatever the words say (distances that drift with the position in the
    sentence); that lean survives the shuffle, and only what the shuffle takes away is the text's. On Turkish the
    teachers' lean was nearly all their own, with a sign that differed from seed to seed; on Portuguese and
    English word order's part had the language's sign (docs/experiments/small-corpora.md). Trees that are mostly
    word frequency's lean the way rare words fall in the sentence, which need not be the way it branches."""
    written: list[float]
    shuffled: list[float]
    lexical: float | None = None

    @property
    def parts(self) -> list[float]:
        """Each teacher's lean that word order adds: as written − shuffled."""
        return [w - s for w, s in zip(self.written, self.shuffled)]

    @property
    def too_lexical(self) -> bool:
        return self.lexical is not None and self.lexical >= MAX_LEXICAL_AGREEMENT

    @property
    def direction(self) -> str | None:
        """"right" or "left" where every teacher's part has that sign, their mean is MIN_WORD_ORDER_LEAN or more
        and their trees are not too lexical; None otherwise (and with one teacher)."""
        parts = self.parts
        mean = sum(parts) / len(parts) if parts else 0.0
        if (len(parts) < 2 or self.too_lexical or abs(mean) < MIN_WORD_ORDER_LEAN
                or any(p * mean <= 0 for p in parts)):
            return None
        return "right" if mean > 0 else "left"

    @property
    def why_none(self) -> str:
        """Why it shows no direction, for the branching voter's line."""
        if self.too_lexical:
            return (f"the teachers' trees are too lexical to show the text's direction: they agree with word "
                    f"frequency's trees {self.lexical:.1f} points above random trees', {MAX_LEXICAL_AGREEMENT:g} "
                    "or more")
        return NO_DIRECTION

    def __str__(self) -> str:
        shown = f"they lean {self.direction}" if self.direction else "no direction"
        lexical = ("" if self.lexical is None else
                   f"; their trees agree with word frequency's {self.lexical:+.1f} points above random trees'"
                   + (f", {MAX_LEXICAL_AGREEMENT:g} or more: too lexical for a direction" if self.too_lexical else ""))
        return ("the teachers' word order: " + shown + " (each one's lean toward right-branching trees, as written "
                "minus with each sentence's words shuffled: " + ", ".join(f"{p:+.1f}" for p in self.parts)
                + lexical + ")")


def word_order(teachers: list, free_trees: list, sentences: list, lengths: list[int],
               train_sentences: list | None = None) -> WordOrder:
    """The teachers' leans as written (`free_trees`: each teacher's voters' direction-free trees of `sentences`)
    and shuffled, and, given `train_sentences` (the training text), how lexical their trees are."""
    rng = random.Random(WORD_ORDER_SHUFFLE_SEED)
    shuffled_trees = direction_free_trees(teachers, [rng.sample(list(s), len(s)) for s in sentences])

    def lean(trees: list[set]) -> float:
        right, left = branching_agreements(trees, lengths)
        return round(100 * (right - left), 2)
    own = [trees[t.weighing] for t, trees in zip(teachers, free_trees)]
    lexical = lexical_agreement(own, sentences, train_sentences) if train_sentences is not None else None
    return WordOrder([lean(trees) for trees in own],
                     [lean(trees[t.weighing]) for t, trees in zip(teachers, shuffled_trees)], lexical)
