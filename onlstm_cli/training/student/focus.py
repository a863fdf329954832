"""Parse-focusing (Park and Kim 2024): a neural PCFG trained on the likelihood of the trees its teachers propose.

The teachers vote as they do for a span parser (votes.py: teachers left out as branching rules, the split and the
branching voter read by `auto`); each training sentence's allowed spans are those of any teacher's tree (not the
branching voter's), and the PCFG (training/pcfg/) sums its likelihood over the binary trees made of them alone.
With `--second-round`, self-trained teachers propose their span parsers' trees, as they do for a student. The
teachers parse the training text until a quarter of the budget is spent; a resumed run's parse the sentences its
first run had. Ctrl-C or SIGTERM during that parse stops it at the next chunk, with nothing written.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from onlstm_cli.config import DEFAULT_MAX_VOCAB, PcfgTrainConfig, SelfTrainConfig
from onlstm_cli.errors import StoppedBySignal, TrainingError
from onlstm_cli.induction.teachers import as_teacher
from onlstm_cli.modelfile import CHECKPOINT_FORMAT, read_archive
from onlstm_cli.signals import StopSignals
from onlstm_cli.training.lm.report import LineReporter
from onlstm_cli.training.pcfg.train import Focus, check_options, train_pcfg
from onlstm_cli.training.run.clock import Budget
from onlstm_cli.training.run.files import check_destination
from onlstm_cli.training.student.votes import votes_of


def focus_of(teachers: list, corpus, valid, votes_config: SelfTrainConfig, max_len: int, log,
             deadline: float | None = None, limit: int | None = None, stopped=None) -> Focus:
    """The teachers' (loaded model files or Teachers) votes on the text's sentences of at most `max_len` words;
    `stopped`: votes.parsed_in_time's."""
    if valid is None:
        raise TrainingError("--teacher needs --valid: the teachers' trees of it choose the branching voter")
    voting = [as_teacher(t, votes_config.teacher_layers, votes_config.extra_layers, votes_config.span_parser_teachers)
              for t in teachers]
    host = next((t.host for t in voting if t.host is not None), None)
    if host is None:
        raise TrainingError("a focused PCFG reads the text as its teachers' language model does: give an ON-LSTM "
                            "file among the --teacher files")
    # the branching voter is read (the split, the log) but its tree is not one the PCFG may take: on a text whose
    # teachers were weak, every focused PCFG took it whole (docs/experiments/small-corpora.md). Every teacher that
    # is not a branching rule proposes trees: leaving out those far from the others was measured on a span
    # parser's vote alone. Each tree is cut at its line's marks, as a span parser's votes are: the PCFG reads no
    # mark, and learns from the words where the pieces split
    votes = votes_of(voting, corpus, valid, replace(votes_config, max_len=max_len, min_relative_agreement=0.0), log,
                     deadline=deadline, limit=limit, voter_spans=False, cut_at_marks=host.cuts_at_marks(),
                     stopped=stopped)
    left_out = {c.teacher for c in votes.left_out()}
    return Focus(votes, [t.name for t in voting if t.name not in left_out], host, votes_config.span_parser_teachers)


def train_focused_pcfg(corpus, out, teachers: list, valid, votes_config: SelfTrainConfig | None = None,
                       train: PcfgTrainConfig | None = None, budget: Budget | None = None, resume=None,
                       reporter=None, **options):
    """`train --family pcfg --teacher A --teacher B …`: train_pcfg's run (`options` are its own), focused on the
    teachers' votes."""
    train = check_options(options.get("config"), train, options.get("max_vocab", DEFAULT_MAX_VOCAB))
    check_destination(Path(out))  # before the teachers parse
    budget = Budget(train.time_budget) if budget is None else budget
    reporter = reporter or LineReporter()
    limit = None
    if resume is not None:
        state = read_archive(resume, CHECKPOINT_FORMAT).get("pcfg_training") or {}
        limit = state.get("identity", {}).get("focus_sentences")
        if limit is None:
            raise TrainingError(f"{resume} is not the checkpoint of a PCFG trained with --teacher; resume it with the "
                                "run's own options, or start anew")
    window = [t for t in (budget.seconds, None if budget.until is None else budget.until - budget.started)
              if t is not None]  # a recipe's round may end before the model's own seconds are spent
    deadline = None if limit is not None or not window else budget.started + min(window) / 4
    with StopSignals() as signals:  # as a student's parse: it stops at the next chunk, and nothing is written
        focus = focus_of(teachers, corpus, valid, (votes_config or SelfTrainConfig()).check(), train.max_len,
                         reporter.message, deadline, limit, stopped=lambda: signals.caught)
        if signals.caught:  # after the last chunk: training would set its own handlers and miss it
            raise StoppedBySignal("stopped once the teachers had parsed: nothing was trained or written; run the "
                                  "command again", signals.caught)
    return train_pcfg(corpus, out, train=train, valid=valid, resume=resume, reporter=reporter, budget=budget,
                      focus=focus, **options)
