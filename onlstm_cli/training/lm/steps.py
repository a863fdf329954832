"""The pieces of a training step and an epoch that the Trainer (trainer.py) puts together: the optimizer (and
the one a resumed run takes over), the model each rank trains, the window of the stream a step reads, the
tally of an epoch's steps, NT-ASGD's trigger and its averaged weights, the moving average of the weights, the
loss log."""
from __future__ import annotations

import contextlib
import math
import random
import time
from dataclasses import dataclass, field
from typing import NamedTuple

import torch
from torch.nn.parallel import DistributedDataParallel

from onlstm_cli.files import open_for_append
from onlstm_cli.config import TrainConfig
from onlstm_cli.errors import TrainingError
from onlstm_cli.lm.model import ONLSTMLanguageModel
from onlstm_cli.training.run.distributed import Group
from onlstm_cli.training.lm.setup import Plan


class Decision(NamedTuple):
    """The end of a step, the same on every rank."""
    loss: float                     # the step's loss, averaged over the ranks
    interrupted: bool
    time_up: bool
    checkpoint_due: bool
    share_done: float               # where the run stands, 0 at its start and 1 at its end, as rank 0 reads it


def detach(state):
    return [(h.detach(), c.detach()) for h, c in state]


def make_optimizer(params, tc: TrainConfig, averaging: bool = False) -> torch.optim.Optimizer:
    if tc.optimizer == "adam":
        return torch.optim.Adam(params, lr=tc.lr, weight_decay=tc.weight_decay)
    if averaging:  # AWD-LSTM's NT-ASGD: plain steps, and the running mean of the weights from here on
        return torch.optim.ASGD(params, lr=tc.lr, t0=0, lambd=0.0, weight_decay=tc.weight_decay)
    return torch.optim.SGD(params, lr=tc.lr, weight_decay=tc.weight_decay)


def resumed_optimizer(params, tc: TrainConfig, plan: Plan) -> torch.optim.Optimizer:
    """The run's optimizer, with the state of the checkpoint it resumes, if any."""
    optimizer = make_optimizer(params, tc, plan.state.averaging)
    if plan.optimizer is not None:
        optimizer.load_state_dict(plan.optimizer)
        plan.optimizer = None  # loaded; a second copy of it would stay in memory for the whole run
        for group in optimizer.param_groups:
            group["lr"] = tc.lr  # a resumed run takes this run's --lr (e.g. a lower one after a divergence)
    return optimizer


def annealings(history: list, after: int) -> int:
    """How many times the learning rate has been divided by now: once for each `after` epochs in a row without
    a better validation perplexity, counted afresh after each division. Read from the history alone, so a
    resumed run goes on at the rate it stopped at."""
    if after <= 0:
        return 0
    best, stale, count = math.inf, 0, 0
    for h in history:
        ppl = h.get("valid_ppl")
        if ppl is None:
            continue
        if ppl < best:
            best, stale = ppl, 0
        else:
            stale += 1
            if stale >= after:
                count, stale = count + 1, 0
    return count


def learning_rate(tc: TrainConfig, history: list, share_done: float = 0.0) -> float:
    """The rate a step takes after `history`, `share_done` of the way through the run (RateSchedule.rate)."""
    return RateSchedule(tc, history).rate(share_done)


class RateSchedule:
    """The rate of each step, --lr as its schedule has it by now: the plateau schedule's divided by anneal_factor
    for each annealing in the history (counted at the end of each epoch), the cosine one's scaled by where the
    run stands (`share_done`, 0 at its start and 1 at its end). Alike on every rank: they share the history and
    rank 0's reading of where the run stands."""

    def __init__(self, tc: TrainConfig, history: list):
        self.tc = tc
        self.annealed = self.annealings(history)

    def annealings(self, history: list) -> int:
        return annealings(history, self.tc.anneal_after) if self.tc.lr_schedule == "plateau" else 0

    def rate(self, share_done: float) -> float:
        lr = self.tc.lr / self.tc.anneal_factor ** self.annealed
        if self.tc.lr_schedule == "cosine":
            lr *= 0.5 * (1.0 + math.cos(math.pi * min(max(share_done, 0.0), 1.0)))
        return lr

    def set(self, optimizer: torch.optim.Optimizer, share_done: float) -> None:
        lr = self.rate(share_done)
        for group in optimizer.param_groups:
            group["lr"] = lr

    def after_epoch(self, history: list) -> str | None:
        """The annealings counted again with the epoch just ended: a line to say so where the rate was just
        lowered, else None."""
        count = self.annealings(history)
        if count <= self.annealed:
            return None
        self.annealed = count
        return (f"no better validation perplexity in {self.tc.anneal_after} epochs: learning rate "
                f"{self.rate(0.0):g} from here on")


def distributed_model(model: ONLSTMLanguageModel, group: Group, device: torch.device) -> torch.nn.Module:
    """The model every rank trains: itself in one process, a DistributedDataParallel copy in several."""
    if group.world_size == 1:
        return model
    # Rank 0's weights are copied to the others here. Every parameter gets a gradient at every step
    # (DropConnect multiplies the parameter inside forward), so no unused-parameter search is needed.
    # The column-major recurrent weights get column-major gradients, the layout of DDP's bucket views.
    # Its gradient averaging is a step's collective: it waits `group.timeout` for the other ranks at most.
    return DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None,
                                   process_group=group.steps)


def should_average(history: list, valid_ppl: float, nonmono: int) -> bool:
    """NT-ASGD's non-monotone trigger: validation is worse than the best of all epochs but the last `nonmono`."""
    earlier = [h["valid_ppl"] for h in history if h.get("valid_ppl") is not None]
    return len(earlier) > nonmono and valid_ppl > min(earlier[:len(earlier) - nonmono])


@dataclass
class EpochTally:
    """The good steps of an epoch so far (all ranks together): their loss and tokens, since when."""
    loss_sum: float = 0.0
    tokens: int = 0
    steps: int = 0
    started: float = field(default_factory=time.time)

    def add(self, loss: float, tokens: int) -> None:
        self.loss_sum, self.tokens, self.steps = self.loss_sum + loss * tokens, self.tokens + tokens, self.steps + 1

    def loss(self) -> float:
        return self.loss_sum / max(self.tokens, 1)

    def rate(self) -> float:
        return self.tokens / max(time.time() - self.started, 1e-9)


class WeightAverage:
    """An exponential moving average of the weights over about `steps` steps, updated after each step: what
    validation scores and the model file keeps, while training goes on from the weights as trained. On a small
    corpus an epoch is a few dozen steps of SGD at a high rate, and the weights at an epoch's end are wherever
    the last steps threw them; their recent average is not. The first steps weigh more (TensorFlow's
    num_updates rule), so that the average does not start from the initial weights."""

    def __init__(self, named_params: list, steps: int, saved: dict | None = None):
        self.names = [name for name, _ in named_params]
        self.params = [p for _, p in named_params]
        self.decay = 1.0 - 1.0 / steps
        self.count = 0
        self.weights = [p.detach().clone() for p in self.params]
        if saved is not None:
            self.load(saved)

    @torch.no_grad()
    def update(self) -> None:
        self.count += 1
        decay = min(self.decay, (1 + self.count) / (10 + self.count))
        torch._foreach_lerp_(self.weights, [p.detach() for p in self.params], 1.0 - decay)

    def state_dict(self) -> dict:
        return {"count": self.count, "weights": dict(zip(self.names, self.weights))}

    def load(self, saved: dict) -> None:
        """A checkpoint's average, copied into this run's own tensors: each must have its weight's shape, so that
        a damaged file cannot make it allocate more than the model."""
        weights = saved.get("weights") if isinstance(saved, dict) else None
        count = saved.get("count") if isinstance(saved, dict) else None
        if (type(count) is not int or not isinstance(weights, dict) or set(weights) != set(self.names)
                or any(not isinstance(weights[n], torch.Tensor) or weights[n].shape != w.shape
                       for n, w in zip(self.names, self.weights))):
            raise TrainingError("the checkpoint's average of the weights does not fit its model: it is damaged")
        with torch.no_grad():
            for name, w in zip(self.names, self.weights):
                w.copy_(weights[name])
        self.count = count


def resumed_average(model: torch.nn.Module, tc: TrainConfig, plan: Plan) -> WeightAverage | None:
    """The run's moving average of the weights (None without --average-steps), the checkpoint's if it kept one."""
    average = (WeightAverage(list(model.named_parameters()), tc.average_steps, plan.average)
               if tc.average_steps > 0 else None)
    plan.average = None  # loaded (as the optimizer's state is)
    return average


@contextlib.contextmanager
def averages_swapped_in(params: list, optimizer: torch.optim.Optimizer, averaging: bool,
                        moving: WeightAverage | None = None):
    """The averaged weights in place of the current ones (for validation and the model file), the current ones
    restored after: NT-ASGD's once it averages, else the moving average's if there is one, else none."""
    averages = ([optimizer.state.get(p, {}).get("ax") for p in params] if averaging
                else moving.weights if moving is not None else [])
    swapped = [(p, p.detach().clone()) for p, ax in zip(params, averages) if ax is not None]
    with torch.no_grad():
        for (p, _), ax in zip(swapped, (a for a in averages if a is not None)):
            p.copy_(ax)
    try:
        yield
    finally:
        with torch.no_grad():
            for p, current in swapped:
                p.copy_(current)


def window_length(bptt: int, rows_left: int) -> int:
    # AWD-LSTM's variable window length keeps the cut points moving between epochs. Python's `random` is
    # seeded alike on every rank, so all ranks take the same windows and the same number of steps.
    mean = bptt if random.random() < 0.95 else bptt / 2
    return min(max(5, int(random.gauss(mean, 5))), rows_left)


def open_loss_log(tc: TrainConfig, main: bool):  # by lines, readable while it runs; a symbolic link is refused
    return open_for_append(tc.loss_log) if tc.loss_log and main else contextlib.nullcontext()

