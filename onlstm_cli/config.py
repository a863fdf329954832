"""The configuration dataclasses, torch-free: the CLI reads its options' defaults from here (one place
for each default) without importing torch, so `onlstm --help` stays fast."""
from __future__ import annotations

from dataclasses import asdict, dataclass

from onlstm_cli.errors import TrainingError

DEFAULT_MAX_VOCAB = 10000  # words kept in the vocabulary, <unk> and <eos> included
DEFAULT_MIN_FREQ = 1       # words seen fewer times become <unk>
DEFAULT_UNITS = "words"    # what a model reads words by: words, ngrams, or auto (text/units.py's rule); words by
                           # measurement: n-grams did not lift Turkish trees (docs/experiments/units.md)
DEFAULT_UNIT_BUCKETS = 8192  # rows of hashed character n-grams in an n-gram model
LM_UNIT_CHOICES = ("auto", "words", "ngrams")  # what a language model reads words by
PCFG_UNIT_CHOICES = ("words", "endings")       # what a PCFG reads words by (PcfgConfig.endings)
UNIT_CHOICES = LM_UNIT_CHOICES + ("endings",)  # --units, for either
ENDING_CHARS = 3           # a PCFG's --units endings: a rare word's last 3 characters (docs/experiments/pcfg.md)
MAX_ENDING_CHARS = 8       # the longest ending a PCFG file may declare
STUDENT_UNIT_CHOICES = ("auto", "host", "ngrams")  # what a span parser reads words by (SelfTrainConfig.units)
LR_SCHEDULES = ("constant", "cosine", "plateau")
# the master input gate: the paper's 1 − cumax, or the seed's reverse cumsum (lm/cell.py, fast/)
MASTER_INPUT_RULES = ("paper", "symmetric")
# how an ensemble combines its models' distances per sentence (induction/distances.py)
COMBINE_RULES = ("mean", "zscore", "rank")
LEAN_FROM = ("trees", "word-order")  # where --right-branching auto reads a direction (SelfTrainConfig.lean_from)
TEACHER_WEIGHTS = ("equal", "agreement")  # SelfTrainConfig.teacher_weights


@dataclass
class ModelConfig:
    """Hyperparameters of the language model (the paper's names in comments)."""
    vocab_size: int
    emb_size: int = 200          # emsize (paper: 400)
    hidden_size: int = 400       # nhid (paper: 1150)
    n_layers: int = 3            # nlayers
    chunk_size: int = 10         # chunk_size
    dropout: float = 0.45        # dropout: output of the last layer
    dropout_h: float = 0.3       # dropouth: between layers
    dropout_i: float = 0.5       # dropouti: on the embeddings
    dropout_e: float = 0.1       # dropoute: whole word types
    weight_drop: float = 0.45    # wdrop: DropConnect on hidden-to-hidden weights
    master_input: str = "paper"  # "paper" (1 − cumax) or "symmetric" (the seed's variant)
    reverse: bool = False        # reads each sentence right to left (its distances mark boundaries after words)
    word_rows: int = 0           # words with their own row and output (the most frequent); 0 = all vocab_size
    unit_buckets: int = 0        # rows of hashed character n-grams every word is also read by (text/units.py); 0 = none

    @property
    def output_size(self) -> int:
        """The words the model predicts and has a row for; a word beyond them is read by its n-grams alone."""
        return self.word_rows or self.vocab_size

    def layer_sizes(self) -> list[tuple[int, int]]:
        """(input, hidden) per layer; the last layer outputs emb_size so the embeddings can be tied."""
        sizes = []
        for layer in range(self.n_layers):
            inp = self.emb_size if layer == 0 else self.hidden_size
            out = self.emb_size if layer == self.n_layers - 1 else self.hidden_size
            sizes.append((inp, out))
        return sizes

    def to_dict(self) -> dict:
        return asdict(self)

    def check(self) -> "ModelConfig":
        """Its sizes and dropouts (its vocabulary's aside), each bad one a one-line TrainingError naming the
        `train` option."""
        for name, option in (("n_layers", "layers"), ("emb_size", "emb-size"), ("hidden_size", "hidden-size"),
                             ("chunk_size", "chunk-size")):
            if getattr(self, name) < 1:
                raise TrainingError(f"--{option} must be at least 1")
        for name in ("dropout", "dropout_h", "dropout_i", "dropout_e", "weight_drop"):
            if not 0 <= getattr(self, name) < 1:
                raise TrainingError(f"--{name.replace('_', '-')} must be in [0, 1)")
        if self.emb_size % self.chunk_size or self.hidden_size % self.chunk_size:
            raise TrainingError(f"--emb-size and --hidden-size must be multiples of --chunk-size ({self.chunk_size})")
        return self


@dataclass
class TrainConfig:
    epochs: int = 100
    time_budget: float | None = 3600.0  # seconds; None = no limit
    batch_size: int = 20                # per process; the global batch is world_size × batch_size
    bptt: int = 70
    optimizer: str = "sgd"              # SGD lr 30; "ntasgd": SGD, then averaged SGD once validation stalls (the
                                        # paper's optimiser); "adam" wants lr ~0.002
    nonmono: int = 5                    # NT-ASGD averages once validation is worse than the best of all but the last 5
    lr_schedule: str = "constant"       # "cosine": the rate falls along half a cosine from --lr to 0 over the run
                                        # (its time budget or its epochs, whichever ends it first), as nanoGPT's;
                                        # "plateau": divided by anneal_factor after anneal_after epochs in a row
                                        # without a better validation perplexity, counted afresh after each division
                                        # (word_language_model's annealing, with NT-ASGD's patience)
    anneal_after: int = 5
    anneal_factor: float = 4.0          # word_language_model's
    max_bad_steps: int = 5              # steps in a row with a non-finite loss or gradient before training stops
    average_steps: int = 0              # >0: validation and the model file get the moving average of the weights
                                        # over about this many steps (steps.WeightAverage); 0: the weights as trained
    lr: float = 30.0
    weight_decay: float = 1.2e-6
    clip: float = 0.25
    seed: int = 1111
    device: str = "auto"
    threads: int | None = None
    eval_batch_size: int = 10
    checkpoint_every: float = 300.0     # seconds between mid-epoch checkpoints
    loss_log: str | None = None         # a file that gets a line per step: epoch, position, loss

    def check(self) -> "TrainConfig":
        """The run's options, each bad one a one-line TrainingError naming the `train` option."""
        for name in ("batch_size", "bptt", "epochs"):
            if getattr(self, name) < 1:
                raise TrainingError(f"--{name.replace('_', '-')} must be at least 1")
        if self.lr <= 0:
            raise TrainingError("--lr must be positive")
        for name in ("clip", "weight_decay", "average_steps"):
            if getattr(self, name) < 0:
                raise TrainingError(f"--{name.replace('_', '-')} must be at least 0")
        if self.optimizer not in ("sgd", "ntasgd", "adam"):
            raise TrainingError(f"--optimizer {self.optimizer!r}: expected sgd, ntasgd or adam")
        self.check_threads(self.threads)
        if self.checkpoint_every is None:
            raise TrainingError("--checkpoint-every needs a duration, such as 300, 5m or 1h")
        if self.device not in ("auto", "cpu", "cuda"):
            raise TrainingError(f"--device {self.device!r}: expected auto, cpu or cuda")
        return self

    @staticmethod
    def check_threads(threads: int | None) -> None:
        """torch's CPU threads as given (None: all cores); a span parser's run (--teacher) checks its own here."""
        if threads is not None and threads < 1:
            raise TrainingError("--threads must be at least 1")


AUTO = "auto"  # a right-branching voter weighed by the teachers' agreement with it


def voter_weight(value) -> float | str:
    """A right-branching voter's weight as given (a number or "auto"), checked: ValueError says why not."""
    if isinstance(value, str) and value.strip().lower() == AUTO:
        return AUTO
    try:
        weight = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"--right-branching takes a weight (0 or more) or auto, not {value!r}") from None
    if not weight >= 0 or weight == float("inf"):
        raise ValueError(f"--right-branching must be a finite weight of at least 0 or auto, not {value!r}")
    return weight


@dataclass
class SpanParserConfig:
    """The self-trained span parser (span_parser.py): a BiLSTM over words, an MLP over spans."""
    vocab_size: int
    emb_size: int = 200      # the teacher's embeddings start it when their size matches
    hidden_size: int = 200   # per direction
    n_layers: int = 2
    mlp_size: int = 250
    dropout: float = 0.3
    word_rows: int = 0       # as ModelConfig's: words with their own row; 0 = all vocab_size
    unit_buckets: int = 0    # as ModelConfig's: hashed character n-gram rows; 0 = none

    @property
    def output_size(self) -> int:
        return self.word_rows or self.vocab_size

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class PcfgConfig:
    """The neural PCFG (pcfg/model.py): its symbols and the rank of its binary rules, sized for a 2-core CPU by the rule
    of docs/experiments/pcfg.md. Its rules are low-rank (TN-PCFG, Yang, Zhao and Tu 2021): the inside pass costs
    O(n³·rank), not O(n³·symbols³)."""
    vocab_size: int
    nonterminals: int = 30   # N-PCFG's (Kim et al. 2019)
    preterminals: int = 60   # N-PCFG's
    rank: int = 64           # of the binary rules' decomposition
    symbol_size: int = 128   # the symbols' and ranks' embeddings, and the MLPs' width
    endings: int = 0         # a word seen once is read by its last `endings` characters (text/vocab.py); 0: words

    def to_dict(self) -> dict:
        return asdict(self)

    def read_by(self) -> str:
        """How it reads its words where not whole, as the training's start line and `info` say it."""
        return f", words seen once read by their last {self.endings} characters" if self.endings else ""

    def check(self) -> "PcfgConfig":
        for name in ("nonterminals", "preterminals", "rank", "symbol_size"):
            if getattr(self, name) < 1:
                raise TrainingError(f"--{name.replace('_', '-')} must be at least 1")
        if not 0 <= self.endings <= MAX_ENDING_CHARS:
            raise TrainingError(f"a PCFG reads a rare word by its last 1 to {MAX_ENDING_CHARS} characters, "
                                f"not {self.endings}")
        return self


@dataclass
class PcfgTrainConfig:
    """Training a neural PCFG (training/pcfg/): the sentences' likelihood by the inside pass, Adam, batches of
    sentences of about equal length."""
    epochs: int = 100
    time_budget: float | None = 3600.0  # seconds; None = no limit
    batch_size: int = 4                 # sentences per step, Kim et al.'s: four times 16's steps an epoch, at fewer
                                        # words a second, gave far better trees (docs/experiments/pcfg.md, run W)
    lr: float = 2e-3                    # Adam, betas (0.75, 0.999) as Kim et al. (2019)
    clip: float = 3.0
    max_len: int = 40                   # longer training sentences are left out (a chart grows as n²), counted
    patience: int = 6                   # epochs in a row without a better validation perplexity before it stops
                                        # (0: never): a small text's grammar is best after its first epochs, and
                                        # no recorded run gained after more than 5 such epochs (pcfg.md)
    seed: int = 1111
    device: str = "auto"
    threads: int | None = None
    checkpoint_every: float = 300.0     # seconds between mid-epoch checkpoints
    max_bad_steps: int = 5              # steps in a row with a non-finite loss or gradient before training stops

    def check(self) -> "PcfgTrainConfig":
        for name in ("batch_size", "epochs"):
            if getattr(self, name) < 1:
                raise TrainingError(f"--{name.replace('_', '-')} must be at least 1")
        if self.patience < 0:
            raise TrainingError("--patience must be at least 0 (0: never stop early)")
        if self.max_len < 2:
            raise TrainingError("--max-len must be at least 2 (a tree needs two words)")
        if not self.lr > 0:
            raise TrainingError("--lr must be positive")
        if self.clip < 0:
            raise TrainingError("--clip must be at least 0")
        TrainConfig.check_threads(self.threads)
        if self.checkpoint_every is None:
            raise TrainingError("--checkpoint-every needs a duration, such as 300, 5m or 1h")
        if self.device not in ("auto", "cpu", "cuda"):
            raise TrainingError(f"--device {self.device!r}: expected auto, cpu or cuda")
        return self


@dataclass
class SelfTrainConfig:
    """Training the span parser on a teacher model's trees (student/train.py)."""
    epochs: int = 8
    batch_size: int = 32          # sentences per step
    lr: float = 1e-3              # Adam
    clip: float = 5.0
    max_len: int = 100            # longer training sentences are left out (a span tensor grows as n²)
    patience: int = 2             # stop after this many epochs without a better validation loss
    seed: int = 1111
    checkpoint_every: float = 300.0  # seconds between mid-epoch checkpoints
    max_bad_steps: int = 5        # steps in a row with a non-finite loss or gradient before training stops
    right_branching: float | str = 0.0  # the weight of a right-branching tree voting beside the teachers (each
                                        # weighs 1), or AUTO: a right- or left-branching tree, the way the
                                        # teachers' trees lean (votes.auto_weight)
    span_parser_teachers: bool = False  # a second round: self-trained teachers teach with their span parsers' trees
    teacher_layers: tuple[int, ...] = ()  # the language-model layers (1-based) whose trees each teacher votes with,
                                          # each a voter of its own; (): as extra_layers says
    extra_layers: int = 0  # without teacher_layers: each teacher votes with its parse layer and this many more,
                           # above it (below where it has too few above)
    units: str = "auto"  # host: words as its host language model reads them; ngrams: also by their character n-grams,
                         # so that no word is unknown to the parser shipped; auto: ngrams where the training text has
                         # many rare words (text/units.py's rule), else host (docs/experiments/turkish.md)
    targets: str = "shares"  # shares: each span's share of the votes; tree: the votes' consensus tree, its spans 1,
                             # every other span 0 (the literature's students learn the averaged tree, docs/experiments/levers.md)
    max_branching_agreement: float = 90.0  # a teacher whose trees of the validation text agree more than this
                                           # (sentence F1, %) with right- or left-branching trees does not vote
                                           # (left_out.without_collapsed); 100: every teacher votes
    min_relative_agreement: float = 0.0  # a teacher whose mean agreement with the others' trees of the validation
                                         # text is below this share of the teachers' median does not vote
                                         # (left_out.without_far_apart); 0: every teacher votes
    lean_from: str = "word-order"  # where AUTO reads the direction: word-order, the part of the teachers' trees'
                                   # lean they lose when each sentence's words are shuffled (direction.WordOrder), none
                                   # where it has no sign; trees, the way their trees lean (weak Turkish teachers
                                   # chose the wrong side that way: docs/experiments/small-corpora.md)
    teacher_weights: str = "equal"  # equal: each teacher's trees weigh 1; agreement: each its agreement with the
                                    # others above that of random trees (votes.agreement_weights)

    def check(self) -> "SelfTrainConfig":
        """The span parser's training options, each bad one a one-line TrainingError naming the `train` option;
        the branching voter's weight as a number or AUTO."""
        try:
            self.right_branching = voter_weight(self.right_branching)
        except ValueError as e:
            raise TrainingError(str(e)) from None
        if self.teacher_layers and self.span_parser_teachers:
            raise TrainingError("--teacher-layers picks language-model layers; --second-round teaches with span parsers")
        for name in ("epochs", "batch_size", "lr"):
            if getattr(self, name) <= 0:
                raise TrainingError(f"--{name.replace('_', '-')} must be positive")
        if not 0 <= self.max_branching_agreement <= 100:
            raise TrainingError("--max-branching-agreement must be between 0 and 100")
        if not 0 <= self.min_relative_agreement <= 1:
            raise TrainingError("--min-relative-agreement must be between 0 and 1")
        if self.lean_from not in LEAN_FROM:
            raise TrainingError(f"--lean-from must be one of {', '.join(LEAN_FROM)}")
        if self.teacher_weights not in TEACHER_WEIGHTS:
            raise TrainingError(f"--teacher-weights must be one of {', '.join(TEACHER_WEIGHTS)}")
        return self


@dataclass
class RecipeConfig:
    """`train --seeds K` (recipe/runner.py): K models of each family in `families` (K ON-LSTM language models by
    default), then a span parser on the votes of their trees."""
    seeds: int = 1                 # 1: a plain language model, no recipe
    lm_share: float = 0.75         # of --time-budget, split evenly between the language models; the rest: the
                                   # teachers' parse and the span parser
    right_branching: float | str = "auto"  # the right-branching voter's weight in the recipe, AUTO: a branching
                                           # voter chosen from the teachers' trees, either way, no gold tree read
                                           # (docs/experiments/portuguese.md)
    extra_layers: int = 1          # each language model votes with its parse layer and this many more, above it
                                   # (below where it has too few above): layer 3 beside layer 2 made better students,
                                   # layer 2 beside layer 3 a better Chinese consensus (docs/experiments/levers.md, chinese.md)
    max_ppl_ratio: float = 1.2     # a language model whose validation perplexity is more than this × the K models'
                                   # median does not vote: a failed run, not a weak seed (far beyond the spread of
                                   # healthy seeds' perplexities, docs/experiments/levers.md); 0: every model votes
    min_lines: int = 20            # a smaller corpus cannot give K models and a validation text
    side_by_side: int | None = None  # language models trained at once, one process each; None: side_by_side.slots
                                     # (one a thread below the cores, else all K up to 2 a core); 1 on a GPU
    progress_every: float = 300.0  # seconds between the recipe's own lines while language models train side by
                                   # side (which stage, which seeds, the time left): their lines say only their own
    warn_branching_above: float = 90.0  # a finished recipe warns when its span parser's trees of the validation text
                                        # agree more than this (sentence F1, %) with right- or left-branching trees:
                                        # such a student adds nothing to the rule, which needs no training
    keep_intermediate: bool = False  # a finished recipe keeps its checkpoints, token files and held-out split (only
                                     # a rerun with a larger --time-budget reads them); False: they are removed
    families: tuple | str = AUTO   # the model families whose models teach, each trained with --seeds seeds
                                   # (training/families.py's FAMILIES: name → family); AUTO: ON-LSTMs and PCFGs
                                   # where the text is small for its budget, else ON-LSTMs (recipe/families_auto.py)
    pcfg_below_words_per_hour: float = 200_000.0  # AUTO's line: PCFGs join below this many words of training text
                                                  # an hour of --time-budget (docs/experiments/pcfg.md)
    span_parser_until_budget: bool = True  # with a time budget, the span parser trains until the recipe's time is
                                           # spent (no epoch cap, no patience), its epoch of lowest validation loss
                                           # shipped: the time is the user's to spend (docs/experiments/recipe-budget.md)
    focus_pcfgs: bool = True       # with ON-LSTMs among the families, the PCFGs train after them, each on the likelihood
                                   # of the trees the ON-LSTMs' votes propose (parse-focusing): unfocused, a PCFG
                                   # falls to a branching rule by seed (docs/experiments/pcfg.md)
    more_pcfgs: bool = False       # with focused PCFGs: while stage 1 has time left once they end (on a small text
                                   # they stop early), K unfocused PCFGs reading rare words by their endings, then K more
                                   # focused ones, train in it, in the rounds that fit. Off: on the one-hour Turkish
                                   # recipe the student gained less than its rule asked (docs/experiments/pcfg.md)
    second_round: bool = True      # with focused PCFGs: the span parser gets two thirds of the time stage 1 leaves and is
                                   # kept beside --out (OUT.round1.onlstm); then a second one trains on the votes of its
                                   # trees and the PCFGs' in the rest, written to --out: above the first on the one-hour
                                   # Turkish and Portuguese recipes' files in every protocol (docs/experiments/pcfg.md)

    def check(self) -> "RecipeConfig":
        """The recipe's options, each bad one a one-line TrainingError; the branching voter's weight as a number
        or AUTO."""
        if self.seeds < 1:
            raise TrainingError("--seeds must be at least 1")
        if self.side_by_side is not None and self.side_by_side < 1:
            raise TrainingError("--side-by-side must be at least 1")
        if not (self.max_ppl_ratio == 0 or self.max_ppl_ratio >= 1):  # below 1 would leave out the median model
            raise TrainingError(f"--max-ppl-ratio must be 0 (every model votes) or at least 1, not {self.max_ppl_ratio:g}")
        if self.families in (AUTO, (AUTO,)):
            self.families = AUTO
        elif isinstance(self.families, str):
            raise TrainingError(f"model families {self.families}: name them (onlstm,pcfg) or give {AUTO}")
        elif AUTO in self.families:
            raise TrainingError(f"model families {', '.join(self.families)}: {AUTO} chooses them, alone")
        if self.pcfg_below_words_per_hour <= 0:
            raise TrainingError("the words an hour below which PCFGs join must be positive")
        if self.families != AUTO and (not self.families or len(set(self.families)) != len(self.families)):
            raise TrainingError(f"model families {', '.join(self.families) or '(none)'}: name each family once")
        try:
            self.right_branching = voter_weight(self.right_branching)
        except ValueError as e:
            raise TrainingError(str(e)) from None
        return self



@dataclass
class EnsembleConfig:
    """`onlstm ensemble`: language models of the same vocabulary as one file whose distances are combined."""
    combine: str = "mean"              # mean of the distances as they are, or of standard scores / ranks per sentence
    weights: tuple[float, ...] = ()    # one per model, the first included; () = equal
    parse_layer: int | None = None     # None: the first model's
    split: str | None = None           # None: the first model's
