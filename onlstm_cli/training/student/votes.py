"""The teachers' votes: each sentence's spans with the share of the voters whose tree has it (the span parser's
targets), a branching-direction voter whose weight is read from the teachers' own trees, and the votes'
consensus tree."""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from onlstm_cli.config import AUTO, SelfTrainConfig
from onlstm_cli.errors import StoppedBySignal, TrainingError
from onlstm_cli.evaluation.metrics import (branching_agreements, left_branching_spans, mutual_agreement,
                                          right_branching_spans)
from onlstm_cli.induction.teachers import SpanParserTeacher, as_teacher, model_trees
from onlstm_cli.modelfile import LoadedModel
from onlstm_cli.span.model import cky
from onlstm_cli.text.corpus import read_as_trained_with_pieces
from onlstm_cli.training.student.direction import (NO_DIRECTION, WordOrder, chance_agreement,
                                                    direction_free_trees, word_order)
from onlstm_cli.training.student.left_out import without_collapsed, without_far_apart
from onlstm_cli.trees import build_tree, spans_cut_at_marks, tree_spans


def teacher_spans(teachers: list[LoadedModel], sentences: list[list[str]], batch_size: int = 64,
                  model_tokens: bool = True, right_branching: float = 0.0, span_parsers: bool = False) -> list[dict]:
    """Each (normalized) sentence's constituents (start, end) in the teachers' trees, with the share of the
    votes whose tree has it (1.0 for every span of a single teacher): the span parser's targets.
    `model_tokens`: the words are the teachers' tokenizer's own cut (as in training text; see
    parser.sentence_distances). `right_branching`: the weight of one more voter, the right-branching tree
    (each teacher weighs 1), a prior toward English-like trees that lifted ON-LSTM ensembles in the
    literature (docs/experiments/levers.md)."""
    trees = [model_trees(t, sentences, batch_size, model_tokens, span_parsers) for t in teachers]
    return vote(trees, [len(words) for words in sentences], right_branching)


def vote(trees: list[list[set]], lengths: list[int], right_branching: float = 0.0,
         left_branching: float = 0.0, weights: list[float] | None = None) -> list[dict]:
    """Each sentence's spans with their share of the votes: every teacher's tree weighs 1 (or its `weights`
    entry), the right-branching tree `right_branching` and the left-branching tree `left_branching`."""
    votes: list[dict] = [{} for _ in lengths]
    weights = [1.0] * len(trees) if weights is None else weights
    total = sum(weights) + right_branching + left_branching
    for spans_of, weight in zip(trees, weights):
        for counts, spans in zip(votes, spans_of):
            for span in spans:
                counts[span] = counts.get(span, 0.0) + weight / total
    for weight, shape in ((right_branching, right_branching_spans), (left_branching, left_branching_spans)):
        if weight > 0:
            for counts, n in zip(votes, lengths):
                for span in shape(n):
                    counts[span] = counts.get(span, 0.0) + weight / total
    return votes


def consensus_heights(votes: list[dict], lengths: list[int], batch_size: int = 256) -> list[list[int]]:
    """Each sentence's consensus tree of the votes, as split heights (span_parser.split_heights): the binary
    tree with the largest sum of (share − ½) over its spans, so a span most voters have counts for it and one
    that few have counts against it."""
    heights: list[list[int]] = [[] for _ in lengths]
    order = sorted(range(len(lengths)), key=lambda k: lengths[k])
    for start in range(0, len(order), batch_size):
        batch = order[start:start + batch_size]
        size = lengths[batch[-1]] + 1
        scores = torch.full((len(batch), size, size), -0.5)
        for row, k in enumerate(batch):
            for (i, j), share in votes[k].items():
                scores[row, i, j] = share - 0.5
        for k, height in zip(batch, cky(scores, [lengths[k] for k in batch])):
            heights[k] = height
    return heights


def consensus_targets(votes: list[dict], lengths: list[int], batch_size: int = 256) -> list[dict]:
    """--targets tree: each sentence's consensus tree, 1 for its spans and 0 (absent) for every other."""
    return [dict.fromkeys(tree_spans(build_tree(height, list(range(n)), "symmetric")), 1.0)
            for height, n in zip(consensus_heights(votes, lengths, batch_size), lengths)]


MIN_TEACHER_WEIGHT = 0.01  # of a teacher that agrees with the others no more than random trees do, before scaling


def agreement_weights(mutual: list[float], lengths: list[int]) -> list[float]:
    """Each teacher's weight in the vote (SelfTrainConfig.teacher_weights "agreement"): its mean agreement with the
    others (`mutual`) above chance_agreement, scaled so that the weights average 1 (the branching voter keeps the
    scale of one teacher). Why: a teacher that agrees with the others far above chance shares their structure, and
    one near chance adds noise to the vote (weak Turkish ON-LSTMs beside PCFGs, docs/experiments/pcfg.md); no gold
    tree is read."""
    chance = chance_agreement(lengths)
    above = [max(m - chance, MIN_TEACHER_WEIGHT) for m in mutual]
    return [len(above) * a / sum(above) for a in above]


@dataclass
class AutoWeight:
    weight: float  # of the voter that branches the way the teachers lean
    right: float   # the teachers' mean agreement with right-branching trees (%)
    left: float    # with left-branching trees
    mutual: float  # with each other
    given: str | None = None  # the direction the teachers' word order shows (WordOrder), "none" where it shows none
    why_none: str = NO_DIRECTION  # where `given` is "none"

    @property
    def direction(self) -> str:
        """"right", "left" or "none": the branching tree that votes (right where the teachers lean neither way)."""
        if self.given:
            return self.given
        return "left" if self.left > self.right else "right"

    def weights(self) -> tuple[float, float]:
        """(the right-branching voter's weight, the left-branching voter's)."""
        if self.direction == "none":
            return (0.0, 0.0)
        return (0.0, self.weight) if self.direction == "left" else (self.weight, 0.0)

    def __str__(self) -> str:
        trees = (f"the teachers' trees of the validation text agree {self.right:.1f} with right-branching trees, "
                 f"{self.left:.1f} with left-branching ones, {self.mutual:.1f} with each other")
        if self.direction == "none":
            return f"none (auto: {self.why_none}; {trees})"
        return f"a {self.direction}-branching voter of weight {self.weight:.2f} (auto: {trees})"


def auto_weight(trees: list[list[set]], lengths: list[int], mutual: list[float] | None = None) -> AutoWeight:
    """The branching voter's weight from the teachers' trees of the validation text (no gold tree read), in the
    direction they lean: K × |their mean agreement with right-branching trees − with left-branching ones| / their
    mean agreement with each other, for the right-branching tree where they lean right and the left-branching tree
    where they lean left (a head-final language); 0 with one teacher (one teacher and a right-branching voter of
    weight 1 cost English 4 points, docs/experiments/levers.md).
    Why: left- and right-branching trees share no span, so what a tree shares with the one is what any tree shares
    with a fixed shape of this text by chance; what the teachers share with the other beyond that, against what
    they share with each other, is how much of their consensus that prior already is. Nothing here assumes which
    way a language branches.
    `mutual`: each teacher's mean agreement with the others (metrics.mutual_agreement), where already computed."""
    k = len(trees)
    if k < 2:
        return AutoWeight(0.0, math.nan, math.nan, math.nan)
    agreements = [branching_agreements(t, lengths) for t in trees]
    with_right = sum(right for right, _ in agreements) / k
    with_left = sum(left for _, left in agreements) / k
    mean_mutual = sum(mutual if mutual is not None else mutual_agreement(trees)) / k
    weight = k * abs(with_right - with_left) / mean_mutual if mean_mutual > 0 else 0.0
    return AutoWeight(round(weight, 3), 100 * with_right, 100 * with_left, 100 * mean_mutual)


@dataclass
class Votes:
    ids: list
    spans: list
    valid_ids: list
    valid_spans: list
    eos_id: int
    agreement: list | None = None  # per teacher, with several: its mean agreement with the others (in %)
    right_branching: float = 0.0   # the right-branching voter's weight in these votes
    left_branching: float = 0.0    # the left-branching voter's (auto, where the teachers lean left)
    valid_sentences: list = field(default_factory=list)    # the validation sentences (normalized words)
    valid_parse_trees: list = field(default_factory=list)  # each teacher's own trees of them (its weighing voter)
    split: str | None = None       # the split rule the language models' trees were built with, where auto chose it
    # the training sentences (normalized words): a student of n-grams reads by them a word its vocabulary lacks
    sentences: list = field(default_factory=list)
    collapsed: list = field(default_factory=list)  # the teachers left out of the vote as a branching rule (Collapsed)
    far_apart: list = field(default_factory=list)  # those left out as far from the others' trees (FarApart)
    teacher_names: list = field(default_factory=list)  # the voting teachers' names, as valid_parse_trees orders them
    lexical: float | None = None   # auto's: how far their trees are word frequency's (direction.lexical_agreement)
    # where the votes were cut at marks, each validation sentence's piece levels: a tree compared with them is cut too
    valid_pieces: list = field(default_factory=list)

    def as_voted(self, trees: list[set], keep: list[int]) -> list[set]:
        """Trees of the validation sentences `keep` as the votes hold theirs: cut at marks where the votes were."""
        if not self.valid_pieces:
            return trees
        return [spans_cut_at_marks(t, self.valid_pieces[k]) for t, k in zip(trees, keep)]

    def left_out(self) -> list:
        """The teachers that do not vote (left_out.Collapsed, left_out.FarApart)."""
        return self.collapsed + self.far_apart


def votes_of(teachers: list, corpus, valid, train: SelfTrainConfig, log, host: LoadedModel | None = None,
             deadline: float | None = None, limit: int | None = None, voter_spans: bool = True,
             cut_at_marks: bool = False, stopped=None) -> Votes:
    """The teachers' trees of the training and validation text, as span targets over the word ids of `host` (the
    model file the student is written into; default: the first teacher's). `teachers`: Teachers
    (induction/teachers.py), or loaded model files, each made the teacher `train` says. `deadline`
    (time.time()): the training text is parsed until then (at least its first PARSE_CHUNK sentences), the
    votes being those of the sentences parsed; `limit`: the first `limit` training sentences only (a resumed
    run's, as its first run parsed them). Without `voter_spans` the training sentences' spans are the teachers'
    alone (parse-focusing's: a grammar may take the branching voter's one tree whole); the voter is still read.
    With `cut_at_marks` each voter's tree is cut at the marks its line had before the votes are counted (cut_each);
    the lean, the weights and the agreement are read from the uncut trees."""
    teachers = [as_teacher(t, train.teacher_layers, train.extra_layers, train.span_parser_teachers) for t in teachers]
    host = host or next((t.host for t in teachers if t.host is not None), None)
    if host is None:
        raise TrainingError("no teacher is a language model: give `host`, the file whose reading the votes follow")
    vocab = host.vocab  # the texts are read as the host's training text was (punctuation where it kept it)
    sentences, pieces = short_enough(*read_as_trained_with_pieces(corpus, host), train.max_len, limit)
    valid_sentences, valid_pieces = short_enough(*read_as_trained_with_pieces(valid, host), train.max_len)
    say_teachers(teachers, sentences, valid_sentences, log)
    valid_lengths = [len(s) for s in valid_sentences]
    free_trees = direction_free_trees(teachers, valid_sentences)
    teachers, free_trees, collapsed = without_collapsed(teachers, free_trees, valid_lengths,
                                                        train.max_branching_agreement, log)
    teachers, free_trees, far_apart = without_far_apart(teachers, free_trees, train.min_relative_agreement, log)
    order = (word_order(teachers, free_trees, valid_sentences, valid_lengths, sentences)
             if train.right_branching == AUTO and len(teachers) > 1 else None)
    if order is not None:
        log(str(order))
    by_word_order = order if train.lean_from == "word-order" else None
    split = (lean_split(teachers, free_trees, valid_lengths, log, by_word_order) if train.right_branching == AUTO
             else None)
    train_trees = parsed_in_time(teachers, sentences, deadline, log, stopped)  # a list of trees a voter, per teacher
    sentences = sentences[:len(train_trees[0][0])]
    # the direction-free trees are the ones they vote with, unless a language model keeps the paper's split
    valid_trees = (free_trees if not any(t.split == "paper" for t in teachers)
                   else [t.voter_trees(valid_sentences) for t in teachers])
    weighing = [t.weighing for t in teachers]
    parse_layers = [own[at] for own, at in zip(valid_trees, weighing)]  # each teacher's parse layer's trees
    agreement, mutual = teachers_agreement(teachers, parse_layers, valid_trees, log)
    right, left = train.right_branching, 0.0
    if right == AUTO:
        right, left = auto_voter(parse_layers, valid_lengths, mutual, order, by_word_order, log,
                                 learned_from_votes(teachers))
    weights = voter_weights(train.teacher_weights, teachers, valid_trees, mutual, valid_lengths, log)
    train_trees = [trees for own in train_trees for trees in own]  # every voter, each layer of each teacher
    valid_trees = [trees for own in valid_trees for trees in own]
    lengths = [len(s) for s in sentences]
    if cut_at_marks:
        train_trees, valid_trees = cut_each(train_trees, pieces), cut_each(valid_trees, valid_pieces)
    spans = vote(train_trees, lengths, *((right, left) if voter_spans else (0.0, 0.0)), weights)
    valid_spans = vote(valid_trees, valid_lengths, right, left, weights)
    if train.targets == "tree":
        log("the span parser learns the votes' consensus tree (--targets tree), not each span's share")
        spans, valid_spans = consensus_targets(spans, lengths), consensus_targets(valid_spans, valid_lengths)
    return Votes([vocab.encode(s) for s in sentences], spans, [vocab.encode(s) for s in valid_sentences],
                 valid_spans, vocab.eos_id, agreement, right, left, valid_sentences, parse_layers, split, sentences,
                 collapsed, far_apart, [t.name for t in teachers], order.lexical if order is not None else None,
                 valid_pieces if cut_at_marks else [])


def short_enough(sentences: list, pieces: list, max_len: int, limit: int | None = None) -> tuple[list, list]:
    """The sentences of at most `max_len` words (the first `limit` of them), with their piece levels."""
    kept = [k for k, s in enumerate(sentences) if len(s) <= max_len][:limit]
    return [sentences[k] for k in kept], [pieces[k] for k in kept]


def cut_each(voters: list, pieces: list) -> list:
    """Each voter's trees cut at the marks of their lines (trees.spans_cut_at_marks), as `parse` cuts the student's:
    the student, which reads no mark, learns from the words where the pieces split (docs/experiments/pcfg.md)."""
    return [[spans_cut_at_marks(tree, levels) for tree, levels in zip(trees, pieces)] for trees in voters]


def teachers_agreement(teachers: list, parse_layers: list, voters_of: list, log) -> tuple:
    """(each teacher's agreement with the others in %, rounded, and as metrics.mutual_agreement gives it), logged;
    (None, None) with one teacher. The seed_agreement of docs/experiments/english.md, on the validation text: a
    free sign of an odd run."""
    if len(teachers) < 2:
        return None, None
    mutual = mutual_agreement(parse_layers)
    agreement = [round(100 * a, 2) for a in mutual]
    log("the teachers' agreement (mean sentence F1 of each one's trees against the others', validation text"
        + (", their parse layers" if any(len(own) > 1 for own in voters_of) else "") + "): "
        + ", ".join(f"{Path(t.name).name} {a:.2f}" for t, a in zip(teachers, agreement)))
    return agreement, mutual


def voter_weights(weighting: str, teachers: list, voters_of: list, mutual: list[float] | None, lengths: list[int],
                  log) -> list[float] | None:
    """Each voter's weight (a teacher's voters, `voters_of`, carry its weight), logged, where `weighting` is
    "agreement" and several teachers vote; None: each weighs 1."""
    if weighting != "agreement" or mutual is None:
        return None
    by_teacher = agreement_weights(mutual, lengths)
    log("the teachers' weights in the vote (their agreement with the others above random trees'): "
        + ", ".join(f"{Path(t.name).name} {w:.2f}" for t, w in zip(teachers, by_teacher)))
    return [w for w, own in zip(by_teacher, voters_of) for _ in own]


def auto_voter(parse_layers: list, lengths: list[int], mutual: list[float] | None, order: WordOrder | None,
               by_word_order: WordOrder | None, log, learned: list[str] = ()) -> tuple[float, float]:
    """AUTO's (right-branching voter's weight, left-branching voter's), logged: over each teacher's parse layer,
    K = the teachers (read over every layer's voter, the layers above (less alike) and the doubled K inflated it
    until the consensus was the right-branching tree); in the direction word order shows where `by_word_order`
    is given; a warning where the direction the trees lean is not the one their word order shows. None where
    a teacher is `learned` (learned_from_votes)."""
    chosen = auto_weight(parse_layers, lengths, mutual)
    if by_word_order is not None:
        chosen.given = by_word_order.direction or "none"
        chosen.why_none = by_word_order.why_none
    if learned:
        chosen.given, chosen.why_none = "none", (
            f"{', '.join(learned)} vote{'s' if len(learned) == 1 else ''} with a span parser's trees, whose lean was "
            "learned from an earlier round's votes, a branching voter's among them: it survives the shuffle, and "
            "neither it nor word order reads the text's own direction")
    log(f"the branching voter: {chosen}" if len(parse_layers) > 1 else
        "the branching voter: none (auto, with one teacher)")
    if (order is not None and by_word_order is None and not learned and chosen.weight > 0
            and order.direction != chosen.direction):
        log(f"warning: the {chosen.direction}-branching voter follows the way the teachers' trees lean, but their "
            "word order (the part of that lean that shuffling each sentence's words takes away) shows "
            + (f"a {order.direction} lean" if order.direction else "no direction")
            + ": the lean may be the models' own, not the text's (--lean-from word-order reads the direction from "
            "word order alone)")
    return chosen.weights()


def learned_from_votes(teachers: list) -> list[str]:
    """The teachers (their files' names) that vote with a span parser's trees, a second round's (SpanParserTeacher
    over a self-trained file; a PCFG's file, which --second-round also reads through it, votes with its own
    grammar's trees): `auto` gives no branching voter where there is one. Such a student lost in English with a
    voter read from the trees' lean (word order there reads a left lean), and a Chinese one gained without the
    voter `auto` had given it (docs/experiments/pcfg.md)."""
    return [Path(t.name).name for t in teachers
            if isinstance(t, SpanParserTeacher) and t.host is not None and t.host.kind != "pcfg"
            and t.host.tree_parser is not None]


def say_teachers(teachers: list, sentences: list, valid_sentences: list, log) -> None:
    """What the votes' log says first: a teacher that cannot read the text, who parses how much, and the layers
    each votes with; a TrainingError where either text has no sentence to parse."""
    for teacher in teachers:  # a Chinese teacher on English text trains without a complaint otherwise
        message = teacher.coverage_warning(sentences[:2000])
        if message:
            log(f"warning: {message}")
    names = ", ".join(t.name for t in teachers)
    log(f"teacher{'s' if len(teachers) > 1 else ''} {names}: parsing {len(sentences):,} training and "
        f"{len(valid_sentences):,} validation sentences")
    if any(len(t.layers) > 1 for t in teachers):
        others = [Path(t.name).name for t in teachers if not t.layers]
        log("each teacher votes with the trees of its layers " + ", ".join(
            f"{Path(t.name).name} {'+'.join(map(str, t.layers))}" for t in teachers if t.layers)
            + (f"; {', '.join(others)} with {'their' if len(others) > 1 else 'its'} own trees" if others else ""))
    if not sentences or not valid_sentences:
        raise TrainingError("no sentence to learn from in the corpus or in --valid (empty, or every line too long)")


PARSE_CHUNK = 1000  # training sentences the teachers parse between two looks at the clock


def parsed_in_time(teachers: list, sentences: list, deadline: float | None, log, stopped=None) -> list:
    """Each teacher's voters' trees of the training sentences; with a `deadline` (time.time()), a chunk at a
    time until it passes, at least one chunk: where a time budget is short, the span parser learns from the first
    sentences rather than the teachers' parse overrunning the budget. `stopped` (a callable: the number of the
    signal, Ctrl-C's or SIGTERM's, once one came, else 0) is asked between chunks: a resumed run parses again, so
    waiting for the whole parse would save nothing, and a scheduler's SIGKILL could come first."""
    if deadline is None and stopped is None:
        return [t.voter_trees(sentences) for t in teachers]
    trees, done = [[] for _ in teachers], 0
    while done < len(sentences) and (done == 0 or deadline is None or time.time() < deadline):
        if stopped is not None and (signum := stopped()):
            raise StoppedBySignal(f"stopped while the teachers parsed ({done:,} of {len(sentences):,} training "
                                  "sentences): nothing was trained or written; run the command again", signum)
        chunk = sentences[done:done + PARSE_CHUNK]
        for k, teacher in enumerate(teachers):
            parts = teacher.voter_trees(chunk)
            trees[k] = [voter + part for voter, part in zip(trees[k], parts)] if done else parts
        done += len(chunk)
    if done < len(sentences):
        log(f"the time budget let the teachers parse {done:,} of the {len(sentences):,} training sentences: the "
            "student learns from those (a larger --time-budget gives it more)")
    return trees


def lean_split(teachers: list, free_trees: list, valid_lengths: list[int], log,
               order: WordOrder | None = None) -> str | None:
    """The split rule the language-model teachers' trees are built with, read from the way they lean.

    The paper's split hangs the rest of a constituent to the right of the word it splits at: a right-branching
    prior of its own, which makes the trees it builds lean right whatever the language. So the lean is read from
    the trees of the symmetric split (`free_trees`, direction_free_trees), which has no direction: where they lean
    left, the teachers keep the symmetric split (for the trees they vote with, and the student's file, written
    into the first one's model) and "symmetric" is returned; where they lean right, the paper's split stays and
    None is returned. With `order` (lean_from word-order), the lean is its direction, and where it shows none
    the split is the symmetric one too."""
    paper = [t for t in teachers if t.split == "paper"]
    if len(teachers) < 2 or not paper:
        return None
    if order is None:  # the trees' own lean (their agreement with each other is not needed for its direction)
        right, left = (sum(side) / len(teachers) for side in zip(
            *(branching_agreements(own[t.weighing], valid_lengths) for t, own in zip(teachers, free_trees))))
        direction = "left" if left > right else "right"
        why = (f"the teachers' trees of the validation text built with it agree {100 * left:.1f} with "
               f"left-branching trees, {100 * right:.1f} with right-branching ones")
    else:
        direction = order.direction or "none"
        why = "the teachers' word order shows a left lean" if direction == "left" else order.why_none
    if direction == "right":
        return None
    for teacher in paper:
        teacher.use_split("symmetric")
    log(f"the split: symmetric ({why}: the paper's split, which leans right, is not used)")
    return "symmetric"
