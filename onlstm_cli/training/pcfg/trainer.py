"""The loop of one PCFG training run (train.py sets it up), in the pieces nanoGPT's loop has: steps, evaluation,
checkpoints, stopping. On several processes (torchrun) every rank runs it alike: the same batches, each its share
of a batch's sentences, the gradients summed in one collective a step, and the decisions to stop or checkpoint
made by rank 0 (any rank's Ctrl-C) and shared before each step."""
from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from onlstm_cli.config import SelfTrainConfig
from onlstm_cli.evaluation.metrics import nearest_branching
from onlstm_cli.pcfg.model import NeuralPCFG, focus_mask, pcfg_trees
from onlstm_cli.modelfile import CHECKPOINT_FORMAT, FORMAT_VERSION, atomic_save
from onlstm_cli.pcfg_file import pcfg_archive
from onlstm_cli.training.run.distributed import Group
from onlstm_cli.training.run.files import Saves, checkpoint_path
from onlstm_cli.training.run.guard import DivergenceGuard, epochs_since_best
from onlstm_cli.trees import build_tree, tree_spans


@dataclass
class PcfgTrainResult:
    out: Path
    checkpoint: Path
    epochs_done: float
    best_valid_ppl: float | None
    seconds: float
    stopped_by_time: bool = False
    interrupted: bool = False
    stop_signal: int = 0
    left_out: int = 0              # training lines over max_len words
    stopped_early: int = 0         # where the validation perplexity stopped it: the epochs it had not improved

    def summary(self, valid=None) -> str:
        """The end line of `onlstm train --family pcfg`."""
        how = ("interrupted" if self.interrupted else "time budget reached" if self.stopped_by_time else
               f"stopped early, validation perplexity no better for {self.stopped_early} epochs (--patience)"
               if self.stopped_early else "done")
        model = (f"best valid ppl {self.best_valid_ppl:.2f}; model: {self.out}" if self.best_valid_ppl is not None
                 else f"no validation text, so the model is the latest; model: {self.out}" if self.out.exists()
                 else f"no model file was written ({self.out})")
        return f"{how}: {self.epochs_done:.2f} epochs in {self.seconds / 60:.1f} min; {model}; checkpoint: {self.checkpoint}"


def length_batches(ids_of: list[list[int]], batch_size: int, rng: random.Random | None) -> list[list[int]]:
    """Batches of sentences of the same or about the same length (little padding), in random order with `rng`."""
    order = sorted(range(len(ids_of)), key=lambda k: (len(ids_of[k]), rng.random() if rng else 0))
    batches = [order[s:s + batch_size] for s in range(0, len(order), batch_size)]
    if rng:
        rng.shuffle(batches)
    return batches


def batch_tensors(ids_of: list[list[int]], batch: list[int], device="cpu") -> tuple[torch.Tensor, torch.Tensor]:
    lengths = torch.tensor([len(ids_of[k]) for k in batch])
    ids = torch.zeros(len(batch), int(lengths.max()), dtype=torch.long)
    for row, k in enumerate(batch):
        ids[row, :len(ids_of[k])] = torch.tensor(ids_of[k], dtype=torch.long)
    return ids.to(device), lengths.to(device)


@torch.no_grad()
def perplexity(model: NeuralPCFG, ids_of: list[list[int]], batch_size: int = 64,
               group: Group = Group()) -> float | None:
    """Per word, exp(− Σ log p(sentence) / Σ words); None without sentences. On several processes each rank scores
    its share of the sentences and the sums are shared."""
    if not ids_of:
        return None
    share, total = ids_of[group.rank::group.world_size], 0.0
    for batch in length_batches(share, batch_size, None):
        total += float(model.log_likelihood(*batch_tensors(share, batch, model.words.weight.device)).sum())
    total, words = group.sum([total, float(sum(map(len, share)))], model.words.weight.device)
    return math.exp(min(-total / words, 50.0))


# A run's end parses at most this many validation sentences to see whether its trees are a branching rule's
BRANCHING_CHECK_SENTENCES = 500


def branching_warning(model: NeuralPCFG, valid: list[list[int]]) -> str | None:
    """A warning where the PCFG's MBR trees of the validation sentences (of 3 words or more, the first
    BRANCHING_CHECK_SENTENCES) agree more than a recipe's vote allows (`--max-branching-agreement`'s default) with
    right- or left-branching trees: such a grammar learned that rule (PCFGs fall to one by seed: pcfg.md)."""
    sentences = [ids for ids in valid if len(ids) >= 3][:BRANCHING_CHECK_SENTENCES]
    if not sentences:
        return None
    model.eval()
    heights, _ = pcfg_trees(model, sentences)
    trees = [tree_spans(build_tree(h, list(range(len(h))), "symmetric")) for h in heights]
    side, agreement = nearest_branching(trees, [len(ids) for ids in sentences])
    if agreement <= SelfTrainConfig.max_branching_agreement:
        return None
    return (f"warning: the PCFG's trees of the validation text agree {agreement:.1f} with {side}-branching "
            "trees: it learned that rule, not the text's structure (a recipe leaves such a teacher out of its vote); "
            "another --seed, or --teacher files to focus it on, may learn more")


# a training perplexity that ends more than this factor above its lowest went uphill, past an epoch's noise
UPHILL = 1.1


def uphill_warning(history: list[dict]) -> str | None:
    """A warning where the training perplexity (one an epoch) ended more than UPHILL above its lowest: the rate is too
    high for this many epochs, as the default was for ten epochs of PTB, where half of it was not (docs/training.md)."""
    train = [h["train_ppl"] for h in history if h.get("train_ppl") is not None]
    lowest = min(train, default=None)
    if lowest is None or train[-1] <= UPHILL * lowest:
        return None
    return (f"warning: the training perplexity went uphill, from {lowest:.2f} after epoch {train.index(lowest) + 1} "
            f"to {train[-1]:.2f} after epoch {len(train)}: the learning rate is too high for this many epochs (the "
            "file keeps the epoch of best validation perplexity); a lower --lr, e.g. 0.001, trains steadier")


class PcfgRun:
    def __init__(self, model, optimizer, rng, text, train, progress, identity: dict, out: Path, clock, reporter,
                 meta: dict, reading: tuple, group: Group = Group()):
        self.model, self.optimizer, self.rng, self.text, self.train = model, optimizer, rng, text, train
        self.group = group
        self.progress, self.identity, self.out, self.clock, self.reporter = progress, identity, out, clock, reporter
        self.meta, (self.tokenizer, self.lang) = meta, reading
        self.checkpoint = checkpoint_path(out)
        self.saves, self.guard = Saves(reporter.message), DivergenceGuard(train.max_bad_steps)
        self.train_loss = math.nan
        self.best_state = None  # the weights `out` holds, where this run wrote it

    def loop(self, signals):
        p = self.progress
        stop = "patience" if self.patience_spent() else None  # a resumed run's checkpoint may have spent it
        while p.epoch <= self.train.epochs and stop is None:
            stop = self.train_epoch(signals)
            if stop == "interrupt":
                break
            self.end_epoch()
            if stop is None and self.clock.time_up():
                stop = "time"
            elif stop is None and self.patience_spent():
                stop = "patience"
        if stop == "interrupt":
            self.save_checkpoint()
            self.reporter.message(f"interrupted in epoch {p.epoch} after {p.step} batches; resume with --resume "
                                  f"{self.checkpoint}")
        unsaved = self.saves.unsaved and f"training stopped, but its last save failed: {self.saves.unsaved}"
        error = self.group.first_error(unsaved)  # rank 0 alone saves: the others end with it
        if error is not None:
            self.group.fail_together(error)
        if stop != "interrupt" and self.best_state is not None and self.group.is_main:
            self.model.load_state_dict(self.best_state)  # the model `out` holds (the run is over: its checkpoint is out)
            for warning in (uphill_warning(p.history), branching_warning(self.model, self.text.valid)):
                if warning:
                    self.reporter.message(warning)
        self.group.barrier()  # the other ranks end once rank 0 has said all it says
        done = len(p.history) and p.history[-1]["epochs"]
        return PcfgTrainResult(self.out, self.checkpoint, float(done or 0), None if math.isinf(p.best) else p.best,
                               self.clock.seconds(), stop == "time", stop == "interrupt", int(signals.caught),
                               self.text.left_out, self.epochs_without_gain() if stop == "patience" else 0)

    def patience_spent(self) -> bool:
        return self.epochs_without_gain() >= (self.train.patience or math.inf)  # --patience 0: never

    def epochs_without_gain(self) -> int:
        """The validated epochs since the one of best validation perplexity (0 without a validation text)."""
        return epochs_since_best([h["valid_ppl"] for h in self.progress.history if h.get("valid_ppl") is not None])

    def train_epoch(self, signals) -> str | None:
        """Trains the rest of the current epoch; "interrupt" or "time" when it stopped before its end."""
        p = self.progress
        if p.batches is None:  # each batch is every process's --batch-size sentences
            p.batches, p.step = length_batches(self.text.train, self.group.world_size * self.train.batch_size,
                                               self.rng), 0
        self.model.train()
        self.reporter.start_epoch(p.epoch, self.clock.epoch_tokens)
        last_checkpoint, timed, words, loss_sum = time.monotonic(), time.time(), 0, 0.0
        done = sum(len(self.text.train[k]) for batch in p.batches[:p.step] for k in batch)
        while p.step < len(p.batches):
            # a first epoch ends early only once it has seen a tenth of the text
            interrupt, time_up, checkpoint_due = self.decide(
                signals.caught, self.clock.time_up() and (p.history or p.step >= max(1, len(p.batches) // 10)),
                time.monotonic() - last_checkpoint >= self.train.checkpoint_every)
            if interrupt:
                return "interrupt"
            if time_up:
                return "time"
            if checkpoint_due:
                self.save_checkpoint()
                last_checkpoint = time.monotonic()
            batch = p.batches[p.step]
            loss = self.step(batch)
            p.step += 1
            n = sum(len(self.text.train[k]) for k in batch)
            done, words, loss_sum = done + n, words + n, loss_sum + (loss * n if math.isfinite(loss) else 0.0)
            rate = words / max(time.time() - timed, 1e-9)
            eta = self.clock.eta(rate, self.clock.epoch_tokens - done, p.epoch)
            if not self.clock.validation_seconds and self.text.valid:  # until a validation is timed: its guess
                self.clock.validation_seconds = sum(map(len, self.text.valid)) / rate / 2  # (no backward pass)
            if not self.clock.estimated and time.time() - timed >= 20:
                line = self.clock.estimate(rate, self.clock.epoch_tokens - done, p.epoch, p.epoch - 1)
                if line:
                    self.reporter.message(line)
            self.train_loss = loss_sum / max(words, 1)  # per word, over this run's part of the epoch
            self.reporter.progress(p.epoch, done, self.train_loss, rate, eta)
        return None

    def decide(self, interrupt: bool, time_up: bool, checkpoint_due: bool) -> tuple[bool, bool, bool]:
        """Whether to stop for a signal, for the time, and whether to checkpoint now: the same on every rank (any
        rank's signal, rank 0's clock), so that all take the same steps."""
        if self.group.world_size == 1:
            return bool(interrupt), bool(time_up), bool(checkpoint_due)
        main = float(self.group.is_main)
        summed = self.group.sum([float(bool(interrupt)), main * bool(time_up), main * bool(checkpoint_due)],
                                self.model.words.weight.device)
        return summed[0] > 0, summed[1] > 0, summed[2] > 0

    def step(self, batch: list[int]) -> float:
        """One Adam step on a batch; the loss per word (its sentences' negative log-likelihood over their words, over
        the trees its teachers propose where the run is focused). Each rank's share of the batch contributes its
        part of the batch's mean, and the parts' gradients are summed (Group.sum_gradients)."""
        share = batch[self.group.rank::self.group.world_size]
        self.optimizer.zero_grad()
        nll, words = 0.0, 0.0
        if share:  # a batch of fewer sentences than processes leaves some without one: they add zeros
            ids, lengths = batch_tensors(self.text.train, share, self.model.words.weight.device)
            mask = (None if self.text.focus is None else
                    focus_mask([self.text.focus[k] for k in share], lengths.tolist()).to(ids.device))
            log_likelihood = self.model.log_likelihood(ids, lengths, mask)
            (-log_likelihood.sum() / len(batch)).backward()
            nll, words = float(-log_likelihood.detach().sum()), float(lengths.sum())
        nll, words = self.group.sum_gradients(list(self.model.parameters()), [nll, words])
        norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.train.clip or math.inf)
        loss = nll / words
        if not (math.isfinite(loss) and bool(torch.isfinite(norm))):  # not applied: it would spoil the weights
            self.optimizer.zero_grad()
            kept = f"{self.out} keeps the best PCFG so far; " if self.out.exists() else ""
            self.guard.bad_step(lambda steps: (
                f"PCFG training diverged in epoch {self.progress.epoch}: {steps} steps in a row had a loss or "
                f"gradient that is not a finite number; {kept}start again with a lower --lr"))
            return math.nan
        self.guard.good_step()
        self.optimizer.step()
        return loss

    def end_epoch(self) -> None:
        """Validate (an epoch cut short by the budget too), keep the model if best, checkpoint, next epoch."""
        p = self.progress
        started = time.time()
        self.model.eval()
        valid_ppl = perplexity(self.model, self.text.valid, group=self.group)
        self.clock.validation_seconds = time.time() - started
        epochs = p.epoch - 1 + p.step / max(len(p.batches), 1)
        train_ppl = math.exp(min(self.train_loss, 50.0))
        p.history.append({"epoch": p.epoch, "epochs": round(epochs, 3), "valid_ppl": valid_ppl,
                          "train_ppl": round(train_ppl, 2) if math.isfinite(train_ppl) else None,
                          "seconds": round(self.clock.seconds(), 1)})
        improved = valid_ppl is None or valid_ppl < p.best
        if improved:
            p.best = math.inf if valid_ppl is None else valid_ppl
            meta = {**self.meta, "epochs": round(epochs, 3), "valid_ppl": valid_ppl, "history": list(p.history),
                    "seconds": round(self.clock.seconds(), 1),
                    "created": time.strftime("%Y-%m-%dT%H:%M:%S")}
            if self.group.is_main:
                self.saves(lambda: atomic_save(pcfg_archive(self.model, self.text.vocab, self.tokenizer, self.lang,
                                                            meta), self.out))
            self.best_state = {name: value.detach().clone() for name, value in self.model.state_dict().items()}
        self.reporter.end_epoch(p.epoch, train_ppl, valid_ppl, improved,
                                epochs - (p.epoch - 1))
        p.epoch, p.step, p.batches = p.epoch + 1, 0, None
        self.save_checkpoint()

    def keep_after_lost_peer(self) -> str:
        """Rank 0's checkpoint of where the run stands when a peer is lost (a step whose collective failed is not
        applied, so the weights are those every rank had), and how to go on."""
        if self.group.is_main:
            self.save_checkpoint()
            if self.saves.unsaved is None:
                return f"--resume {self.checkpoint} goes on from here"
        return f"--resume {self.checkpoint} goes on from the latest checkpoint, if there is one"

    def save_checkpoint(self) -> None:
        if not self.group.is_main:
            return
        p = self.progress
        self.saves(lambda: atomic_save({"format": CHECKPOINT_FORMAT, "version": FORMAT_VERSION, "pcfg_training": {
            "state_dict": self.model.state_dict(), "optimizer": self.optimizer.state_dict(), "epoch": p.epoch,
            "step": p.step, "batches": p.batches, "best": p.best, "history": p.history, "rng": self.rng.getstate(),
            "torch_rng": torch.get_rng_state(), "seconds": self.clock.seconds(), "identity": self.identity,
            "vocab": list(self.text.vocab.itos)}}, self.checkpoint))
