"""What a training run reads before it trains: rank 0's plan (the vocabulary, or the checkpoint it resumes),
each rank's columns of the corpus's token file, and the validation text. A failure is one line for the user
(TrainingError), said by rank 0 alone."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import torch

from onlstm_cli.text.corpus import (LONG_TOKEN, TokenColumns, batchify, corpus_token_file, count_words,
                                    iter_sentences, rank_columns, read_corpus, token_stream, unspaced_share)
from onlstm_cli.config import DEFAULT_UNIT_BUCKETS, DEFAULT_UNITS, LM_UNIT_CHOICES, UNIT_CHOICES
from onlstm_cli.errors import TrainingError
from onlstm_cli.training.run.distributed import Group
from onlstm_cli.lm.model import ModelConfig, ONLSTMLanguageModel
from onlstm_cli.modelfile import CHECKPOINT_FORMAT, model_from_archive, read_archive
from onlstm_cli.training.lm.checks import check_global_batch, check_resumed_optimizer, check_resumed_options
from onlstm_cli.training.run.files import token_file_path
from onlstm_cli.text.languages import default_split
from onlstm_cli.text.tokenizers import Tokenizer
from onlstm_cli.text.units import MAX_INPUT_TYPES, reads_ngrams, unseen_share
from onlstm_cli.text.vocab import Vocabulary


@dataclass
class RunState:
    """Where a run stands; a checkpoint keeps it beside the weights and optimizer. The same on every rank."""
    epoch: int = 1                  # the epoch being trained, 1-based
    position: int = 0               # the row of the token columns where training goes on
    best: float | None = None       # the best validation perplexity so far
    history: list = field(default_factory=list)  # one entry per epoch
    seconds: float = 0.0            # training time of the earlier runs of a resumed training
    averaging: bool = False         # NT-ASGD has switched to averaged SGD


@dataclass
class Plan:
    """What rank 0 reads from the corpus or the checkpoint and every rank needs to start (sent pickled)."""
    config: dict                    # ModelConfig
    vocab: Vocabulary
    tokenizer: Tokenizer
    lang: str
    parse_layer: int | None
    split: str                      # the split rule the model's trees are built with by default
    pretokenized: bool
    keep_punct: bool
    state: RunState
    optimizer: dict | None = None   # the optimizer state of a resumed run
    average: dict | None = None     # its moving average of the weights (steps.WeightAverage), if it kept one


def make_plan(corpus, resume, model_config, tokenizer, lang, pretokenized, keep_punct, max_vocab, min_freq,
              parse_layer, global_batch, reporter, valid=None, optimizer=None,
              split=None, units=DEFAULT_UNITS, unit_buckets=DEFAULT_UNIT_BUCKETS) -> tuple[Plan, ONLSTMLanguageModel | None]:
    """Rank 0's reading of the checkpoint (and its model), or of the corpus for a vocabulary (of whole words,
    or, where `units` says n-grams, of every word type with the `max_vocab` most frequent as outputs)."""
    model = None
    if resume is None:
        counts = count_words(corpus, tokenizer, pretokenized, keep_punct)
        if (unspaced := unspaced_share(counts)) >= 0.5:
            reporter.message(f"{unspaced:.0%} of the corpus's letters are in tokens of {LONG_TOKEN} "
                             "characters or more: is it written without spaces between words (Thai, Khmer, "
                             "Burmese …)? Each such run is read as one word; put a space between the words first")
        if units not in LM_UNIT_CHOICES:
            raise TrainingError(f"a language model reads words by {', '.join(LM_UNIT_CHOICES)}, not --units {units!r}"
                                + (" (a PCFG's: --family pcfg)" if units in UNIT_CHOICES else ""))
        ngrams = units == "ngrams" or (units == "auto" and reads_ngrams(counts, max_vocab))
        vocab = Vocabulary.build(counts, MAX_INPUT_TYPES if ngrams else max_vocab, min_freq)
        read_by = dict(word_rows=min(len(vocab), max_vocab or len(vocab)), unit_buckets=unit_buckets) if ngrams else {}
        if ngrams and valid is not None:  # validation words it lacks get an input id, read by their n-grams alone
            unseen = (w for s in iter_sentences(valid, tokenizer, pretokenized, keep_punct) for w in s if w not in vocab)
            vocab = Vocabulary(vocab.itos[2:] + list(dict.fromkeys(unseen))[:max(0, MAX_INPUT_TYPES - len(vocab))])
        config = ModelConfig(vocab_size=len(vocab), **(model_config or {}), **read_by)
        if ngrams:
            reporter.message(f"every word is also read by its character n-grams ({unseen_share(counts):.0%} of the "
                             f"tokens are words seen once); --units words reads whole words only")
        plan = Plan(config.to_dict(), vocab, tokenizer, lang, parse_layer, split or default_split(lang), pretokenized,
                    keep_punct, RunState())
    else:
        ckpt = read_archive(resume, expected_format=CHECKPOINT_FORMAT)
        check_global_batch(ckpt, resume, global_batch)
        check_resumed_options(ckpt, resume, {**(model_config or {}), "pretokenized": pretokenized,
                                             "keep_punct": keep_punct, "max_vocab": max_vocab, "min_freq": min_freq})
        check_resumed_optimizer(ckpt, resume, optimizer)
        validated_on = ckpt.get("data", {}).get("valid")
        if validated_on and valid is None:  # else --out would get an unvalidated model beside the old best's figure
            raise TrainingError(f"{resume} was validated on {validated_on}: resume with --valid {validated_on}, "
                                "so that --out keeps the model with the best validation perplexity")
        loaded = model_from_archive(ckpt, str(resume))
        model = loaded.model
        state = RunState(ckpt["epoch"], ckpt["position"], ckpt["best_valid_ppl"], list(ckpt["history"]),
                         ckpt["seconds"], bool(ckpt.get("averaging", False)))
        plan = Plan(loaded.config.to_dict(), loaded.vocab, loaded.tokenizer, loaded.lang or lang, loaded.parse_layer,
                    loaded.split, ckpt["data"]["pretokenized"], ckpt["data"]["keep_punct"], state, ckpt["optimizer"],
                    ckpt.get("weight_average"))
        best = "" if state.best is None else f", best valid ppl {state.best:.2f}"  # none: nothing validated yet
        reporter.message(f"resuming from {resume} (epoch {state.epoch}{best})")
    n_layers = plan.config["n_layers"]
    if plan.parse_layer is None:
        plan.parse_layer = n_layers // 2 + 1  # the paper parses with the middle layer
    if not 1 <= plan.parse_layer <= n_layers:
        raise TrainingError(f"--parse-layer must be between 1 and {n_layers}")
    return plan, model


def training_columns(corpus: str | Path, out: Path, plan: Plan, batch_size: int, group: Group) -> TokenColumns:
    """This rank's columns of the corpus's token file. One process per machine writes the file (the others
    may not see rank 0's disk) while the others on its machine wait, then read it. A failure on any rank
    (a corpus too short for the global batch) ends the run on all of them, told once, by rank 0, and takes
    away the token file if this run wrote it."""
    path = token_file_path(out)
    reading = (plan.vocab, plan.tokenizer, plan.pretokenized, plan.keep_punct, plan.config.get("reverse", False))
    wrote, error, columns = False, None, None
    try:
        if group.is_machine_leader:
            wrote = not path.exists()
            corpus_token_file(corpus, path, *reading, write=True)
    except (TrainingError, OSError) as e:
        error = str(e)
    group.barrier()
    try:
        if error is None:
            ids = corpus_token_file(corpus, path, *reading, write=False)
            columns = rank_columns(ids, batch_size, group.rank, group.world_size)
    except TrainingError as e:
        error = str(e)
    error = group.first_error(error)  # every rank, so that none goes on to train while another has failed
    if error is not None:
        if wrote:
            path.unlink(missing_ok=True)
        group.fail_together(error)
    return columns


def validation_data(valid: str | Path, plan: Plan, batch_size: int) -> torch.Tensor:
    sentences = read_corpus(valid, plan.tokenizer, plan.pretokenized, plan.keep_punct, plan.config.get("reverse", False))
    stream = token_stream(sentences, plan.vocab)
    if len(stream) < 2 * batch_size:
        raise TrainingError(f"{valid} is too short to validate on ({len(stream)} tokens with <eos>; at least "
                            f"{2 * batch_size} are needed)")
    return batchify(stream, batch_size)
