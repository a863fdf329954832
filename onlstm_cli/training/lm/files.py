"""What a language model's run writes (rank 0 alone): the model file and the checkpoint, each atomically, through
the run layer's Saves (run/files.py: a failed save is said and tried again at the next)."""
from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

import torch

from onlstm_cli import __version__
from onlstm_cli.training.run.files import checkpoint_path
from onlstm_cli.training.lm.setup import Plan
from onlstm_cli.modelfile import CHECKPOINT_FORMAT, atomic_save, model_archive, save_model
from onlstm_cli.training.run.files import Saves


class RunFiles:
    def __init__(self, out: Path, model, plan: Plan, data_meta: dict, train_meta: dict, reporter,
                 seconds: Callable[[], float]):
        self.out, self.model, self.plan, self.reporter, self.seconds = out, model, plan, reporter, seconds
        self.data_meta, self.train_meta = data_meta, train_meta
        self.saving = Saves(reporter.message)
        self.last_checkpoint = time.time()  # when the latest checkpoint was tried

    def meta(self, epochs_done: float, valid_ppl: float | None) -> dict:
        return {"data": self.data_meta, "train": self.train_meta, "epochs": round(epochs_done, 3),
                "valid_ppl": valid_ppl, "seconds": round(self.seconds(), 1), "onlstm_version": __version__,
                "history": self.plan.state.history, "created": time.strftime("%Y-%m-%d %H:%M:%S")}

    def save_model(self, epochs_done: float, valid_ppl: float | None) -> bool:
        """Write the model file; False when that failed (reported, training goes on)."""
        p = self.plan
        return self.saving(lambda: save_model(self.out, self.model, p.vocab, p.tokenizer, p.lang, p.parse_layer,
                                              self.meta(epochs_done, valid_ppl), split=p.split))

    def save_checkpoint(self, optimizer: torch.optim.Optimizer, average=None) -> bool:
        """Weights (float32), optimizer, the moving average of the weights if the run keeps one, and where the
        run stands, for --resume; False when that failed."""
        s, p = self.plan.state, self.plan
        self.last_checkpoint = time.time()  # after a failure too: the next try is one interval later

        def write():
            archive = model_archive(self.model, p.vocab, p.tokenizer, p.lang, p.parse_layer,
                                    self.meta(s.epoch - 1, s.best), torch.float32, split=p.split)
            archive.update(format=CHECKPOINT_FORMAT, optimizer=optimizer.state_dict(), epoch=s.epoch,
                           position=s.position, best_valid_ppl=s.best, history=s.history, data=self.data_meta,
                           seconds=self.seconds(), averaging=s.averaging)
            if average is not None:  # steps.WeightAverage
                archive["weight_average"] = average.state_dict()
            atomic_save(archive, checkpoint_path(self.out))
        return self.saving(write)

    @property
    def unsaved(self) -> str | None:
        return self.saving.unsaved
