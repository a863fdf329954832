"""A language model beside the word frequencies of its training text (a unigram model): what `train` says at its
end and `info` shows."""
from __future__ import annotations

import math

import numpy as np
import pytest

from conftest import TINY_MODEL, QuietReporter, tiny_train_config, write_corpus
from onlstm_cli.info import info_text, model_info
from onlstm_cli.lm.perplexity import unigram_perplexity
from onlstm_cli.text.corpus import TokenColumns
from onlstm_cli.training.lm.report import against_word_frequencies
from onlstm_cli.training.lm.train import train_model


def test_the_unigram_perplexity_is_that_of_the_words_frequencies():
    train = TokenColumns(np.array([0, 1, 2, 3] * 1000), 4)
    assert unigram_perplexity(train.counts(4), np.array([0, 1, 2, 3] * 10), 4) == pytest.approx(4.0, rel=1e-3)
    skewed = np.array([0] * 900 + [1] * 100)
    counts = TokenColumns(skewed, 10).counts(3, rows_at_once=7)  # read a few rows at a time, as a corpus is
    assert counts.tolist() == [900, 100, 0]
    # a text of the training text's own frequencies: exp(entropy)
    entropy = -(0.9 * math.log(0.9) + 0.1 * math.log(0.1))
    assert unigram_perplexity(counts[:2], skewed, 2) == pytest.approx(math.exp(entropy), rel=1e-3)
    unseen = unigram_perplexity(counts, np.array([0, 1, 2]), 3)  # a word the training text lacks: finite
    assert math.isfinite(unseen) and unseen > unigram_perplexity(counts, np.array([0, 1]), 3)


def test_the_last_word_warns_where_the_model_is_not_well_below_the_frequencies():
    assert against_word_frequencies(None, 300.0) is None and against_word_frequencies(200.0, None) is None
    good = against_word_frequencies(170.5, 691.6)
    assert good == ("the best model's validation perplexity 170.50 is 0.25 × that of the training text's word "
                    "frequencies alone (691.60)")
    weak = against_word_frequencies(279.7, 308.3)
    assert weak.startswith("warning: the best model's validation perplexity 279.70 is 0.91 ×")
    assert weak.endswith("it learned little of the words' order, so its trees will say little; more text helps more "
                         "than more time")


def test_a_run_says_it_and_info_shows_it(tmp_path):
    corpus, valid = write_corpus(tmp_path / "train.txt", 60, seed=0), write_corpus(tmp_path / "valid.txt", 12, seed=1)
    reporter = QuietReporter()
    out = tmp_path / "m.onlstm"
    result = train_model(corpus, out, dict(TINY_MODEL), tiny_train_config(epochs=1), valid=valid, reporter=reporter)
    said = [m for m in reporter.messages if "word frequencies alone" in m]
    assert len(said) == 1 and f"{result.best_valid_ppl:.2f}" in said[0]
    card = info_text(model_info(out))
    assert "the training text's word frequencies alone: " in card
    unseen = tmp_path / "none.onlstm"
    none = QuietReporter()
    train_model(corpus, unseen, dict(TINY_MODEL), tiny_train_config(epochs=1), reporter=none)  # no validation text
    assert not any("word frequencies" in m for m in none.messages)
