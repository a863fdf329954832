"""Model families: the recipe's unit. A family trains a model of one seed on the corpus within a budget, loads its
file as a teacher, and says how healthy the run was; the recipe trains every family of RecipeConfig.families × --seeds side
by side and lets their teachers vote. FAMILIES names them, as supar registers its parsers: a new family is a
module with a `ModelFamily` subclass and one line in that table (CONTRIBUTING.md, "A new teacher family").
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from onlstm_cli.config import ENDING_CHARS
from onlstm_cli.training.run.clock import Budget


@dataclass
class TeacherJob:
    """One teacher of the recipe, as its family trains it (in the recipe's process or one of its own)."""
    family: "ModelFamily"
    seed: int
    number: int                      # 1.. over the recipe's teachers, for the log
    corpus: Path
    valid: Path
    out: Path                        # its model file
    budget: Budget                   # its own seconds (over its resumed runs), and its round's end
    resume: Path | None = None       # its checkpoint, where an earlier run left one
    threads: int | None = None       # where it shares the cores with others
    total: int = 1                   # the recipe's teachers, for the log
    focus: tuple = ()                # the files whose votes focus it (ModelFamily.focuses_on), set as it starts

    @property
    def label(self) -> str:
        """How its log lines are marked: [seed 1111] for an ON-LSTM, [pcfg seed 1111] for another family's."""
        return self.family.label(self.seed)


@dataclass
class TeacherRun:
    """How a family's run ended: what the recipe records of it."""
    interrupted: bool = False
    stop_signal: int = 0
    health: float | None = None      # the failed-run filter's figure (lower is healthier), None: unknown
    epochs: float = 0.0
    seconds: float = 0.0
    stopped_early: int = 0           # where its health stopped it: the epochs it had been no better for


class ModelFamily:
    """A kind of model that teaches in the recipe. `name` is how RecipeConfig.families and the record name it, `kind` what its
    files record (modelfile.MODEL_KINDS), `health` what its failed-run figure is, in words. Made from the recipe's
    run (`RecipeRun`: its model, training and self-training options); it must pickle, as a job's part sent to the
    process that trains it."""
    name = ""
    kind = ""
    health = "validation loss"
    health_key = "health"  # the record's key for the figure
    ensembles = False      # whether its voting models can be one ensemble file (the student check's consensus parser)
    focuses_on = None      # a family whose models, where the recipe has them, it trains after and is focused by
    trains_after = None    # a family whose models, where the recipe has them, it trains after (focused or not)

    def __init__(self, run):
        pass

    @classmethod
    def model_words(cls) -> str:
        """What the log calls one of its models."""
        return f"{cls.name} model"

    @classmethod
    def label(cls, seed: int) -> str:
        """What marks the log lines of its model of `seed`."""
        return f"{cls.name} seed {seed}"

    @classmethod
    def path(cls, out: Path, seed: int) -> Path:
        """Where the recipe writes its model of `seed`: beside --out, named for what it is."""
        return out.with_name(f"{out.stem}.{cls.name}-seed{seed}.onlstm")

    @classmethod
    def check(cls, model_config: dict, train_config, lm_options: dict) -> None:
        """The recipe's options as this family reads them, each bad one a one-line TrainingError, before anything
        is written."""

    def train(self, job: TeacherJob, reporter) -> TeacherRun:
        raise NotImplementedError

    def load(self, path: Path, self_train):
        """Its model file at `path` as a Teacher (induction/teachers.py), voting as `self_train` says."""
        raise NotImplementedError

    def record(self, run: TeacherRun) -> dict:
        """What the recipe's record keeps of a finished run beside its family, seed and file: its health."""
        from onlstm_cli.training.recipe.record import rounded
        return {self.health_key: rounded(run.health)}


class OnlstmFamily(ModelFamily):
    """ON-LSTM language models, trained as a plain `onlstm train` would (the same options, its own seed); their
    health is their best validation perplexity, and each votes with its parse layer and the layers next to it."""
    name = kind = "onlstm"
    health = "validation perplexity"
    health_key = "valid_ppl"  # as records written before families named it
    ensembles = True

    @classmethod
    def model_words(cls) -> str:
        return "language model"

    @classmethod
    def label(cls, seed: int) -> str:
        return f"seed {seed}"

    def __init__(self, run):
        self.model_config, self.train_config, self.lm_options = dict(run.model_config), run.train_config, run.lm_options

    @classmethod
    def check(cls, model_config: dict, train_config, lm_options: dict) -> None:
        from onlstm_cli.config import DEFAULT_MAX_VOCAB, DEFAULT_MIN_FREQ
        from onlstm_cli.training.lm.train import check_options
        check_options(model_config, train_config, lm_options.get("max_vocab", DEFAULT_MAX_VOCAB),
                      lm_options.get("min_freq", DEFAULT_MIN_FREQ), lm_options.get("split"))

    @classmethod
    def path(cls, out: Path, seed: int) -> Path:
        from onlstm_cli.training.recipe.files import lm_path
        return lm_path(out, seed)

    def train(self, job: TeacherJob, reporter) -> TeacherRun:
        from onlstm_cli.training.lm.train import train_model
        config = replace(self.train_config, seed=job.seed, threads=job.threads or self.train_config.threads)
        result = train_model(job.corpus, job.out, dict(self.model_config), config, valid=job.valid, resume=job.resume,
                             reporter=reporter, budget=job.budget, **self.lm_options)
        return TeacherRun(result.interrupted, result.stop_signal, result.best_valid_ppl, result.epochs_done,
                          result.seconds)

    def load(self, path: Path, self_train):
        from onlstm_cli.induction.teachers import OnlstmTeacher
        from onlstm_cli.modelfile import load_model
        return OnlstmTeacher(load_model(path), self_train.teacher_layers, self_train.extra_layers)


class PcfgFamily(ModelFamily):
    """Neural PCFGs (pcfg/model.py), trained on the recipe's text as `train --family pcfg` would (its own seed and
    threads, the recipe's --epochs and --device; the PCFG's own sizes, batch and learning rate); their health is
    their best validation perplexity (per word, by the inside pass), and each votes with its MBR trees. Beside
    ON-LSTMs (RecipeConfig.focus_pcfgs) they train after them, focused on their votes (training/student/focus.py)."""
    name = kind = "pcfg"
    health = "validation perplexity"
    health_key = "valid_ppl"
    focuses_on = trains_after = "onlstm"  # parse-focusing needs a language model to read the text as its teachers do
    reads: dict = {}  # PcfgConfig fields its PCFGs set beyond the defaults (what they read words by)

    @classmethod
    def model_words(cls) -> str:
        return "PCFG"

    def __init__(self, run):
        self.train_config, self.lm_options, self.votes = run.train_config, run.lm_options, run.self_train

    @classmethod
    def check(cls, model_config: dict, train_config, lm_options: dict) -> None:
        from onlstm_cli.config import PcfgTrainConfig
        PcfgTrainConfig(seed=train_config.seed, threads=train_config.threads).check()

    def train(self, job: TeacherJob, reporter) -> TeacherRun:
        from onlstm_cli.config import PcfgTrainConfig
        from onlstm_cli.training.pcfg.train import train_pcfg
        reading = {k: self.lm_options[k] for k in ("tokenizer", "lang", "pretokenized", "keep_punct", "max_vocab",
                                                   "min_freq") if k in self.lm_options}
        config = PcfgTrainConfig(epochs=self.train_config.epochs, seed=job.seed,
                                 threads=job.threads or self.train_config.threads,
                                 device=self.train_config.device, checkpoint_every=self.train_config.checkpoint_every)
        if job.focus:
            from onlstm_cli.modelfile import load_model
            from onlstm_cli.training.student.focus import train_focused_pcfg
            teachers = [load_model(path) for path in job.focus]
            result = train_focused_pcfg(job.corpus, job.out, teachers, job.valid, self.votes, config,
                                        job.budget, job.resume, reporter, **reading)
        else:
            result = train_pcfg(job.corpus, job.out, dict(self.reads) or None, config, valid=job.valid,
                                resume=job.resume, reporter=reporter, budget=job.budget, **reading)
        return TeacherRun(result.interrupted, result.stop_signal, result.best_valid_ppl, result.epochs_done,
                          result.seconds, result.stopped_early)

    def load(self, path: Path, self_train):
        from onlstm_cli.induction.teachers import PcfgTeacher
        from onlstm_cli.modelfile import load_model
        return PcfgTeacher(load_model(path))


class PcfgEndingsFamily(PcfgFamily):
    """Unfocused PCFGs that read a word seen once by its ending (`train --family pcfg --units endings`): the
    recipe's more PCFGs on a small text (RecipeConfig.more_pcfgs), where a PCFG focused by nothing else reading
    whole words falls to right-branching trees and one reading endings does not (docs/experiments/pcfg.md). They
    wait for the language models only to leave them the cores."""
    name = "pcfg-endings"
    focuses_on = None
    reads = {"endings": ENDING_CHARS}

    @classmethod
    def model_words(cls) -> str:
        return "PCFG reading endings"


# name → family: what RecipeConfig.families offers and the recipe's record names
FAMILIES: dict[str, type[ModelFamily]] = {"onlstm": OnlstmFamily, "pcfg": PcfgFamily,
                                          "pcfg-endings": PcfgEndingsFamily}
