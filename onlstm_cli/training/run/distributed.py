"""Several processes training one model (started by torchrun), and the few collectives training needs.

A run that torchrun did not start, or started as one process, is the one-process case of the same code:
there every collective below returns its input.

Two process groups: the default one, whose waits may last as long as setting a run up does (rank 0 reading
the corpus, validating, saving), and `Group.steps`, for the collectives of every training step, which waits
for a peer only ONLSTM_COLLECTIVE_TIMEOUT seconds: a frozen or stopped process then ends the run (in one
line, see `lost_peer`) instead of holding the others for hours.
"""
from __future__ import annotations

import contextlib
import datetime
import math
import os
from dataclasses import dataclass

import torch
import torch.distributed as dist

from onlstm_cli.errors import RankZeroFailed, TrainingError

# While rank 0 counts the corpus and each machine writes its token file, the other processes wait in a
# collective; torch's default timeout (10 minutes with NCCL) would end a run on a large corpus there.
SETUP_TIMEOUT = datetime.timedelta(hours=6)

# How long a training step's collective waits for the other processes. A step takes the same work on every
# rank, so a peer that is minutes late is frozen, stopped (SIGSTOP, a debugger) or cut off.
COLLECTIVE_TIMEOUT_VARIABLE = "ONLSTM_COLLECTIVE_TIMEOUT"
DEFAULT_COLLECTIVE_TIMEOUT = 300.0  # seconds


def collective_timeout() -> float:
    """Seconds a step's collective waits (ONLSTM_COLLECTIVE_TIMEOUT, default 300)."""
    text = os.environ.get(COLLECTIVE_TIMEOUT_VARIABLE, "").strip()
    if not text:
        return DEFAULT_COLLECTIVE_TIMEOUT
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds > 0):
        raise TrainingError(f"{COLLECTIVE_TIMEOUT_VARIABLE}={text!r}: expected a number of seconds above 0, "
                            f"such as {DEFAULT_COLLECTIVE_TIMEOUT:.0f}")
    return seconds


def launched_world_size() -> int:
    """The number of processes torchrun started (WORLD_SIZE), 1 without torchrun."""
    return int(os.environ.get("WORLD_SIZE", "1"))


def launched_rank() -> int:
    return int(os.environ.get("RANK", "0")) if launched_world_size() > 1 else 0


@dataclass(frozen=True)
class Group:
    rank: int = 0
    local_rank: int = 0        # the process's number on its machine
    world_size: int = 1
    backend: str | None = None  # None: one process, no process group
    steps: object = None        # the process group of the training steps' collectives (see the module's doc)
    timeout: float = DEFAULT_COLLECTIVE_TIMEOUT  # how long those wait, in seconds

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def is_machine_leader(self) -> bool:
        return self.local_rank == 0

    def broadcast(self, obj):
        """Rank 0's `obj` (plain picklable data), on every rank."""
        if self.world_size == 1:
            return obj
        box = [obj]
        dist.broadcast_object_list(box, src=0)
        return box[0]

    def barrier(self) -> None:
        if self.world_size > 1:
            dist.barrier()

    def sum(self, values: list[float], device: torch.device) -> list[float]:
        """Element-wise sums over the ranks (a step's collective: it waits `timeout` seconds at most)."""
        if self.world_size == 1:
            return values
        tensor = torch.tensor(values, dtype=torch.float64, device=device)
        dist.all_reduce(tensor, group=self.steps)
        return tensor.tolist()

    def sum_gradients(self, params: list, extra: list[float]) -> list[float]:
        """Sums every parameter's gradient over the ranks, in place (a parameter without one counts as zeros), and
        `extra` with them; a step's collective, one message for all of it. Each rank's loss is its part of the
        global batch's, so the sums are the global batch's gradient. Returns `extra` summed."""
        if self.world_size == 1:
            return extra
        grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in params]
        flat = torch.cat([g.reshape(-1) for g in grads] + [torch.tensor(extra, dtype=grads[0].dtype,
                                                                         device=grads[0].device)])
        dist.all_reduce(flat, group=self.steps)
        start = 0
        for p, g in zip(params, grads):
            p.grad = flat[start:start + g.numel()].view_as(p).clone()
            start += g.numel()
        return flat[start:].tolist()

    def first_error(self, error: str | None) -> str | None:
        """The error of the lowest rank that has one (None where none has), on every rank: a failure of one
        process's setup ends the run on all of them."""
        if self.world_size == 1:
            return error
        errors = [None] * self.world_size
        dist.all_gather_object(errors, error)
        return next((f"process {rank}: {e}" if rank else e for rank, e in enumerate(errors) if e is not None), None)


    def fail_together(self, error: str) -> None:
        """Ends every rank with `error`, which all of them have met, said once: rank 0 raises it, the others
        RankZeroFailed once rank 0 has ended (torchrun stops every process as soon as one has exited, and
        could stop rank 0 before it has said why)."""
        if self.is_main:
            raise TrainingError(error)
        if self.world_size > 1:
            with contextlib.suppress(Exception):
                dist.barrier()  # rank 0 never joins: this ends when its process does, or torchrun ends this one
        raise RankZeroFailed(error)


def rank_zero_reads(group: Group, read):
    """Rank 0's `read()` (plain picklable data: the files of a run are read once, where they are), on every rank;
    a failure there ends the other ranks too, said by rank 0 alone."""
    if not group.is_main:
        value = group.broadcast(None)
        if isinstance(value, RankZeroFailed):
            group.fail_together(str(value))
        return value
    try:
        value = read()
    except Exception as e:
        group.broadcast(RankZeroFailed(str(e)))  # else the others would wait for it forever
        raise
    return group.broadcast(value)


def lost_peer(error: BaseException, group: Group) -> str | None:
    """Why a collective failed, when it failed because another process of the run stopped answering or
    ended; None for any other error. (gloo raises RuntimeError for both; NCCL's watchdog aborts instead.)"""
    if group.world_size == 1 or not isinstance(error, RuntimeError):
        return None
    text = str(error).lower()
    if "timed out" in text or "timeout" in text:
        return (f"another process of this run did not answer for {group.timeout:g} s (frozen, stopped or cut off; "
                f"{COLLECTIVE_TIMEOUT_VARIABLE} sets how many seconds a step waits)")
    if any(words in text for words in ("connection closed", "connection reset", "broken pipe")):
        return "another process of this run ended"
    return None


@contextlib.contextmanager
def process_group(device: torch.device):
    """Yields (Group, device) for torchrun's environment (WORLD_SIZE, RANK, LOCAL_RANK), with the process
    group set up for it: NCCL on GPUs, one per process (cuda:LOCAL_RANK), gloo on CPU."""
    world_size = launched_world_size()
    if world_size <= 1:
        yield Group(), device
        return
    rank, local_rank = int(os.environ["RANK"]), int(os.environ.get("LOCAL_RANK", "0"))
    if device.type == "cuda":
        if local_rank >= torch.cuda.device_count():
            raise TrainingError(f"process {local_rank} on this machine has no GPU of its own "
                                f"({torch.cuda.device_count()} visible); start at most that many per machine")
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
    backend = "nccl" if device.type == "cuda" else "gloo"
    try:
        dist.init_process_group(backend, timeout=SETUP_TIMEOUT, device_id=device if device.type == "cuda" else None)
    except ValueError as e:  # WORLD_SIZE set by hand, without torchrun's rendezvous (MASTER_ADDR, MASTER_PORT)
        raise TrainingError(f"WORLD_SIZE={world_size} asks for several processes, but they cannot meet: "
                            f"{str(e).split(': ')[-1]}; start the run with torchrun") from None
    try:
        group = Group(rank, local_rank, world_size, backend)
        try:
            timeout = collective_timeout()
        except TrainingError as e:  # the same on every rank (torchrun gives them one environment): rank 0 says it
            group.fail_together(str(e))
        steps = dist.new_group(timeout=datetime.timedelta(seconds=timeout))
        yield Group(rank, local_rank, world_size, backend, steps, timeout), device
    finally:
        dist.destroy_process_group()
