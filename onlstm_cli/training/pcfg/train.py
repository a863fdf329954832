"""Training a neural PCFG (pcfg/model.py) on plain text: each sentence's likelihood by the inside pass, in batches of
sentences of about equal length, Adam (Kim et al. 2019's betas).

The run is the run layer's (training/run/): one Budget over all its runs, checkpoints written atomically every
`checkpoint_every` seconds, at every epoch's end and on Ctrl-C or SIGTERM (resumed with --resume at the batch where
it stopped), the divergence guard, and the Reporter's progress lines. Memory is bounded by design: a chart holds
O(n²·rank) floats, and a training line longer than `max_len` words is left out (counted, and said at the start).
After every epoch the validation text's perplexity (per word, over its sentences of 2 to `max_len` words) decides
whether `out` is replaced; without a validation text, every epoch's model replaces it.

With teachers (`focus`), training is parse-focused (Park and Kim 2024): each training sentence's likelihood is summed
over the trees made of the spans its teachers' trees (and the branching voter, where `auto` gives one) propose, not
over every binary tree; the text is read as the teachers' host language model reads it. Validation perplexity is
still the whole likelihood's.

Started by torchrun with several processes, one model trains on all of them (run/distributed.py): rank 0 reads the
files and sends them to the others; each step's batch of sentences of about one length is shared among the
processes, so that their gradients summed are the one-process run's on that batch; rank 0 alone reports and writes.
"""
from __future__ import annotations

import math
import random
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from onlstm_cli import __version__, fast
from onlstm_cli.config import DEFAULT_MAX_VOCAB, DEFAULT_MIN_FREQ, PcfgConfig, PcfgTrainConfig
from onlstm_cli.errors import RankZeroFailed, TrainingError
from onlstm_cli.modelfile import CHECKPOINT_FORMAT, read_archive
from onlstm_cli.lm.model import resolve_device
from onlstm_cli.pcfg.model import NeuralPCFG
from onlstm_cli.signals import StopSignals
from onlstm_cli.text.corpus import iter_sentences, no_sentences, trained_reading
from onlstm_cli.text.tokenizers import Tokenizer
from onlstm_cli.text.vocab import Vocabulary
from onlstm_cli.training.lm.report import LineReporter, NullReporter, Reporter
from onlstm_cli.training.run.clock import Budget, Clock
from onlstm_cli.training.run.distributed import Group, lost_peer, process_group, rank_zero_reads
from onlstm_cli.training.run.files import check_destination
from onlstm_cli.training.run.identity import first_change
from onlstm_cli.training.pcfg.trainer import PcfgRun, PcfgTrainResult


@dataclass
class Text:
    """A run's sentences as word ids: training (2 to max_len words), validation (the same bounds)."""
    vocab: Vocabulary
    train: list[list[int]]
    valid: list[list[int]]
    left_out: int       # training lines over max_len words
    one_word: int       # training lines of one word (no binary rule to learn from)
    focus: list | None = None  # each training sentence's spans its teachers propose (parse-focusing), or None


@dataclass
class Focus:
    """Parse-focusing's input: the teachers' votes (training/student/votes.py's `Votes`: sentences, their spans, the
    validation sentences), the names of the teachers that voted, the loaded file whose reading the text follows,
    and whether self-trained teachers proposed their span parsers' trees (`--second-round`)."""
    votes: object
    teachers: list[str]
    host: object
    span_parsers: bool = False


def focused_text(votes, max_vocab: int | None, min_freq: int, vocab: Vocabulary | None = None,
                 endings: int = 0) -> Text:
    """The votes' sentences (votes_of: read as the teachers' host reads them, at most max_len words) as a PCFG's text,
    each training sentence with the spans of its votes; its words read by their `endings` where rare
    (text/vocab.py)."""
    kept = [k for k, words in enumerate(votes.sentences) if len(words) >= 2]
    if not kept:
        raise TrainingError("the teachers' text has no line of two words or more for a PCFG to learn from")
    sentences = [votes.sentences[k] for k in kept]
    vocab = vocab or Vocabulary.build(Counter(w for s in sentences for w in s), max_vocab, min_freq, endings)
    return Text(vocab, [vocab.encode(s) for s in sentences],
                [vocab.encode(s) for s in votes.valid_sentences if len(s) >= 2], 0,
                len(votes.sentences) - len(kept), [set(votes.spans[k]) for k in kept])


def read_text(corpus, valid, tokenizer: Tokenizer, pretokenized: bool, keep_punct: bool, max_vocab: int | None,
              min_freq: int, max_len: int, vocab: Vocabulary | None = None, endings: int = 0) -> Text:
    """The corpus (and validation text) as ids, under a vocabulary of the corpus (or `vocab`, a resumed run's) that
    reads rare words by their `endings` (text/vocab.py; 0: whole words)."""
    sentences = list(iter_sentences(corpus, tokenizer, pretokenized, keep_punct))
    if not sentences:
        raise no_sentences(corpus, tokenizer, pretokenized, keep_punct)
    vocab = vocab or Vocabulary.build(Counter(w for s in sentences for w in s), max_vocab, min_freq, endings)
    kept = [vocab.encode(s) for s in sentences if 2 <= len(s) <= max_len]
    if not kept:
        raise TrainingError(f"{corpus} has no line of 2 to {max_len} words for a PCFG to learn from")
    held = [] if valid is None else [vocab.encode(s) for s in iter_sentences(valid, tokenizer, pretokenized, keep_punct)
                                     if 2 <= len(s) <= max_len]
    return Text(vocab, kept, held, sum(len(s) > max_len for s in sentences), sum(len(s) == 1 for s in sentences))


@dataclass
class Progress:
    """Where a run stands; its checkpoint holds this with the weights and the optimizer."""
    epoch: int = 1
    step: int = 0
    batches: list | None = None
    best: float = math.inf
    history: list = field(default_factory=list)
    seconds: float = 0.0


def run_identity(corpus, valid, out: Path, config: PcfgConfig, train: PcfgTrainConfig, reading: dict,
                 focus: list | None = None, processes: int = 1) -> dict:
    """What a resumed run must share with the run that wrote its checkpoint. Its batches are the global batch's
    (`processes` × --batch-size sentences, shared among the processes), so a run goes on with another number of
    processes where that is the same."""
    return {"corpus": str(Path(corpus).resolve()), "valid": str(Path(valid).resolve()) if valid else None,
            "out": str(out.resolve()), "pcfg": config.to_dict(), "batch_size": processes * train.batch_size,
            "max_len": train.max_len, "seed": train.seed, "reading": reading,
            "focus": [str(Path(name).resolve()) for name in focus] if focus else None}


IDENTITY_NAMES = {"corpus": "the corpus", "valid": "--valid", "out": "--out", "pcfg": "the PCFG's sizes",
                  "batch_size": "global batch (--batch-size × torchrun's processes)", "max_len": "--max-len",
                  "seed": "--seed",
                  "reading": "reading of the text (--tokenizer, --lang, --pretokenized, --keep-punct, --max-vocab, "
                             "--min-freq)", "focus": "--teacher", "focus_trees": "teachers' trees (--second-round)"}


def train_pcfg(corpus, out, config: dict | None = None, train: PcfgTrainConfig | None = None, valid=None,
               tokenizer: Tokenizer | None = None, lang: str = "en", pretokenized: bool = False,
               keep_punct: bool = False, max_vocab: int | None = DEFAULT_MAX_VOCAB, min_freq: int = DEFAULT_MIN_FREQ,
               resume=None, reporter: Reporter | None = None, budget: Budget | None = None,
               focus: "Focus | None" = None) -> PcfgTrainResult:
    """Train (or resume) a neural PCFG on `corpus`; `out` holds the best by validation perplexity. `config`: the
    PcfgConfig's sizes (its vocabulary's aside). `focus`: the teachers' votes that focus each sentence's likelihood
    (training/student/focus.py makes them); the text is then theirs, read as their host language model reads it.
    Every option is checked before anything is read. Under torchrun with several processes this trains one model
    on all of them (not a focused one: its teachers' votes are made in one process)."""
    train = check_options(config, train, max_vocab)
    out = Path(out)
    budget = Budget(train.time_budget) if budget is None else budget
    started = min(time.time(), budget.started)  # the set-up counts: a focused run's teachers parse before this
    tokenizer = tokenizer or Tokenizer()
    reading = {"tokenizer": tokenizer.to_dict(), "lang": lang, "pretokenized": pretokenized, "keep_punct": keep_punct,
               "max_vocab": max_vocab, "min_freq": min_freq}
    if focus:
        tokenizer, lang, (pretokenized, keep_punct) = focus.host.tokenizer, focus.host.lang, trained_reading(focus.host)
        reading.update(tokenizer=tokenizer.to_dict(), lang=lang, pretokenized=pretokenized, keep_punct=keep_punct)

    def read() -> tuple[Text, dict | None]:  # on rank 0 alone: the files of the run
        check_destination(out)
        state = None if resume is None else read_archive(resume, CHECKPOINT_FORMAT).get("pcfg_training")
        if resume is not None and state is None:
            raise TrainingError(f"{resume} is not a PCFG's checkpoint (train --family pcfg writes those)")
        endings = (config or {}).get("endings", 0)
        resumed_vocab = None if state is None else Vocabulary(state["vocab"][2:], endings)
        if focus:
            return focused_text(focus.votes, max_vocab, min_freq, resumed_vocab, endings), state
        return read_text(corpus, valid, tokenizer, pretokenized, keep_punct, max_vocab, min_freq, train.max_len,
                         resumed_vocab, endings), state

    with fast.denormals_flushed(), process_group(resolve_device(train.device)) as (group, device):
        if train.threads:
            torch.set_num_threads(train.threads)
        if focus and group.world_size > 1:
            raise TrainingError("a focused PCFG (--teacher) trains in one process: start it without torchrun")
        reporter = (reporter or LineReporter()) if group.is_main else NullReporter()
        text, state = rank_zero_reads(group, read)
        sizes = PcfgConfig(vocab_size=len(text.vocab), **(config or {}))
        torch.manual_seed(train.seed)  # every rank the same first weights
        rng = random.Random(train.seed)  # and the same batches
        model = NeuralPCFG(sizes).to(device)
        optimizer = torch.optim.Adam(model.parameters(), lr=train.lr, betas=(0.75, 0.999))
        identity = run_identity(corpus, valid, out, sizes, train, reading, focus.teachers if focus else None,
                                group.world_size)
        if focus:
            identity["focus_sentences"] = len(text.train) + text.one_word
            identity["focus_trees"] = "span parsers" if focus.span_parsers else "language models"
        progress = Progress() if state is None else resumed(state, identity, resume, model, optimizer, rng)
        tokens = sum(map(len, text.train))
        clock = Clock(budget, progress.seconds + time.time() - started, tokens, train.epochs)
        reporter.message(start_line(model, text, train, tokens, progress, group))
        meta = run_meta(corpus, valid, text, tokens, (pretokenized, keep_punct, max_vocab, min_freq), train, budget,
                        group, focus)
        with StopSignals() as signals:
            run = PcfgRun(model, optimizer, rng, text, train, progress, identity, out, clock, reporter, meta,
                          (tokenizer, lang), group)
            return run_together(run, group, signals)


def run_meta(corpus, valid, text: Text, tokens: int, reading: tuple, train: PcfgTrainConfig, budget: Budget,
             group: Group, focus: "Focus | None") -> dict:
    """The model file's record of its run (`reading`: pretokenized, keep_punct, max_vocab, min_freq)."""
    pretokenized, keep_punct, max_vocab, min_freq = reading
    meta = {"data": {"corpus": str(corpus), "valid": str(valid) if valid else None, "pretokenized": pretokenized,
                     "keep_punct": keep_punct, "train_tokens": tokens, "left_out": text.left_out,
                     "max_vocab": max_vocab, "min_freq": min_freq, "punctuation": "boundaries"},
            "train": {**asdict(train), "time_budget": budget.seconds, "world_size": group.world_size,
                      "global_batch_size": group.world_size * train.batch_size},
            "onlstm_version": __version__}
    if focus:
        meta["focus"] = {"teachers": focus.teachers, "right_branching": focus.votes.right_branching,
                         "left_branching": focus.votes.left_branching,
                         "voter_spans": False,  # the voter's tree is not focused on (focus.py); info reads it
                         "cut_at_marks": focus.host.cuts_at_marks(),  # each tree cut at its line's marks (focus.py)
                         "span_parsers": focus.span_parsers,
                         "sentences": len(text.train)}
    return meta


def run_together(run: PcfgRun, group: Group, signals) -> PcfgTrainResult:
    """The run's loop, its errors said once: by rank 0 where every rank met them, by each rank that lost a peer."""
    try:
        return run.loop(signals)
    except RankZeroFailed:
        raise
    except TrainingError as e:  # met on every rank at once (the divergence guard reads the summed step)
        if not group.is_main:
            group.fail_together(str(e))  # said by rank 0 alone
        raise
    except RuntimeError as e:  # a step's collective failed: said by each rank that saw it (rank 0 may not)
        why = lost_peer(e, group)
        if why is None:
            raise
        raise TrainingError(f"{why}: training stopped; {run.keep_after_lost_peer()}") from None


def check_options(config: dict | None, train: PcfgTrainConfig | None, max_vocab: int | None) -> PcfgTrainConfig:
    """A run's options, each bad one a one-line TrainingError; the training config."""
    train = (train or PcfgTrainConfig()).check()
    PcfgConfig(vocab_size=0, **(config or {})).check()
    if max_vocab is not None and max_vocab < 3:
        raise TrainingError("--max-vocab must be at least 3 (<unk>, <eos> and one word)")
    return train


def start_line(model: NeuralPCFG, text: Text, train: PcfgTrainConfig, tokens: int, progress: Progress,
               group: Group = Group()) -> str:
    c = model.config
    where = f"; resumed in epoch {progress.epoch} after {progress.step} batches" if progress.step or progress.history else ""
    skipped = (f"; {text.left_out:,} lines over {train.max_len} words left out (--max-len)" if text.left_out else "")
    focused = ", each one's likelihood over the trees its teachers propose" if text.focus is not None else ""
    processes = (f"; training on {group.world_size} processes ({group.backend}) × batch {train.batch_size} = global "
                 f"batch {group.world_size * train.batch_size} sentences" if group.world_size > 1 else "")
    return (f"a PCFG of {c.nonterminals} nonterminals, {c.preterminals} preterminals, rank {c.rank} "
            f"({sum(p.numel() for p in model.parameters()) / 1e6:.2f} M parameters) on {len(text.train):,} sentences "
            f"({tokens:,} words, vocabulary {len(text.vocab):,}{c.read_by()}){focused}{skipped}{processes}{where}")


def resumed(state: dict, identity: dict, path, model: NeuralPCFG, optimizer, rng: random.Random) -> Progress:
    recorded = state.get("identity", {})
    if bool(recorded.get("focus")) != bool(identity.get("focus")):
        raise TrainingError(f"{path} is the checkpoint of a run " + ("with" if recorded.get("focus") else "without")
                            + " --teacher; resume it with the run's own options, or start anew")
    change = first_change(recorded, identity)
    if change is not None:
        key, before, value = change
        raise TrainingError(f"{path} is the checkpoint of a run with other {IDENTITY_NAMES[key]} ({before} there, "
                            f"{value} here); resume it with the run's own options, or start anew")
    model.load_state_dict(state["state_dict"])
    optimizer.load_state_dict(state["optimizer"])
    rng.setstate(state["rng"])
    torch.set_rng_state(state["torch_rng"])
    return Progress(state["epoch"], state["step"], state["batches"], state["best"], state["history"], state["seconds"])
