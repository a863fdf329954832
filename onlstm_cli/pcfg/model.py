"""A neural PCFG with low-rank binary rules (TN-PCFG: Yang, Zhao and Tu 2021; N-PCFG: Kim, Dyer and Rush 2019).

Symbols are nonterminals A (NT of them; the root's children and every span of two words or more) and preterminals
P (PT; each emits one word). Every rule probability comes from the symbols' embeddings through small MLPs:

    p(S → A)        root:      softmax_A  mlp_root(s) · e_A
    p(P → w)        emission:  softmax_w  mlp_word(e_P) · x_w
    p(A → B C)      binary:    Σ_r U[A, r] V[B, r] W[C, r]

The binary rules are never built as an NT × (NT+PT)² tensor: U (NT × rank) is normalized over ranks, V and W
((NT+PT) × rank) over symbols, so each A's rules sum to one. The inside pass then needs only rank-sized terms of
each span (`rank_terms`):

    leaves          l_i(r) = Σ_P V[P, r] p(w_i | P)            ρ_i(r) = Σ_P W[P, r] p(w_i | P)
    a longer span   β_ij(r) = Σ_k l_ik(r) ρ_kj(r)               (the span's ways to split, at rank r)
                    l_ij(r') = Σ_r β_ij(r) Σ_A U[A, r] V[A, r']  (it as a left part: mix_left)
    the sentence    p(w) = Σ_r β_0n(r) Σ_A p(S → A) U[A, r]

`inside_reference` is that recursion as written, by autograd; parsing and training run fast/inside.py's, whose
outside pass is written by hand (memory O(n²·rank)). A tree is the one with the largest sum of span marginals (MBR,
the span parser's CKY): exact Viterbi trees would need the full rule tensor.
"""
from __future__ import annotations

import torch
import torch.nn as nn

from onlstm_cli import fast
from onlstm_cli.config import PcfgConfig

# A sentence's charts take n²·rank floats: a longer one is not parsed by the PCFG (induction/distances.py gives it
# the right-branching tree, as a span parser alone does), and training leaves lines over its max_len out.
MAX_PCFG_WORDS = 300
# A parse's batches are cut so that a chart holds at most this many floats (a parse keeps five charts): 64 MiB each,
# whatever the sentences' lengths; a sentence longer than that fits goes alone.
CHART_FLOATS = 1 << 24


class Residual(nn.Module):
    """x + relu(W₂ relu(W₁ x)), the MLP block of Kim et al.'s N-PCFG."""

    def __init__(self, size: int):
        super().__init__()
        self.first, self.second = nn.Linear(size, size), nn.Linear(size, size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + torch.relu(self.second(torch.relu(self.first(x))))


def mlp(size: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(size, size), Residual(size), Residual(size))


class NeuralPCFG(nn.Module):
    """Words are read whole: a word beyond the vocabulary is <unk> (id 0)."""

    def __init__(self, config: PcfgConfig):
        super().__init__()
        self.config = config
        nt, pt, size = config.nonterminals, config.preterminals, config.symbol_size
        self.root = nn.Parameter(torch.randn(1, size) * 0.1)
        self.symbols = nn.Parameter(torch.randn(nt + pt, size) * 0.1)  # nonterminals first
        self.ranks = nn.Parameter(torch.randn(config.rank, size) * 0.1)
        self.root_mlp, self.word_mlp = mlp(size), mlp(size)
        self.head_mlp, self.left_mlp, self.right_mlp = mlp(size), mlp(size), mlp(size)
        self.words = nn.Embedding(config.vocab_size, size)
        for weight in self.parameters():  # as Kim et al.'s code: far better trees (docs/experiments/pcfg.md, run W)
            if weight.dim() > 1:
                nn.init.xavier_uniform_(weight)

    def rules(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """log p(S → A) (NT,), log U (NT, rank) normalized over ranks, log V and log W (NT+PT, rank) normalized
        over symbols."""
        nt = self.config.nonterminals
        log_root = torch.log_softmax(self.root_mlp(self.root) @ self.symbols[:nt].T, -1)[0]
        log_head = torch.log_softmax(self.head_mlp(self.symbols[:nt]) @ self.ranks.T, -1)
        log_left = torch.log_softmax(self.left_mlp(self.symbols) @ self.ranks.T, 0)
        log_right = torch.log_softmax(self.right_mlp(self.symbols) @ self.ranks.T, 0)
        return log_root, log_head, log_left, log_right

    def emissions(self, ids: torch.Tensor) -> torch.Tensor:
        """log p(w | P) of each position's word (B, n) → (B, n, PT), normalized over the vocabulary."""
        states = self.word_mlp(self.symbols[self.config.nonterminals:])  # (PT, size)
        return torch.log_softmax(states @ self.words.weight.T, -1).T[ids]

    def terms(self, ids: torch.Tensor) -> tuple:
        return rank_terms(*self.rules(), self.emissions(ids))

    def log_likelihood(self, ids: torch.Tensor, lengths: torch.Tensor, log_mask=None) -> torch.Tensor:
        """log p(sentence) (B,) of a batch of word ids (B, n_max), each sentence at least two words long; with
        `log_mask` (`focus_mask`), log Σ p(tree, sentence) over the trees made of the allowed spans alone."""
        return fast.pcfg_inside(*self.terms(ids), lengths, log_mask)

    @torch.no_grad()
    def span_marginals(self, ids: torch.Tensor, lengths: torch.Tensor):
        """(log p(sentence) (B,), the expected count of each span (B, size, size) by fenceposts i < j)."""
        log_z, by_width = fast.pcfg_marginals(*self.terms(ids), lengths)
        batch, n, _ = by_width.shape
        spans = by_width.new_zeros(batch, n + 1, n + 1)
        for width in range(2, n + 1):
            starts = torch.arange(n - width + 1, device=spans.device)
            spans[:, starts, starts + width] = by_width[:, :n - width + 1, width]
        return log_z, spans


def rank_terms(log_root, log_head, log_left, log_right, log_emit):
    """What the inside pass needs of the rules (see the module's docstring): the leaves' log l and log ρ (B, n, rank),
    the mixes (rank, rank) and the root's log weights over ranks (rank,)."""
    nt = log_head.shape[0]
    leaf_left = fast.logsumexp(log_emit[..., None] + log_left[nt:], -2)
    leaf_right = fast.logsumexp(log_emit[..., None] + log_right[nt:], -2)
    head = log_head.exp()
    mix_left, mix_right = head.T @ log_left[:nt].exp(), head.T @ log_right[:nt].exp()
    log_root_rank = torch.logsumexp(log_root[:, None] + log_head, 0)
    return leaf_left, leaf_right, mix_left, mix_right, log_root_rank


def focus_mask(spans_of: list, lengths: list[int]) -> torch.Tensor:
    """The log mask (B, n_max, n_max + 1) by start and width that allows each sentence's spans in `spans_of` (sets of
    (start, end), end exclusive), its words and its whole, and forbids every other span (parse-focusing: Park and
    Kim 2024 restrict a sentence's likelihood to the trees other parsers propose)."""
    n = max(lengths)
    mask = torch.full((len(lengths), n, n + 1), fast.FORBIDDEN)
    mask[:, :, 1] = 0.0
    for row, (spans, length) in enumerate(zip(spans_of, lengths)):
        mask[row, 0, length] = 0.0
        for start, end in spans:
            if 0 <= start < end <= length:
                mask[row, start, end - start] = 0.0
    return mask


def inside_reference(leaf_left, leaf_right, mix_left, mix_right, log_root, lengths, log_mask=None) -> torch.Tensor:
    """log p(sentence) (B,) by the recursion of the module's docstring, span by span, differentiable by autograd:
    the definition fast/inside.py is checked against (slow, and memory O(n³·rank) under autograd). `log_mask`:
    focus_mask's, added to each span's weight as a part."""
    batch, n, _ = leaf_left.shape
    left = {(i, i + 1): leaf_left[:, i] for i in range(n)}
    right = {(i, i + 1): leaf_right[:, i] for i in range(n)}
    beta = {}
    for width in range(2, n + 1):
        for i in range(n - width + 1):
            j = i + width
            beta[i, j] = torch.logsumexp(torch.stack([left[i, k] + right[k, j] for k in range(i + 1, j)]), 0)
            as_part = beta[i, j] if log_mask is None else beta[i, j] + log_mask[:, i, width, None]
            left[i, j] = torch.log(as_part.exp() @ mix_left)
            right[i, j] = torch.log(as_part.exp() @ mix_right)
    return torch.stack([torch.logsumexp(beta[0, int(length)][b] + log_root, -1) for b, length in enumerate(lengths)])


def pcfg_trees(pcfg: NeuralPCFG, ids_of: list[list[int]], batch_size: int = 64) -> tuple[list, list]:
    """Each sentence's MBR tree as split heights (span/model.py's `split_heights`: the symmetric split rule rebuilds
    it) and its log-likelihood (None for a one-word sentence, which has no binary rule to score). Sentences go in
    batches of about equal length, each batch's charts under CHART_FLOATS; each must be at most MAX_PCFG_WORDS long."""
    from onlstm_cli.span.model import cky
    heights: list = [None] * len(ids_of)
    log_likelihoods: list = [None] * len(ids_of)
    order = [k for k in sorted(range(len(ids_of)), key=lambda k: len(ids_of[k])) if len(ids_of[k]) >= 2]
    for k in range(len(ids_of)):
        if len(ids_of[k]) < 2:
            heights[k] = [0] * len(ids_of[k])
    device = pcfg.words.weight.device
    start = 0
    while start < len(order):
        longest = len(ids_of[order[min(start + batch_size, len(order)) - 1]])  # shortest first: the batch's last
        fits = max(1, CHART_FLOATS // ((longest + 1) ** 2 * pcfg.config.rank))
        batch = order[start:start + min(batch_size, fits)]
        start += len(batch)
        lengths = [len(ids_of[k]) for k in batch]
        ids = torch.zeros(len(batch), max(lengths), dtype=torch.long)
        for row, k in enumerate(batch):
            ids[row, :len(ids_of[k])] = torch.tensor(ids_of[k], dtype=torch.long)
        log_z, spans = pcfg.span_marginals(ids.to(device), torch.tensor(lengths, device=device))
        for k, tree, value in zip(batch, cky(spans, lengths), log_z.tolist()):
            heights[k], log_likelihoods[k] = tree, value
    return heights, log_likelihoods
