"""`onlstm train --family pcfg --teacher …`: parse-focusing, a PCFG whose likelihood is summed over the trees its
teachers propose: the spans each sentence is focused on, the file it writes, resuming, and the refusals."""
import pytest

from conftest import QuietReporter
from onlstm_cli.config import PcfgTrainConfig, SelfTrainConfig
from onlstm_cli.errors import TrainingError
from onlstm_cli.modelfile import load_model
from onlstm_cli.training.student.votes import right_branching_spans

from test_pcfg_train import SMALL, SMALL_SIZES, one_error_line, run


def test_each_sentence_is_focused_on_the_spans_of_its_voters_trees(tiny_corpus, tiny_model_path):
    from onlstm_cli.induction.teachers import model_trees
    from onlstm_cli.text.corpus import read_as_trained_with_pieces
    from onlstm_cli.trees import spans_cut_at_marks
    from onlstm_cli.training.pcfg.train import focused_text
    from onlstm_cli.training.student.focus import focus_of
    teacher = load_model(tiny_model_path)
    focus = focus_of([teacher], tiny_corpus["train"], tiny_corpus["valid"], SelfTrainConfig(right_branching=1.0),
                     max_len=40, log=lambda line: None)
    assert focus.teachers == [str(tiny_model_path)] and focus.host is teacher
    assert focus.votes.right_branching == 1.0  # the branching voter is read, but its tree is not one to take whole
    text = focused_text(focus.votes, None, 1)
    kept = [s for s in focus.votes.sentences if len(s) >= 2]
    own = model_trees(teacher, kept)
    sentences, pieces = read_as_trained_with_pieces(tiny_corpus["train"], teacher)
    levels_of = [levels for words, levels in zip(sentences, pieces) if 2 <= len(words) <= 40]
    assert len(text.focus) == len(text.train) == len(kept) == len(levels_of)
    assert any(any(levels) for levels in levels_of)  # the text has marks, so some trees are cut
    for allowed, tree, words, levels in zip(text.focus, own, kept, levels_of):
        cut = spans_cut_at_marks(tree, levels)  # the teacher's tree cut at its line's marks, and nothing else
        assert cut <= allowed <= cut | {(0, len(words))}
    assert any(not right_branching_spans(len(words)) <= allowed for allowed, words in zip(text.focus, kept))


@pytest.mark.parametrize("voter, same", [(0.0, True), (1.0, False)])
def test_the_focus_differs_from_the_votes_only_where_a_branching_voter_votes(tiny_corpus, tiny_model_path, voter,
                                                                             same):
    from onlstm_cli.training.student.votes import votes_of
    teacher, config = load_model(tiny_model_path), SelfTrainConfig(right_branching=voter)
    as_voted, focused = (votes_of([teacher], tiny_corpus["train"], tiny_corpus["valid"], config, lambda line: None,
                                  voter_spans=spans) for spans in (True, False))
    assert focused.valid_spans == as_voted.valid_spans  # the validation votes, the voter's weight, stay as voted
    assert focused.right_branching == as_voted.right_branching == voter
    assert (focused.spans == as_voted.spans) is same


def test_a_focused_pcfg_is_written_parses_and_resumes_with_its_teachers(tmp_path, tiny_corpus, tiny_model_path):
    from onlstm_cli.training.pcfg.train import train_pcfg
    from onlstm_cli.training.student.focus import train_focused_pcfg
    out = tmp_path / "focused.onlstm"
    teachers = [load_model(tiny_model_path)]
    votes = SelfTrainConfig(right_branching=1.0)
    reporter = QuietReporter()
    first = train_focused_pcfg(tiny_corpus["train"], out, teachers, tiny_corpus["valid"], votes,
                               PcfgTrainConfig(epochs=1, time_budget=None), config=SMALL_SIZES, reporter=reporter)
    assert out.is_file() and first.epochs_done == 1
    assert any("over the trees its teachers propose" in line for line in reporter.messages)
    loaded = load_model(out)
    assert loaded.kind == "pcfg" and loaded.meta["focus"]["teachers"] == [str(tiny_model_path)]
    assert loaded.meta["focus"]["right_branching"] == 1.0
    assert loaded.meta["focus"]["cut_at_marks"] is True  # its teachers' trees were cut at the marks of each line
    second = train_focused_pcfg(tiny_corpus["train"], out, teachers, tiny_corpus["valid"], votes,
                                PcfgTrainConfig(epochs=2, time_budget=None), config=SMALL_SIZES,
                                resume=first.checkpoint, reporter=QuietReporter())
    assert second.epochs_done == 2
    with pytest.raises(TrainingError, match="with --teacher"):  # the focused checkpoint, resumed unfocused
        train_pcfg(tiny_corpus["train"], tmp_path / "plain.onlstm", SMALL_SIZES, PcfgTrainConfig(epochs=3),
                   valid=tiny_corpus["valid"], resume=first.checkpoint, reporter=QuietReporter())
    plain = train_pcfg(tiny_corpus["train"], tmp_path / "plain.onlstm", SMALL_SIZES,
                       PcfgTrainConfig(epochs=1, time_budget=None), valid=tiny_corpus["valid"], reporter=QuietReporter())
    with pytest.raises(TrainingError, match="not the checkpoint of a PCFG trained with --teacher"):
        train_focused_pcfg(tiny_corpus["train"], out, teachers, tiny_corpus["valid"], votes,
                           PcfgTrainConfig(epochs=2), config=SMALL_SIZES, resume=plain.checkpoint,
                           reporter=QuietReporter())


def test_the_focused_loss_is_the_likelihood_of_the_proposed_trees(tmp_path, tiny_corpus, tiny_model_path,
                                                                    monkeypatch):
    """Every step's likelihood is masked to its sentences' focus spans: a run whose one teacher proposes one tree a
    sentence reaches the trees' likelihood, not the sentence's."""
    from onlstm_cli.pcfg.model import NeuralPCFG
    from onlstm_cli.training.student.focus import train_focused_pcfg
    masks = []
    real = NeuralPCFG.log_likelihood

    def spy(self, ids, lengths, log_mask=None):
        if self.training:
            masks.append(log_mask)
        return real(self, ids, lengths, log_mask)

    monkeypatch.setattr(NeuralPCFG, "log_likelihood", spy)
    train_focused_pcfg(tiny_corpus["train"], tmp_path / "f.onlstm", [load_model(tiny_model_path)],
                       tiny_corpus["valid"], SelfTrainConfig(right_branching=1.0),
                       PcfgTrainConfig(epochs=1, time_budget=None), config=SMALL_SIZES, reporter=QuietReporter())
    assert masks and all(mask is not None for mask in masks)
    assert any(bool((mask < 0).any()) for mask in masks)  # some spans are forbidden


def test_a_focused_runs_bad_options_are_refused_in_one_line(runner, tmp_path, tiny_corpus, tiny_model_path):
    from onlstm_cli.training.pcfg.train import train_pcfg
    corpus, valid = tiny_corpus["train"], tiny_corpus["valid"]
    one_error_line(run(runner, ["train", corpus, "--family", "pcfg", "--teacher", tiny_model_path, "-o",
                                tmp_path / "a.onlstm", *SMALL]), "--valid")
    one_error_line(run(runner, ["train", corpus, "--family", "pcfg", "--teacher", tiny_model_path, "--valid", valid,
                                "--targets", "tree", "-o", tmp_path / "b.onlstm"]), "--targets")
    pcfg = tmp_path / "p.onlstm"
    train_pcfg(corpus, pcfg, SMALL_SIZES, PcfgTrainConfig(epochs=1, time_budget=None), valid=valid,
               reporter=QuietReporter())
    one_error_line(run(runner, ["train", corpus, "--family", "pcfg", "--teacher", pcfg, "--valid", valid, "-o",
                                tmp_path / "c.onlstm", *SMALL]), "give an ON-LSTM file")
    assert not (tmp_path / "a.onlstm").exists() and not (tmp_path / "c.onlstm").exists()


def test_the_command_trains_a_focused_pcfg(runner, tmp_path, tiny_corpus, tiny_model_path):
    out = tmp_path / "cli.onlstm"
    result = run(runner, ["train", tiny_corpus["train"], "--family", "pcfg", "--teacher", tiny_model_path,
                          "--valid", tiny_corpus["valid"], "--right-branching", "1", "--epochs", "1", "--threads", "1",
                          "-o", out, *SMALL])
    assert result.exit_code == 0, result.output
    assert "over the trees its teachers propose" in result.stderr
    assert "tokenizer ptb" not in result.stderr  # the text is read as the teacher reads it: no language guessed
    assert "best valid ppl" in result.stderr.splitlines()[-1]
    parsed = run(runner, ["parse", "-m", out], input="the cat sat on the mat\n")
    assert parsed.exit_code == 0 and parsed.stdout.count("(") == 2 * 6 - 1
    info = run(runner, ["info", out])
    focused = next(line for line in info.stdout.splitlines() if line.strip().startswith("focused"))
    assert str(tiny_model_path) in focused and "right-branching" not in focused  # its tree was not focused on


@pytest.mark.parametrize("seconds, until, quarter", [(400.0, 40.0, 10.0), (40.0, 400.0, 10.0), (40.0, None, 10.0),
                                                     (None, None, None)])
def test_the_teachers_parse_for_a_quarter_of_the_time_the_run_really_has(monkeypatch, tmp_path, tiny_corpus,
                                                                         tiny_model_path, seconds, until, quarter):
    """A recipe's round can end (Budget.until) before a model's own seconds are spent: the teachers' parse gets a
    quarter of whichever comes first."""
    import onlstm_cli.training.student.focus as focus_module
    from onlstm_cli.training.run.clock import Budget
    seen = {}

    def stop(teachers, corpus, valid, votes_config, max_len, log, deadline=None, limit=None, stopped=None):
        seen["deadline"] = deadline
        raise TrainingError("stopped here")
    monkeypatch.setattr(focus_module, "focus_of", stop)
    budget = Budget(seconds, 1000.0, None if until is None else 1000.0 + until)
    with pytest.raises(TrainingError, match="stopped here"):
        focus_module.train_focused_pcfg(tiny_corpus["train"], tmp_path / "f.onlstm", [load_model(tiny_model_path)],
                                        tiny_corpus["valid"], budget=budget)
    assert seen["deadline"] == (None if quarter is None else 1000.0 + quarter)


def test_info_names_the_branching_voters_tree_only_where_the_pcfg_was_focused_on_it():
    from onlstm_cli.info import focus_rows
    old = {"teachers": ["a.onlstm"], "right_branching": 0.0, "left_branching": 0.5}  # before the voter left the focus
    assert focus_rows(old, ())[0][1].endswith("a.onlstm, a left-branching tree of weight 0.5")
    assert focus_rows({**old, "voter_spans": False}, ())[0][1].endswith("trees of a.onlstm")
    cut = focus_rows({**old, "voter_spans": False, "cut_at_marks": True}, ())[0][1]
    assert cut.endswith("trees of a.onlstm, each cut at its line's punctuation marks")


def test_a_focused_pcfg_is_allowed_no_span_across_a_mark_of_its_line(tiny_model_path, tmp_path):
    """Its teachers' trees are cut at the marks of each training line, as a span parser's votes are: the PCFG reads
    no mark, and learns from the words where the pieces split."""
    import random
    from onlstm_cli.text.corpus import read_as_trained_with_pieces
    from onlstm_cli.training.student.focus import focus_of
    from onlstm_cli.training.student.votes import votes_of
    words = ["the", "cat", "dog", "sat", "on", "mat", "a"]
    lines = [" ".join(random.Random(k).sample(words, 6)) for k in range(40)]
    train, valid = tmp_path / "train.txt", tmp_path / "valid.txt"
    train.write_text("".join(f"{line[:11]} , {line[11:]}\n" for line in lines), encoding="utf-8")
    valid.write_text("".join(f"{line[:11]} , {line[11:]}\n" for line in lines[:10]), encoding="utf-8")
    teacher, config = load_model(tiny_model_path), SelfTrainConfig(right_branching=0.0)
    assert teacher.cuts_at_marks()
    focus = focus_of([teacher], train, valid, config, max_len=40, log=lambda line: None)
    uncut = votes_of([teacher], train, valid, config, lambda line: None, voter_spans=False)
    _, pieces = read_as_trained_with_pieces(train, teacher)
    crossing = 0
    for allowed, before, levels in zip(focus.votes.spans, uncut.spans, pieces):
        comma = levels.index(1)  # the word after the comma starts a piece
        assert all(not (i < comma < j) or (i, j) == (0, len(levels)) for i, j in allowed)
        assert (0, comma) in allowed and (comma, len(levels)) in allowed  # each piece a span
        crossing += any(i < comma < j for i, j in before)
    assert crossing > 0  # the teacher's own trees crossed it


def test_a_second_round_focuses_a_pcfg_on_the_span_parsers_trees(tmp_path, tiny_corpus, tiny_model_path):
    """With --second-round a self-trained teacher proposes its span parser's trees, as it does for a student; the
    file says so, and a run resumed without the option is refused."""
    from onlstm_cli.config import SpanParserConfig
    from onlstm_cli.induction.teachers import model_trees
    from onlstm_cli.info import focus_rows
    from onlstm_cli.text.corpus import read_as_trained_with_pieces
    from onlstm_cli.trees import spans_cut_at_marks
    from onlstm_cli.training.pcfg.train import focused_text
    from onlstm_cli.training.student.focus import focus_of, train_focused_pcfg
    from onlstm_cli.training.student.train import self_train
    host = load_model(tiny_model_path)
    student_path = tmp_path / "student.onlstm"
    self_train(tiny_corpus["train"], student_path, host, tiny_corpus["valid"],
               SpanParserConfig(vocab_size=len(host.vocab), emb_size=20, hidden_size=16, mlp_size=16),
               SelfTrainConfig(epochs=2, batch_size=8, lr=0.01), log=lambda line: None)
    student = load_model(student_path)
    sentences, pieces = read_as_trained_with_pieces(tiny_corpus["train"], student)
    levels_of = [levels for words, levels in zip(sentences, pieces) if 2 <= len(words) <= 40]
    proposed = {}
    for second_round in (False, True):
        focus = focus_of([student], tiny_corpus["train"], tiny_corpus["valid"],
                         SelfTrainConfig(right_branching=0.0, span_parser_teachers=second_round), max_len=40,
                         log=lambda line: None)
        assert focus.span_parsers is second_round and focus.host is student
        text = focused_text(focus.votes, None, 1)
        kept = [s for s in focus.votes.sentences if len(s) >= 2]
        own = model_trees(student, kept, span_parsers=second_round)
        assert len(text.focus) == len(own) == len(levels_of)
        for allowed, tree, words, levels in zip(text.focus, own, kept, levels_of):
            cut = spans_cut_at_marks(tree, levels)
            assert cut <= allowed <= cut | {(0, len(words))}
        proposed[second_round] = text.focus
    assert proposed[True] != proposed[False]  # the span parser's trees are not its language model's
    out = tmp_path / "focused.onlstm"
    votes = SelfTrainConfig(right_branching=0.0, span_parser_teachers=True)
    first = train_focused_pcfg(tiny_corpus["train"], out, [student], tiny_corpus["valid"], votes,
                               PcfgTrainConfig(epochs=1, time_budget=None), config=SMALL_SIZES,
                               reporter=QuietReporter())
    focused = load_model(out).meta["focus"]
    assert focused["span_parsers"] is True
    assert focus_rows(focused, ())[0][1].startswith(f"each sentence's likelihood over the span parsers' trees of "
                                                    f"{student_path}")
    with pytest.raises(TrainingError, match="--second-round"):
        train_focused_pcfg(tiny_corpus["train"], out, [student], tiny_corpus["valid"],
                           SelfTrainConfig(right_branching=0.0), PcfgTrainConfig(epochs=2, time_budget=None),
                           config=SMALL_SIZES, resume=first.checkpoint, reporter=QuietReporter())


def test_sigterm_while_a_focused_pcfgs_teachers_parse_stops_at_the_next_chunk_with_nothing_written(
        tmp_path, tiny_corpus, tiny_model_path, monkeypatch):
    """As a student's: SIGTERM during the teachers' parse stops it at the next chunk, in one line, with the exit
    code of a stopped run, and neither the file nor a checkpoint is written."""
    import signal
    from conftest import sigterm_after_first_chunk
    from onlstm_cli.induction.teachers import as_teacher
    from onlstm_cli.training.student.focus import train_focused_pcfg
    teacher = as_teacher(load_model(tiny_model_path))
    chunks = sigterm_after_first_chunk(monkeypatch, teacher)
    out, handler = tmp_path / "focused.onlstm", signal.getsignal(signal.SIGTERM)
    with pytest.raises(TrainingError, match=r"stopped while the teachers parsed \(5 of \d+ training sentences\)") \
            as excinfo:
        train_focused_pcfg(tiny_corpus["train"], out, [teacher], tiny_corpus["valid"], SelfTrainConfig(),
                           PcfgTrainConfig(epochs=1, time_budget=None), config=SMALL_SIZES, reporter=QuietReporter())
    assert excinfo.value.exit_code == 128 + signal.SIGTERM
    assert chunks == [5]  # the second chunk was never parsed
    assert not out.exists() and not out.with_name(out.name + ".ckpt").exists()
    assert signal.getsignal(signal.SIGTERM) == handler
