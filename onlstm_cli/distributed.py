"""Several processes training one model (started by torchrun), and the few collectives training needs.

A run that torchrun did not start, or started as one process, is the one-process case of the same code:
there every collective below returns its input.
"""
from __future__ import annotations

import contextlib
import datetime
import os
from dataclasses import dataclass

import torch
import torch.distributed as dist

from .corpus import TrainingError

# While rank 0 counts the corpus and each machine writes its token file, the other processes wait in a
# collective; torch's default timeout (10 minutes with NCCL) would end a run on a large corpus there.
SETUP_TIMEOUT = datetime.timedelta(hours=6)


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
        """Element-wise sums over the ranks."""
        if self.world_size == 1:
            return values
        tensor = torch.tensor(values, dtype=torch.float64, device=device)
        dist.all_reduce(tensor)
        return tensor.tolist()


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
    dist.init_process_group(backend, timeout=SETUP_TIMEOUT, device_id=device if device.type == "cuda" else None)
    try:
        yield Group(rank, local_rank, world_size, backend), device
    finally:
        dist.destroy_process_group()
