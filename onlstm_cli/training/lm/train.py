"""Training: corpus → token stream → truncated-BPTT language-model training with checkpoints.

The setup of a run (its loop is trainer.py). One loop, AWD-LSTM style: the corpus is one long stream of word ids with <eos> after every sentence
(corpus.py), cut into `batch_size` columns and read in windows of about `bptt` tokens; the hidden state
carries over between windows. After every epoch (and when time runs out) the validation perplexity decides
whether `out` is replaced; a checkpoint with the optimizer state is written beside it so that a run can
resume.

Started by torchrun with several processes, each process trains a DistributedDataParallel copy of the model
on its own slice of the stream (run/distributed.py); rank 0 alone validates, reports and writes files.
"""
from __future__ import annotations

import gc
import random
from dataclasses import replace
from pathlib import Path

import torch

from onlstm_cli.errors import RankZeroFailed, TrainingError
from onlstm_cli.lm.model import ModelConfig, ONLSTMLanguageModel, resolve_device
from onlstm_cli.lm.perplexity import unigram_perplexity
from onlstm_cli.config import DEFAULT_MAX_VOCAB, DEFAULT_MIN_FREQ, DEFAULT_UNIT_BUCKETS, DEFAULT_UNITS, TrainConfig
from onlstm_cli.text.tokenizers import Tokenizer
from onlstm_cli.training.run.distributed import Group, process_group, rank_zero_reads
from onlstm_cli.training.lm.checks import check_free_space, reconcile_best
from onlstm_cli.training.run.files import check_destination, checkpoint_path
from onlstm_cli.training.lm.report import (LineReporter, NullReporter, Reporter, against_word_frequencies,
                                          swinging_curve)
from onlstm_cli.training.lm.setup import Plan, make_plan, training_columns, validation_data
from onlstm_cli.training.lm.steps import should_average
from onlstm_cli.training.lm.trainer import Trainer, TrainResult
from onlstm_cli.training.run.clock import Budget
from onlstm_cli.trees import SPLIT_RULES

# what callers import from here: train_model and its result, the reporters, the checkpoint's path
__all__ = ["LineReporter", "NullReporter", "RankZeroFailed", "Reporter", "TrainConfig", "TrainResult",
           "check_options", "checkpoint_path", "should_average", "train_model", "use_threads"]


def check_options(model_config: dict | None, train_config: TrainConfig, max_vocab: int | None = DEFAULT_MAX_VOCAB,
                  min_freq: int = DEFAULT_MIN_FREQ, split: str | None = None) -> None:
    """train_model's options, each bad one a one-line TrainingError before anything is read (a caller that trains
    several models, the recipe, checks them once before it starts). `max_vocab` None: every word."""
    train_config.check()
    ModelConfig(vocab_size=0, **(model_config or {})).check()  # (its vocabulary is not read yet)
    if max_vocab is not None and max_vocab < 3:
        raise TrainingError("--max-vocab must be at least 3 (<unk>, <eos> and one word)")
    if min_freq < 1:
        raise TrainingError("--min-freq must be at least 1")
    if split is not None and split not in SPLIT_RULES:  # else only reading the trained file would find it
        raise TrainingError(f"unknown split rule {split!r}; choose from {', '.join(SPLIT_RULES)}")


def use_threads(threads: int | None) -> None:
    """torch's CPU threads, as --threads says (None: torch's own choice, all cores)."""
    TrainConfig.check_threads(threads)
    if threads:
        torch.set_num_threads(threads)


def shared_plan(group: Group, read_plan) -> tuple[Plan, ONLSTMLanguageModel | None, torch.Tensor | None]:
    """Rank 0's `read_plan()` (the plan, the model, the validation data), with the plan sent to every rank
    (rank_zero_reads); the model and the validation data stay on rank 0."""
    on_rank_zero = {}

    def read():
        plan, on_rank_zero["model"], on_rank_zero["valid"] = read_plan()
        return plan
    plan = rank_zero_reads(group, read)
    return plan, on_rank_zero.get("model"), on_rank_zero.get("valid")


def word_frequencies(plan: Plan, data, valid_data, group: Group) -> dict:
    """{"unigram_ppl": the validation text's perplexity under the training text's word frequencies alone}, for the
    run's data meta (rank 0's columns; a model of whole words, validated); {} otherwise."""
    if not group.is_main or valid_data is None or plan.config.get("word_rows"):
        return {}
    return {"unigram_ppl": round(unigram_perplexity(data.counts(len(plan.vocab)), valid_data.cpu(), len(plan.vocab)), 2)}


def said_at_the_end(result: TrainResult, data_meta: dict, lr_schedule: str, reporter: Reporter) -> TrainResult:
    """The run's result, once its last lines (report.py) are said: how its validation curve swung, where it did,
    and its model beside the word frequencies."""
    for line in (swinging_curve(result.history, lr_schedule),
                 against_word_frequencies(result.best_valid_ppl, data_meta.get("unigram_ppl"))):
        if line:
            reporter.message(line)
    return result


def train_model(corpus: str | Path, out: str | Path, model_config: dict | None = None,
                train_config: TrainConfig | None = None, valid: str | Path | None = None,
                tokenizer: Tokenizer | None = None, lang: str = "en", pretokenized: bool = False,
                keep_punct: bool = False, max_vocab: int | None = DEFAULT_MAX_VOCAB, min_freq: int = DEFAULT_MIN_FREQ,
                parse_layer: int | None = None, resume: str | Path | None = None,
                reporter: Reporter | None = None, split: str | None = None,
                budget: Budget | None = None, units: str = DEFAULT_UNITS,
                unit_buckets: int = DEFAULT_UNIT_BUCKETS) -> TrainResult:
    """Train (or resume training) an ON-LSTM LM; `out` holds the best model by validation perplexity.
    `parse_layer` and `split` are what the model file parses with by default (None: the middle layer, and
    `default_split(lang)`); a resumed run keeps its checkpoint's. `units`: words, ngrams (every word also read by
    its character n-grams, text/units.py), or auto (n-grams where the corpus has many rare words). `budget`: the run's time (run/clock.py):
    its seconds over all its runs (default: `train_config.time_budget`), and where it has one, a time it stops at
    even where its seconds have more (a recipe's stage ends there, the run's set-up inside it). Every option is
    checked before anything is read (check_options): a bad one is a one-line TrainingError.

    Under torchrun with several processes this trains one model on all of them (see run/distributed.py).
    """
    tc = train_config or TrainConfig()
    check_options(model_config, tc, max_vocab, min_freq, split)
    budget = Budget(tc.time_budget) if budget is None else budget
    tc = replace(tc, time_budget=budget.seconds)  # what the model's record says: the budget's own seconds
    use_threads(tc.threads)
    out = Path(out)
    with process_group(resolve_device(tc.device)) as (group, device):
        reporter = (reporter or LineReporter()) if group.is_main else NullReporter()
        random.seed(tc.seed)
        torch.manual_seed(tc.seed + group.rank)  # each rank its own dropout masks; DDP copies rank 0's weights

        def read_plan():  # on rank 0 alone
            check_destination(out)
            plan, model = make_plan(corpus, resume, model_config, tokenizer or Tokenizer(), lang, pretokenized,
                                    keep_punct, max_vocab, min_freq, parse_layer, group.world_size * tc.batch_size,
                                    reporter, valid, tc.optimizer, split, units, unit_buckets)
            model = model or ONLSTMLanguageModel(ModelConfig(**plan.config), plan.vocab.itos)
            check_free_space(out, model)
            if resume is not None:
                reconcile_best(plan.state, out, reporter)
            valid_data = None if valid is None else validation_data(valid, plan, tc.eval_batch_size).to(device)
            return plan, model, valid_data

        plan, model, valid_data = shared_plan(group, read_plan)
        data = training_columns(corpus, out, plan, tc.batch_size, group)
        if model is None:
            model = ONLSTMLanguageModel(ModelConfig(**plan.config), plan.vocab.itos)
        data_meta = {"corpus": str(corpus), "valid": str(valid) if valid else None,
                     "pretokenized": plan.pretokenized, "keep_punct": plan.keep_punct,
                     "train_tokens": data.rows * group.world_size * tc.batch_size,
                     "max_vocab": max_vocab, "min_freq": min_freq, "punctuation": "boundaries",
                     **word_frequencies(plan, data, valid_data, group)}
        trainer = Trainer(model, plan, data, valid_data, tc, group, device, reporter, out, data_meta, budget)
        try:
            return said_at_the_end(trainer.run(), data_meta, tc.lr_schedule, reporter)
        finally:
            # DDP's reducer must go before its process group does: destroyed after it, under load, a worker
            # could abort at exit ("terminate called without an active exception")
            del trainer
            gc.collect()
