"""Training: outputs, checkpoints, resume, interrupts, the time budget, bad corpora."""
from __future__ import annotations

import dataclasses
import json
import math
import os
import signal

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from conftest import TINY_MODEL, QuietReporter, forget_backend_probes, tiny_train_config, write_corpus
from onlstm_cli.text.corpus import (
    batchify,
    build_vocab,
    corpus_token_file,
    rank_columns,
    read_corpus,
    token_stream,
)
from onlstm_cli.config import DEFAULT_MAX_VOCAB, DEFAULT_UNITS
from onlstm_cli.lm.model import ModelConfig
from onlstm_cli.modelfile import CHECKPOINT_FORMAT, load_model, read_archive
from onlstm_cli.training.run.files import token_file_path
from onlstm_cli.lm.perplexity import text_perplexity
from onlstm_cli.training.lm.train import TrainConfig, TrainResult, checkpoint_path, train_model
from onlstm_cli.errors import TrainingError
from onlstm_cli.training.run.clock import Budget, duration_text, estimate_line, run_eta
from onlstm_cli.text.tokenizers import Tokenizer


@pytest.fixture
def corpus(tmp_path):
    return {"train": write_corpus(tmp_path / "train.txt", 60, seed=0),
            "valid": write_corpus(tmp_path / "valid.txt", 12, seed=1)}


def adam_steps(optimizer_state: dict) -> list[float]:
    return [float(s["step"]) for s in optimizer_state["state"].values()]


# --- data helpers ----------------------------------------------------------------------------------

def test_read_corpus_normalizes_and_drops_punctuation(tmp_path):
    path = tmp_path / "c.txt"
    path.write_text("The Cat sat, in 1,000 houses.\n\n   \n!!! ...\nA dog.\n", encoding="utf-8")
    sentences = read_corpus(path, Tokenizer())
    assert sentences == [["the", "cat", "sat", "in", "N", "houses"], ["a", "dog"]]
    kept = read_corpus(path, Tokenizer(), keep_punct=True)
    assert kept[0][-1] == "." and "," in kept[0]
    assert len(kept) == 3  # the punctuation-only line counts once punctuation is kept


def test_read_corpus_strips_byte_order_mark(tmp_path):
    path = tmp_path / "bom.txt"
    path.write_bytes("\ufeffThe cat sat.\n".encode("utf-8"))
    assert read_corpus(path, Tokenizer()) == [["the", "cat", "sat"]]


def test_token_stream_and_batchify():
    tok = [["a", "b"], ["c"], ["a"]]
    vocab = build_vocab(tok, None, 1)
    stream = token_stream(tok, vocab)
    assert stream.tolist() == [vocab.stoi["a"], vocab.stoi["b"], 1, vocab.stoi["c"], 1, vocab.stoi["a"], 1]
    data = batchify(torch.arange(11), 3)
    assert data.shape == (3, 3)
    assert data[:, 0].tolist() == [0, 1, 2]  # each column is a contiguous piece of the stream
    assert data[:, 2].tolist() == [6, 7, 8]
    with pytest.raises(TrainingError):
        batchify(torch.arange(5), 4)


def test_token_file_holds_the_stream_and_is_written_again_only_when_stale(corpus, tmp_path):
    tok = Tokenizer()
    sentences = read_corpus(corpus["train"], tok)
    vocab = build_vocab(sentences, None, 1)
    path = tmp_path / "c.tokens"
    ids = corpus_token_file(corpus["train"], path, vocab, tok, pretokenized=False, keep_punct=False)
    assert isinstance(ids, np.memmap)  # read from the file as training goes, not loaded
    assert ids.tolist() == token_stream(sentences, vocab).tolist()

    inode = path.stat().st_ino
    corpus_token_file(corpus["train"], path, vocab, tok, pretokenized=False, keep_punct=False)
    assert path.stat().st_ino == inode  # up to date: kept
    small = build_vocab([["cat", "dog"]], None, 1)
    with pytest.raises(TrainingError, match="written for another"):  # a process that may not write it
        corpus_token_file(corpus["train"], path, small, tok, pretokenized=False, keep_punct=False, write=False)
    ids = corpus_token_file(corpus["train"], path, small, tok, pretokenized=False, keep_punct=False)
    assert path.stat().st_ino != inode and set(np.unique(ids)) == {0, 1, 2, 3}


def test_the_ranks_columns_are_those_of_one_process_with_the_global_batch():
    ids = np.arange(103, dtype=np.int32)
    one = rank_columns(ids, 8)
    assert torch.equal(one.window(0, one.rows), batchify(torch.arange(103), 8))
    assert torch.equal(one.window(3, 4), batchify(torch.arange(103), 8)[3:7])
    two = [rank_columns(ids, 4, rank, world_size=2) for rank in range(2)]
    assert [c.rows for c in two] == [one.rows] * 2
    assert torch.equal(torch.cat([c.window(0, c.rows) for c in two], dim=1), one.window(0, one.rows))
    with pytest.raises(TrainingError, match="2 processes"):
        rank_columns(np.arange(15, dtype=np.int32), 4, 0, world_size=2)


def test_the_training_text_is_never_read_whole(corpus, tmp_path, monkeypatch):
    import onlstm_cli.text.corpus
    import onlstm_cli.training.lm.setup
    whole = onlstm_cli.text.corpus.read_corpus

    def read_small_text(path, *args, **kwargs):
        assert path != corpus["train"], "the training text was read into memory"
        return whole(path, *args, **kwargs)

    for module in (onlstm_cli.text.corpus, onlstm_cli.training.lm.setup):  # perplexity reads through corpus
        monkeypatch.setattr(module, "read_corpus", read_small_text)
    out = tmp_path / "m.onlstm"
    result = train_model(corpus["train"], out, dict(TINY_MODEL), tiny_train_config(), valid=corpus["valid"],
                         reporter=QuietReporter())
    assert result.epochs_done == pytest.approx(1.0) and token_file_path(out).is_file()


# --- a full run ----------------------------------------------------------------------------------------

def test_train_writes_model_and_checkpoint(corpus, tmp_path):
    out = tmp_path / "m.onlstm"
    reporter = QuietReporter()
    result = train_model(corpus["train"], out, dict(TINY_MODEL), tiny_train_config(epochs=3),
                         valid=corpus["valid"], reporter=reporter)
    assert out.is_file()
    assert checkpoint_path(out).is_file()
    assert result.out == str(out) and result.checkpoint == str(checkpoint_path(out))
    assert not result.interrupted and not result.stopped_by_time
    assert result.epochs_done == pytest.approx(3.0)
    assert [h["epoch"] for h in result.history] == pytest.approx([1.0, 2.0, 3.0])
    assert [e[0] for e in reporter.epochs_ended] == [1, 2, 3]
    assert reporter.progress_calls > 3

    valid = [h["valid_ppl"] for h in result.history]
    assert all(math.isfinite(v) and v > 1 for v in valid)
    assert valid[-1] < valid[0]
    assert result.best_valid_ppl == pytest.approx(min(reporter.epochs_ended[k][2] for k in range(3)))

    loaded = load_model(out)
    vocab_size = len(loaded.vocab)
    assert result.best_valid_ppl < vocab_size  # better than a uniform guess
    assert loaded.config.emb_size == 20 and loaded.config.hidden_size == 40 and loaded.config.chunk_size == 5
    assert loaded.parse_layer == 2  # the middle of three layers
    assert "," not in loaded.vocab and "." not in loaded.vocab  # punctuation dropped by default
    assert "hello" in loaded.vocab
    meta = loaded.meta
    assert meta["epochs"] == pytest.approx(3.0)
    assert meta["valid_ppl"] == pytest.approx(result.best_valid_ppl)
    assert meta["data"]["corpus"] == str(corpus["train"])
    assert meta["data"]["valid"] == str(corpus["valid"])
    assert meta["data"]["train_tokens"] > 0
    assert meta["train"]["epochs"] == 3
    assert meta["train"]["world_size"] == 1 and meta["train"]["global_batch_size"] == 4

    ckpt = read_archive(checkpoint_path(out), CHECKPOINT_FORMAT)
    assert ckpt["epoch"] == 4 and ckpt["position"] == 0  # the next epoch to run, from its start
    assert all(v.dtype == torch.float32 for v in ckpt["state_dict"].values() if v.is_floating_point())
    assert min(adam_steps(ckpt["optimizer"])) > 0


def test_train_without_validation_keeps_latest(corpus, tmp_path):
    out = tmp_path / "m.onlstm"
    result = train_model(corpus["train"], out, dict(TINY_MODEL), tiny_train_config(epochs=1),
                         reporter=QuietReporter())
    assert out.is_file()
    assert result.best_valid_ppl is None
    assert load_model(out).meta["valid_ppl"] is None


def test_train_is_reproducible_with_a_seed(corpus, tmp_path):
    """The same seed gives the same weights whether or not this process has chosen a backend before: the first
    run probes the backends in mid-training, as a fresh process does (the oneDNN probe once drew from torch's
    seeded stream there, so a model depended on what the process had done before)."""
    forget_backend_probes()
    results = [train_model(corpus["train"], tmp_path / f"m{k}.onlstm", dict(TINY_MODEL),
                           tiny_train_config(epochs=1), valid=corpus["valid"], reporter=QuietReporter())
               for k in range(2)]
    assert results[0].best_valid_ppl == results[1].best_valid_ppl
    first, second = (load_model(tmp_path / f"m{k}.onlstm").model.state_dict() for k in range(2))
    assert all(torch.equal(first[name], second[name]) for name in first)


def test_parse_layer_out_of_range(corpus, tmp_path):
    with pytest.raises(TrainingError):
        train_model(corpus["train"], tmp_path / "m.onlstm", dict(TINY_MODEL), tiny_train_config(),
                    parse_layer=4, reporter=QuietReporter())


@pytest.mark.parametrize("lang, split, stored", [("en", None, "paper"), ("zh", None, "symmetric"),
                                                ("zh", "paper", "paper"), ("en", "symmetric", "symmetric")])
def test_the_model_file_keeps_the_split_rule_its_language_or_the_user_chose(corpus, tmp_path, lang, split, stored):
    out = tmp_path / "m.onlstm"
    train_model(corpus["train"], out, dict(TINY_MODEL), tiny_train_config(epochs=1), lang=lang, split=split,
                reporter=QuietReporter())
    assert load_model(out).split == stored
    resumed = tmp_path / "again.onlstm"  # a resumed run keeps its checkpoint's rule, whatever it is given
    train_model(corpus["train"], resumed, dict(TINY_MODEL), tiny_train_config(epochs=2), lang=lang,
                resume=checkpoint_path(out), split="paper" if stored == "symmetric" else "symmetric",
                reporter=QuietReporter())
    assert load_model(resumed).split == stored


def test_an_unknown_split_rule_is_refused_before_training(corpus, tmp_path):
    with pytest.raises(TrainingError, match="split rule"):
        train_model(corpus["train"], tmp_path / "m.onlstm", dict(TINY_MODEL), tiny_train_config(), split="middle",
                    reporter=QuietReporter())
    assert not (tmp_path / "m.onlstm").exists()


# --- resume --------------------------------------------------------------------------------------------

def test_resume_continues_with_optimizer_state(corpus, tmp_path):
    out = tmp_path / "m.onlstm"
    first = train_model(corpus["train"], out, dict(TINY_MODEL), tiny_train_config(epochs=1),
                        valid=corpus["valid"], reporter=QuietReporter())
    ckpt1 = read_archive(checkpoint_path(out), CHECKPOINT_FORMAT)
    steps1 = adam_steps(ckpt1["optimizer"])
    assert min(steps1) > 0

    reporter = QuietReporter()
    second = train_model(corpus["train"], out, dict(TINY_MODEL), tiny_train_config(epochs=2),
                         valid=corpus["valid"], resume=checkpoint_path(out), reporter=reporter)
    assert reporter.epochs_started == [2]  # epoch 1 is not run again
    assert second.epochs_done > first.epochs_done
    assert second.epochs_done == pytest.approx(2.0)
    assert len(second.history) == 2 and second.history[0] == first.history[0]
    assert any("resum" in m for m in reporter.messages)

    ckpt2 = read_archive(checkpoint_path(out), CHECKPOINT_FORMAT)
    # Adam's step counts went on from where they were: the optimizer state was restored, not restarted.
    steps2 = adam_steps(ckpt2["optimizer"])
    assert steps2 == [s + reporter.progress_calls for s in steps1]
    assert ckpt2["epoch"] == 3
    assert load_model(out).meta["epochs"] == pytest.approx(2.0)


def test_resume_with_another_batch_size_is_refused(corpus, tmp_path):
    """The checkpoint's position is a row of columns that another (global) batch size would cut elsewhere."""
    out = tmp_path / "m.onlstm"
    train_model(corpus["train"], out, dict(TINY_MODEL), tiny_train_config(batch_size=4), reporter=QuietReporter())
    with pytest.raises(TrainingError, match=r"1 process × batch 4 \(global batch 4\)"):
        train_model(corpus["train"], out, dict(TINY_MODEL), tiny_train_config(epochs=2, batch_size=2),
                    resume=checkpoint_path(out), reporter=QuietReporter())


def test_resume_from_a_model_file_is_refused(corpus, tmp_path):
    out = tmp_path / "m.onlstm"
    train_model(corpus["train"], out, dict(TINY_MODEL), tiny_train_config(epochs=1), reporter=QuietReporter())
    from onlstm_cli.errors import ModelFileError
    with pytest.raises(ModelFileError):
        train_model(corpus["train"], tmp_path / "n.onlstm", resume=out, reporter=QuietReporter())


# --- interrupts and the time budget ------------------------------------------------------------------

class InterruptingReporter(QuietReporter):
    def __init__(self, after: int):
        super().__init__()
        self.after = after

    def progress(self, *args):
        super().progress(*args)
        if self.progress_calls >= self.after:
            raise KeyboardInterrupt


def test_keyboard_interrupt_leaves_model_and_checkpoint(corpus, tmp_path):
    out = tmp_path / "m.onlstm"
    reporter = InterruptingReporter(after=2)
    result = train_model(corpus["train"], out, dict(TINY_MODEL), tiny_train_config(epochs=5),
                         valid=corpus["valid"], reporter=reporter)
    assert result.interrupted
    assert reporter.progress_calls == 2
    assert reporter.epochs_ended == []  # interrupted inside the first epoch
    loaded = load_model(out)
    assert loaded.config.hidden_size == 40
    ckpt = read_archive(checkpoint_path(out), CHECKPOINT_FORMAT)
    assert ckpt["epoch"] == 1 and ckpt["position"] > 0
    # the part of the epoch it trained, in the result and in the model it kept
    assert 0 < result.epochs_done < 1
    assert loaded.meta["epochs"] == round(result.epochs_done, 3)
    assert adam_steps(ckpt["optimizer"]) and min(adam_steps(ckpt["optimizer"])) == 2
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []

    # The interrupted run resumes mid-epoch and finishes.
    resumed = QuietReporter()
    result2 = train_model(corpus["train"], out, dict(TINY_MODEL), tiny_train_config(epochs=1),
                          valid=corpus["valid"], resume=checkpoint_path(out), reporter=resumed)
    assert not result2.interrupted
    assert resumed.epochs_started == [1]
    assert result2.epochs_done == pytest.approx(1.0)
    assert min(adam_steps(read_archive(checkpoint_path(out), CHECKPOINT_FORMAT)["optimizer"])) \
        == 2 + resumed.progress_calls


class InterruptedBetweenEpochs(QuietReporter):
    def start_epoch(self, epoch, n_tokens):
        super().start_epoch(epoch, n_tokens)
        if epoch == 2:
            raise KeyboardInterrupt


def test_an_interrupt_between_epochs_resumes_at_the_start_of_the_next_one(corpus, tmp_path):
    out = tmp_path / "m.onlstm"
    result = train_model(corpus["train"], out, dict(TINY_MODEL), tiny_train_config(epochs=3),
                         valid=corpus["valid"], reporter=InterruptedBetweenEpochs())
    assert result.interrupted and result.epochs_done == pytest.approx(1.0)
    ckpt = read_archive(checkpoint_path(out), CHECKPOINT_FORMAT)
    assert (ckpt["epoch"], ckpt["position"]) == (2, 0)  # not the end of epoch 1's data: epoch 2 would be skipped

class SignallingReporter(QuietReporter):
    def __init__(self, signum):
        super().__init__()
        self.signum = signum

    def progress(self, *args):
        super().progress(*args)
        if self.progress_calls == 2:
            os.kill(os.getpid(), self.signum)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_at_the_end_of_a_step_and_restores_the_handler(corpus, tmp_path, signum):
    out = tmp_path / "m.onlstm"
    before = signal.getsignal(signum)
    reporter = SignallingReporter(signum)
    result = train_model(corpus["train"], out, dict(TINY_MODEL), tiny_train_config(epochs=5),
                         valid=corpus["valid"], reporter=reporter)
    assert result.interrupted
    assert reporter.progress_calls == 3  # the step under way when the signal came is finished, then it stops
    ckpt = read_archive(checkpoint_path(out), CHECKPOINT_FORMAT)
    assert ckpt["epoch"] == 1 and ckpt["position"] > 0
    assert min(adam_steps(ckpt["optimizer"])) == 3  # the checkpoint is the state after the last step
    assert load_model(out).config.hidden_size == 40
    assert signal.getsignal(signum) == before


def test_keyboard_interrupt_keeps_an_existing_better_model(corpus, tmp_path):
    out = tmp_path / "m.onlstm"
    train_model(corpus["train"], out, dict(TINY_MODEL), tiny_train_config(epochs=1), valid=corpus["valid"],
                reporter=QuietReporter())
    before = out.read_bytes()
    result = train_model(corpus["train"], out, dict(TINY_MODEL), tiny_train_config(epochs=3),
                         valid=corpus["valid"], resume=checkpoint_path(out), reporter=InterruptingReporter(1))
    assert result.interrupted
    assert out.read_bytes() == before


def test_time_budget_stops_early(corpus, tmp_path):
    out = tmp_path / "m.onlstm"
    reporter = QuietReporter()
    result = train_model(corpus["train"], out, dict(TINY_MODEL), tiny_train_config(epochs=50, time_budget=1e-6),
                         valid=corpus["valid"], reporter=reporter)
    assert result.stopped_by_time and not result.interrupted
    assert reporter.progress_calls == 1
    assert 0 < result.epochs_done < 1
    assert out.is_file() and load_model(out).meta["epochs"] == pytest.approx(result.epochs_done)
    assert reporter.epochs_ended[-1][4] == pytest.approx(result.epochs_done, abs=1e-3)  # its line says it was cut
    ckpt = read_archive(checkpoint_path(out), CHECKPOINT_FORMAT)
    assert ckpt["epoch"] == 1 and ckpt["position"] > 0


# --- bad input --------------------------------------------------------------------------------------------

def test_non_utf8_corpus(tmp_path):
    path = tmp_path / "latin1.txt"
    path.write_bytes("the café sat\n".encode("latin-1"))
    with pytest.raises(TrainingError) as excinfo:
        train_model(path, tmp_path / "m.onlstm", dict(TINY_MODEL), tiny_train_config(), reporter=QuietReporter())
    assert "UTF-8" in str(excinfo.value) and "\n" not in str(excinfo.value)
    assert not (tmp_path / "m.onlstm").exists()


def test_non_utf8_valid(corpus, tmp_path):
    path = tmp_path / "bad_valid.txt"
    path.write_bytes(b"the \xff cat\n")
    with pytest.raises(TrainingError):
        train_model(corpus["train"], tmp_path / "m.onlstm", dict(TINY_MODEL), tiny_train_config(), valid=path,
                    reporter=QuietReporter())


@pytest.mark.parametrize("content", ["", "\n\n  \n", ". , !\n?? --\n"])
def test_empty_corpus(tmp_path, content):
    path = tmp_path / "empty.txt"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(TrainingError):
        train_model(path, tmp_path / "m.onlstm", dict(TINY_MODEL), tiny_train_config(), reporter=QuietReporter())


def test_missing_corpus(tmp_path):
    with pytest.raises(TrainingError):
        train_model(tmp_path / "nope.txt", tmp_path / "m.onlstm", dict(TINY_MODEL), tiny_train_config(),
                    reporter=QuietReporter())


def test_too_little_text_for_the_batch_size(tmp_path):
    path = tmp_path / "short.txt"
    path.write_text("a b c\n", encoding="utf-8")
    with pytest.raises(TrainingError, match="too little text for batch size 64"):
        train_model(path, tmp_path / "m.onlstm", dict(TINY_MODEL), tiny_train_config(batch_size=64),
                    reporter=QuietReporter())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["short.txt"]  # no m.onlstm.tokens left behind


def test_unknown_optimizer(corpus, tmp_path):
    with pytest.raises(TrainingError):
        train_model(corpus["train"], tmp_path / "m.onlstm", dict(TINY_MODEL), tiny_train_config(optimizer="rmsprop"),
                    reporter=QuietReporter())


def test_loss_log_has_a_line_per_step(corpus, tmp_path):
    log = tmp_path / "losses.tsv"
    reporter = QuietReporter()
    train_model(corpus["train"], tmp_path / "m.onlstm", dict(TINY_MODEL),
                tiny_train_config(epochs=2, loss_log=str(log)), reporter=reporter)
    steps = [line.split("\t") for line in log.read_text().splitlines()]
    assert len(steps) == reporter.progress_calls
    assert [int(e) for e, _, _ in steps] == sorted(int(e) for e, _, _ in steps) and steps[-1][0] == "2"
    assert all(math.isfinite(float(loss)) and float(loss) > 0 for _, _, loss in steps)


def test_the_cli_defaults_are_the_configs(corpus, tmp_path, monkeypatch):
    """`onlstm train CORPUS` without options trains with ModelConfig's and TrainConfig's defaults."""
    import onlstm_cli.training.lm.train
    from onlstm_cli.cli.commands import app
    seen = {}

    def fake_train_model(corpus, out, model_config, train_config, **kwargs):
        seen.update(model_config=model_config, train_config=train_config, **kwargs)
        return TrainResult(str(out), str(checkpoint_path(out)), 1.0, None)

    monkeypatch.setattr(onlstm_cli.training.lm.train, "train_model", fake_train_model)
    result = CliRunner().invoke(app, ["train", str(corpus["train"]), "--out", str(tmp_path / "m.onlstm")])
    assert result.exit_code == 0, result.output
    # the sizes the vocabulary decides (its words, their rows, the n-gram rows by --units) are the plan's
    decided = ("vocab_size", "word_rows", "unit_buckets")
    model_defaults = {f.name: f.default for f in dataclasses.fields(ModelConfig) if f.name not in decided}
    assert seen["model_config"] == model_defaults
    assert seen["train_config"] == TrainConfig()
    assert seen["max_vocab"] == DEFAULT_MAX_VOCAB and seen["min_freq"] == 1 and seen["units"] == DEFAULT_UNITS
    assert seen["split"] is None  # train_model picks the language's rule
    result = CliRunner().invoke(app, ["train", str(corpus["train"]), "--out", str(tmp_path / "m.onlstm"),
                                      "--split", "symmetric"])
    assert result.exit_code == 0 and seen["split"] == "symmetric", result.output


def test_a_right_to_left_model_trains_on_each_sentence_reversed(corpus, tmp_path):
    out = tmp_path / "r.onlstm"
    result = train_model(corpus["train"], out, dict(TINY_MODEL, reverse=True), tiny_train_config(epochs=1),
                         valid=corpus["valid"], reporter=QuietReporter())
    loaded = load_model(out)
    assert loaded.config.reverse and math.isfinite(result.best_valid_ppl)
    sentences = read_corpus(corpus["train"], loaded.tokenizer)
    ids = corpus_token_file(corpus["train"], token_file_path(out), loaded.vocab, loaded.tokenizer,
                            pretokenized=False, keep_punct=False, reverse=True, write=False)
    assert ids.tolist() == token_stream([s[::-1] for s in sentences], loaded.vocab).tolist()
    with pytest.raises(TrainingError, match="written for another"):  # a left-to-right run would not reuse it
        corpus_token_file(corpus["train"], token_file_path(out), loaded.vocab, loaded.tokenizer,
                          pretokenized=False, keep_punct=False, write=False)
    # its perplexity on a text is measured reading right to left, as it was trained
    assert text_perplexity(loaded, corpus["valid"]) == pytest.approx(result.best_valid_ppl, rel=1e-2)


def test_a_character_model_trains_on_characters_and_parses_words(tmp_path):
    from onlstm_cli.cli.commands import app
    corpus = tmp_path / "zh.txt"
    corpus.write_text("\n".join(["我爱北京天安门", "苹果的颜色是什么", "爱真的需要勇气", "他们在学校学习"] * 30) + "\n",
                      encoding="utf-8")
    out = tmp_path / "zh.onlstm"
    got = CliRunner().invoke(app, ["train", str(corpus), "--out", str(out), "--characters", "--epochs", "1",
                                   "--batch-size", "4", "--bptt", "10", "--emb-size", "20", "--hidden-size", "20",
                                   "--chunk-size", "5", "--threads", "1", "--time-budget", "none"])
    assert got.exit_code == 0, got.output
    loaded = load_model(out)
    assert loaded.tokenizer.characters and loaded.tokenizer.kind == "jieba"
    assert all(len(w) == 1 for w in loaded.vocab.itos[2:])  # <unk>, <eos>, then characters only
    got = CliRunner().invoke(app, ["parse", "--model", str(out), "-f", "json"], input="爱真的需要勇气\n")
    assert got.exit_code == 0, got.output
    parsed = json.loads(got.output)
    assert parsed["words"] == ["爱", "真的", "需要", "勇气"]  # the tree is over jieba's words
    assert len(parsed["distances"]) == 4


# --- what the run says about itself: its size, its length, its end -------------------------------------------

class RecordingReporter(QuietReporter):
    """Keeps every progress call's arguments and each epoch's token count."""

    def __init__(self, stop_after: int | None = None):
        super().__init__()
        self.calls, self.epoch_tokens, self.stop_after = [], [], stop_after

    def start_epoch(self, epoch, n_tokens):
        super().start_epoch(epoch, n_tokens)
        self.epoch_tokens.append(n_tokens)

    def progress(self, epoch, tokens_done, loss, tokens_per_s, eta_s):
        super().progress(epoch, tokens_done, loss, tokens_per_s, eta_s)
        self.calls.append((epoch, tokens_done, tokens_per_s, eta_s))
        if self.stop_after is not None and self.progress_calls >= self.stop_after:
            raise KeyboardInterrupt


def test_the_run_starts_by_saying_its_corpus_vocabulary_and_limits_then_how_long_it_takes(corpus, tmp_path):
    out, reporter = tmp_path / "m.onlstm", RecordingReporter()
    train_model(corpus["train"], out, dict(TINY_MODEL), tiny_train_config(epochs=3, time_budget=3600.0),
                valid=corpus["valid"], reporter=reporter)
    loaded = load_model(out)
    tokens, vocab = loaded.meta["data"]["train_tokens"], len(loaded.vocab)
    assert reporter.messages[0] == (f"corpus: {tokens:,} tokens, vocabulary {vocab:,}; time budget 60 min, "
                                    "at most 3 epochs")
    assert reporter.epoch_tokens == [tokens] * 3
    estimates = [m for m in reporter.messages if "an epoch takes about" in m]
    assert len(estimates) == 1  # once, when the first steps are timed
    assert "the 3 epochs end in about" in estimates[0] and estimates[0].endswith("within the time budget of 60 min")


def test_progress_gives_the_eta_of_the_run_not_of_the_epoch(corpus, tmp_path):
    reporter = RecordingReporter()
    train_model(corpus["train"], tmp_path / "m.onlstm", dict(TINY_MODEL), tiny_train_config(epochs=3),
                reporter=reporter)
    n_tokens = reporter.epoch_tokens[0]
    for epoch, tokens_done, rate, eta in reporter.calls:
        epochs_after = 3 - epoch
        assert eta >= epochs_after * n_tokens / rate  # the epochs after this one count
    first_epoch = [call for call in reporter.calls if call[0] == 1]
    epoch, tokens_done, rate, eta = first_epoch[0]
    assert eta > (n_tokens - tokens_done) / rate  # more than what is left of the epoch


def test_the_eta_and_the_estimate_stop_at_the_time_budget(corpus, tmp_path):
    reporter = RecordingReporter(stop_after=25)  # past ESTIMATE_STEPS (the tiny epochs are shorter)
    result = train_model(corpus["train"], tmp_path / "m.onlstm", dict(TINY_MODEL),
                         tiny_train_config(epochs=100000, time_budget=50.0), reporter=reporter)
    assert result.interrupted
    assert reporter.calls and all(eta <= 50.0 for *_, eta in reporter.calls)
    assert "time budget 50 s, at most 100000 epochs" in reporter.messages[0]
    estimate = next(m for m in reporter.messages if "an epoch takes about" in m)
    assert "time budget 50 s: about " in estimate and " epochs, ending in about " in estimate


def test_run_eta_and_the_estimate_line():
    # 1000 tokens left at 100 tokens/s, 2 epochs of 5000 after it, 3 s validations: 10 + 3 + 2 × (50 + 3)
    assert run_eta(1000, 2, 5000, 100.0, 3.0, None) == pytest.approx(119.0)
    assert run_eta(1000, 2, 5000, 100.0, 3.0, 60.0) == 60.0
    # half an epoch done, 10 min of budget left at a minute an epoch: 10.5 of the 20 epochs
    line = estimate_line(100.0, 6000, 0.5, 20, 600.0, 600.0, 600.0)
    assert line == "at 100 tokens/s an epoch takes about 60 s: time budget 10 min: about 10.5 epochs, ending " \
                   "in about 10 min"
    assert estimate_line(100.0, 6000, 0.5, 10, 570.0, 600.0, 600.0).endswith(
        "the 10 epochs end in about 9.5 min, within the time budget of 10 min")
    assert estimate_line(100.0, 6000, 0.0, 2, 120.0, None, None) == \
        "at 100 tokens/s an epoch takes about 60 s: the 2 epochs end in about 2.0 min"
    assert [duration_text(s) for s in (0.42, 45, 150, 3000, 9000)] == ["0.4 s", "45 s", "2.5 min", "50 min", "2.5 h"]


def test_a_progress_line_gives_the_eta_of_the_run_and_of_the_epoch():
    import io
    from onlstm_cli.training.lm.train import LineReporter
    reporter = LineReporter(io.StringIO(), every_s=0)
    reporter.start_epoch(2, 800_000)
    reporter.progress(2, 200_000, 4.5, 3000.0, 3000.0)  # 600,000 tokens left in the epoch at 3000 tokens/s
    assert reporter.stream.getvalue().strip().endswith("| 3000 tokens/s | eta: run 50 min, epoch 3.3 min")


def test_an_epoch_the_time_budget_cut_is_not_reported_as_ended():
    import io
    from onlstm_cli.training.lm.train import LineReporter
    reporter = LineReporter(io.StringIO(), every_s=0)
    reporter.end_epoch(4, 900.0, 560.0, True)
    reporter.end_epoch(5, 917.0, 577.24, False, done=0.0599)
    assert reporter.stream.getvalue().splitlines() == [
        "end of epoch 4 | train ppl 900.00 | valid ppl 560.00 | saved",
        "end of epoch 5, 5% of it | train ppl 917.00 | valid ppl 577.24"]


def test_the_end_summary_says_what_the_model_file_is(tmp_path):
    out = tmp_path / "m.onlstm"
    stopped = TrainResult(str(out), str(out) + ".ckpt", 0.3, None, interrupted=True)
    assert "stopped before the first validation on v.txt; no model file was written" in stopped.summary("v.txt")
    out.write_bytes(b"")
    assert ("stopped before the first validation on v.txt, so the model is the latest, not chosen by validation; "
            f"model: {out};") in stopped.summary("v.txt")
    assert "no validation text, so the model is the latest, not chosen by validation" in stopped.summary(None)
    nan = TrainResult(str(out), str(out) + ".ckpt", 1.0, None, history=[{"epoch": 1.0, "valid_ppl": math.nan}])
    assert "no validation perplexity on v.txt was a finite number, so the model is not chosen" in nan.summary("v.txt")
    best = TrainResult(str(out), str(out) + ".ckpt", 2.0, 12.345)
    assert best.summary("v.txt").startswith(f"done: 2.00 epochs in 0.0 min; best valid ppl 12.35; model: {out};")


def test_a_signal_before_the_first_validation_is_told_as_such(corpus, tmp_path, monkeypatch):
    from onlstm_cli.cli.commands import app
    from onlstm_cli.training.lm.train import LineReporter

    def terminated(self, *args):
        os.kill(os.getpid(), signal.SIGTERM)

    monkeypatch.setattr(LineReporter, "progress", terminated)
    out = tmp_path / "m.onlstm"
    got = CliRunner().invoke(app, ["train", str(corpus["train"]), "--valid", str(corpus["valid"]), "--out", str(out),
                                   "--emb-size", "20", "--hidden-size", "40", "--chunk-size", "5", "--bptt", "10",
                                   "--device", "cpu", "--threads", "1", "--time-budget", "none"])
    assert got.exit_code == 143, got.output
    last = got.stderr.strip().splitlines()[-1]
    assert last.startswith("interrupted: ")
    assert f"stopped before the first validation on {corpus['valid']}, so the model is the latest" in last
    assert "no validation text" not in last and f"model: {out};" in last and out.is_file()


def test_a_deadline_stops_a_run_before_its_time_budget_with_a_model_kept(corpus, tmp_path):
    """Issue 41 item 10: a recipe's stage ends at a wall-clock deadline, the run's set-up inside it."""
    import time
    out = tmp_path / "m.onlstm"
    result = train_model(corpus["train"], out, dict(TINY_MODEL), tiny_train_config(epochs=1000, time_budget=3600.0),
                         valid=corpus["valid"], reporter=QuietReporter(), budget=Budget(3600.0, until=time.time()))
    assert result.stopped_by_time and result.epochs_done < 1 and out.is_file()


def test_a_one_epoch_run_shorter_than_its_timing_steps_estimates_nothing_it_has_already_done(corpus, tmp_path):
    """Issue 41 item 11: at the end of its last epoch a run has nothing left to estimate ("the 1 epochs end in
    about 0.0 s" was untrue); one epoch is one epoch."""
    reporter = RecordingReporter()
    train_model(corpus["train"], tmp_path / "m.onlstm", dict(TINY_MODEL), tiny_train_config(epochs=1),
                reporter=reporter)
    assert len(reporter.calls) < 20  # shorter than ESTIMATE_STEPS
    assert not [m for m in reporter.messages if "an epoch takes about" in m]
    assert estimate_line(100.0, 6000, 0.0, 1, 70.0, None, None) == \
        "at 100 tokens/s an epoch takes about 60 s: the epoch ends in about 70 s"


def rendered(reporter) -> str:
    import io
    from rich.console import Console
    console = Console(file=io.StringIO(), width=160, color_system=None)
    console.print(reporter.bar.get_renderable())
    return console.file.getvalue()


def test_the_live_line_shows_no_figure_before_the_first_step_is_timed():
    """Issue 41 item 11: "loss 0.000 ppl 0.0 0 tok/s" opened every epoch."""
    from onlstm_cli.training.lm.report import RichReporter
    reporter = RichReporter()
    reporter.start_epoch(2, 1000)
    before = rendered(reporter)
    assert "epoch 2" in before and "loss -  ppl -  - tok/s" in before and "0.000" not in before
    reporter.progress(2, 500, 4.5, 1234.0, 30.0)
    assert "loss 4.500  ppl 90.0  1,234 tok/s" in rendered(reporter)


def test_a_recipes_seeds_report_to_one_live_display_a_row_each():
    """Issue 41 item 11: side by side on a terminal, each seed's process reports to the recipe's display."""
    import queue
    from types import SimpleNamespace

    from onlstm_cli.training.recipe.side_by_side import _QueueReporter, _relay
    from onlstm_cli.training.lm.report import RichReporter
    results, display = queue.Queue(), RichReporter()
    for seed in (1111, 1112):
        seeds = _QueueReporter(seed, results, every_s=0.0)
        seeds.start_epoch(1, 1000)
        seeds.progress(1, 250 * (seed - 1110), 5.0, 2000.0, 12.0)
    results.put((1111, {"interrupted": False}))
    items = [results.get_nowait() for _ in range(results.qsize())]
    jobs = {seed: SimpleNamespace(label=f"seed {seed}") for seed in (1111, 1112)}  # what each row is named by
    assert _relay(items, (display, jobs)) == [(1111, {"interrupted": False})]
    text = rendered(display)
    assert "[seed 1111] epoch 1" in text and "[seed 1112] epoch 1" in text and text.count("2,000 tok/s") == 2


def test_a_seeds_epoch_the_budget_cut_reaches_the_live_display_as_the_part_that_ran():
    import io
    import queue
    from types import SimpleNamespace

    from rich.console import Console

    from onlstm_cli.training.lm.report import RichReporter
    from onlstm_cli.training.recipe.side_by_side import _QueueReporter, _relay
    results, display = queue.Queue(), RichReporter()
    display.console = Console(file=io.StringIO(), width=160, color_system=None)
    seed = _QueueReporter(1111, results, every_s=0.0)
    seed.end_epoch(1, 900.0, 560.0, True)
    seed.end_epoch(2, 880.0, 570.0, False, 0.25)
    items = [results.get_nowait() for _ in range(results.qsize())]
    _relay(items, (display, {1111: SimpleNamespace(label="seed 1111")}))
    lines = display.console.file.getvalue().splitlines()
    assert lines == ["[seed 1111] epoch 1: train ppl 900.00, valid ppl 560.00 (saved)",
                     "[seed 1111] epoch 2, 25% of it: train ppl 880.00, valid ppl 570.00"]
