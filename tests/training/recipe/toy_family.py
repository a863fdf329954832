"""A whole model family in one module, as CONTRIBUTING.md's "A new teacher family" asks: its "model" is a random-
branching grammar with a seed (a tree's split points drawn from the seed and the sentence), trained in steps with a
checkpoint after each, so that a signal stops it at a checkpoint and a rerun goes on from there. It is registered
by one table line, `FAMILIES["toy"] = ToyFamily` (test_families.py)."""
from __future__ import annotations

import json
import os
import random
import signal

from onlstm_cli.induction.teachers import TeacherBase
from onlstm_cli.modelfile import atomic_file
from onlstm_cli.signals import StopSignals
from onlstm_cli.text.tokenizers import Tokenizer
from onlstm_cli.training.families import ModelFamily, TeacherRun
from onlstm_cli.training.run.files import checkpoint_path
from onlstm_cli.training.run.clock import Clock
from onlstm_cli.trees import build_tree, tree_spans


class ToyTeacher(TeacherBase):
    def __init__(self, path, seed: int, tokenizer: Tokenizer):
        self.name, self.seed, self.tokenizer = str(path), seed, tokenizer

    def voter_trees(self, sentences, batch_size: int = 64, model_tokens: bool = True):
        trees = []
        for words in sentences:
            rng = random.Random(f"{self.seed}:{' '.join(words)}")
            distances = [rng.random() for _ in words]
            trees.append(tree_spans(build_tree(distances, list(range(len(words))), "symmetric")))
        return [trees]


class ToyFamily(ModelFamily):
    name = kind = "toy"
    health = "toy loss"
    steps = 6
    interrupt_at: int | None = None  # a step at which its first run sends itself SIGTERM (a test's)
    stops_early: int = 0             # the epochs without a gain it says stopped it (a test's), 0: none

    def __init__(self, run):
        self.tokenizer = run.lm_options.get("tokenizer") or Tokenizer()

    def train(self, job, reporter) -> TeacherRun:
        ckpt = checkpoint_path(job.out)
        step = json.loads(ckpt.read_text())["step"] if job.resume else 0
        clock = Clock(job.budget)
        with StopSignals() as signals:
            while step < self.steps and not clock.time_up():
                if signals.caught:
                    return TeacherRun(True, signals.caught, None, step / self.steps, clock.seconds())
                step += 1
                with atomic_file(ckpt, "w") as f:
                    json.dump({"step": step}, f)
                if step == self.interrupt_at and job.resume is None:
                    os.kill(os.getpid(), signal.SIGTERM)
        with atomic_file(job.out, "w") as f:
            json.dump({"kind": self.kind, "seed": job.seed, "tokenizer": self.tokenizer.to_dict()}, f)
        return TeacherRun(health=1.0 + job.seed % 2 / 10, epochs=step / self.steps, seconds=clock.seconds(),
                          stopped_early=self.stops_early)

    def load(self, path, self_train):
        data = json.loads(path.read_text())
        return ToyTeacher(path, data["seed"], Tokenizer(**data["tokenizer"]))
