"""The neural PCFG's maths: the inside pass against a PCFG whose rules are built in full, the hand-written outside pass
against autograd, the span marginals, and the memory the backward pass keeps."""
import pytest
import torch

from onlstm_cli import fast
from onlstm_cli.config import PcfgConfig
from onlstm_cli.fast.inside import EXP_FLOOR
from onlstm_cli.pcfg.model import NeuralPCFG, inside_reference, pcfg_trees, rank_terms

NT, PT = 3, 4


@pytest.fixture
def pcfg():
    torch.manual_seed(0)
    return NeuralPCFG(PcfgConfig(vocab_size=20, nonterminals=NT, preterminals=PT, rank=5, symbol_size=8)).double()


@pytest.fixture
def batch():
    torch.manual_seed(1)
    return torch.randint(2, 20, (3, 6)), torch.tensor([6, 4, 2])


def dense_log_likelihood(pcfg, ids, n):
    """CKY's inside pass over the full rule tensor p(A → B C) = Σ_r U V W, for one sentence of n words."""
    log_root, log_head, log_left, log_right = pcfg.rules()
    rules = torch.einsum("ar,br,cr->abc", log_head.exp(), log_left.exp(), log_right.exp())
    emit = pcfg.emissions(ids[None, :n])[0].exp()
    chart = {(i, i + 1): torch.cat([torch.zeros(NT, dtype=emit.dtype), emit[i]]) for i in range(n)}
    for width in range(2, n + 1):
        for i in range(n - width + 1):
            j = i + width
            total = sum(torch.einsum("abc,b,c->a", rules, chart[i, k], chart[k, j]) for k in range(i + 1, j))
            chart[i, j] = torch.cat([total, torch.zeros(PT, dtype=total.dtype)])
    return float(torch.log((log_root.exp() * chart[0, n][:NT]).sum()).detach())


def test_the_low_rank_inside_pass_is_the_pcfg_of_its_full_rules(pcfg, batch):
    ids, lengths = batch
    ours = pcfg.log_likelihood(ids, lengths)
    for b, n in enumerate(lengths.tolist()):
        assert float(ours[b].detach()) == pytest.approx(dense_log_likelihood(pcfg, ids[b], n), abs=1e-9)


def test_the_hand_written_outside_pass_is_autograd_through_the_definition(pcfg, batch):
    ids, lengths = batch
    weights = torch.tensor([1.0, 2.0, -0.5], dtype=torch.float64)  # each sentence's own scale reaches its gradient
    reference = inside_reference(*pcfg.terms(ids), lengths)
    expected = torch.autograd.grad((reference * weights).sum(), list(pcfg.parameters()))
    fast_pass = fast.pcfg_inside(*pcfg.terms(ids), lengths)
    got = torch.autograd.grad((fast_pass * weights).sum(), list(pcfg.parameters()))
    assert torch.allclose(fast_pass, reference, atol=1e-10)
    assert max(float((a - b).abs().max()) for a, b in zip(expected, got)) < 1e-9


def test_a_peaked_grammar_scores_as_the_definition_though_its_exponents_are_floored(pcfg, batch):
    """A trained grammar's chart terms lie hundreds of nats below their sums' largest, where the passes floor their
    exponents (fast/inside.py's EXP_FLOOR, for the CPU's speed): its likelihood and gradients must not move."""
    ids, lengths = batch
    with torch.no_grad():
        leaf_left, leaf_right, mix_left, mix_right, log_root = pcfg.terms(ids)
        # each term's ranks spread 2,000 times as far, around its largest (the definition takes no largest out)
        peaked = [(leaf - leaf.amax(-1, keepdim=True)) * 2000 for leaf in (leaf_left, leaf_right, log_root)]
        peaked = [peaked[0], peaked[1], mix_left ** 6, mix_right ** 6, peaked[2]]
    assert float((peaked[0] < 2 * EXP_FLOOR).double().mean()) > 0.3  # many terms far below the floor
    results = []
    for run in (inside_reference, fast.pcfg_inside):
        terms = [t.clone().requires_grad_() for t in peaked]
        log_z = run(*terms, lengths)
        results.append((log_z.detach(), torch.autograd.grad(log_z.sum(), terms)))
    (expected, expected_grads), (got, got_grads) = results
    assert torch.allclose(got, expected, rtol=1e-9, atol=1e-9)
    for a, b in zip(expected_grads, got_grads):
        assert torch.allclose(a, b, rtol=1e-7, atol=1e-9)


def test_the_floored_logsumexp_is_torchs_with_its_gradient():
    torch.manual_seed(2)
    values = torch.randn(6, 9, dtype=torch.float64) * 80
    values[0, 3] = fast.FORBIDDEN  # a forbidden span's weight beside ordinary ones
    values[1] = values[1, 0]       # ties
    ours_in, theirs_in = values.clone().requires_grad_(), values.clone().requires_grad_()
    ours, theirs = fast.logsumexp(ours_in, 1), torch.logsumexp(theirs_in, 1)
    assert torch.allclose(ours, theirs, rtol=1e-12, atol=1e-12)
    weights = torch.arange(6, dtype=torch.float64)
    (ours * weights).sum().backward()
    (theirs * weights).sum().backward()
    assert torch.allclose(ours_in.grad, theirs_in.grad, atol=1e-12)


def test_a_sentence_scores_the_same_alone_as_beside_longer_ones(pcfg, batch):
    ids, lengths = batch
    together = pcfg.log_likelihood(ids, lengths)
    alone = pcfg.log_likelihood(ids[1:2, :4], lengths[1:2])
    assert float(alone[0]) == pytest.approx(float(together[1]), abs=1e-10)


def test_span_marginals_are_expected_counts_of_a_binary_trees_spans(pcfg, batch):
    ids, lengths = batch
    log_z, spans = pcfg.span_marginals(ids, lengths)
    assert torch.allclose(log_z, pcfg.log_likelihood(ids, lengths).detach())
    # a binary tree of n words has n − 1 spans of two words or more, the whole sentence among them
    assert spans.sum((1, 2)).tolist() == pytest.approx([n - 1 for n in lengths.tolist()], abs=1e-9)
    assert float(spans.min()) >= 0 and float(spans.max()) <= 1 + 1e-9
    for b, n in enumerate(lengths.tolist()):
        assert float(spans[b, 0, n]) == pytest.approx(1.0)


def test_mbr_trees_are_binary_trees_over_every_word(pcfg):
    from onlstm_cli.trees import build_tree, tree_spans
    heights, scores = pcfg_trees(pcfg.float(), [[3, 4, 5, 6, 7], [8], [9, 10]], batch_size=2)
    assert [len(h) for h in heights] == [5, 1, 2]
    tree = build_tree(heights[0], list(range(5)), "symmetric")
    assert len(tree_spans(tree)) == 3 and all(0 <= i < j <= 5 for i, j in tree_spans(tree))  # binary: n − 2 inner spans
    assert scores[1] is None and scores[0] < 0 and scores[2] < 0


def test_the_backward_pass_keeps_charts_quadratic_in_the_sentence(pcfg):
    """Saved for the backward pass: the charts (B·n²·rank floats each), not a tensor per width and split."""
    batch, n, rank = 2, 40, pcfg.config.rank
    ids = torch.randint(2, 20, (batch, n))
    terms = [t.detach().requires_grad_() for t in pcfg.terms(ids)]
    saved = []

    def pack(tensor):
        saved.append(tensor.numel())
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        fast.pcfg_inside(*terms, torch.full((batch,), n))
    chart = batch * n * (n + 1) * rank
    assert sum(saved) <= 3 * chart + 4 * rank * rank + 100  # three charts and the mixes


def test_a_parses_batches_are_cut_to_bound_its_charts_and_give_the_same_trees(pcfg, monkeypatch):
    import onlstm_cli.pcfg.model as model
    torch.manual_seed(2)
    sentences = [torch.randint(2, 20, (n,)).tolist() for n in (9, 3, 12, 7, 12)]
    whole = pcfg_trees(pcfg.float(), sentences, batch_size=64)
    calls = []
    real = NeuralPCFG.span_marginals
    monkeypatch.setattr(NeuralPCFG, "span_marginals", lambda self, ids, lengths: calls.append(ids.shape) or
                        real(self, ids, lengths))
    monkeypatch.setattr(model, "CHART_FLOATS", 2 * 13 * 13 * pcfg.config.rank)  # two 12-word sentences' charts
    cut = pcfg_trees(pcfg, sentences, batch_size=64)
    assert cut[0] == whole[0] and cut[1] == pytest.approx(whole[1], abs=1e-4)
    assert max(shape[0] for shape in calls) <= 2 and sum(shape[0] for shape in calls) == 5


def test_denormals_are_flushed_within_the_context_and_set_back_after_unless_set_before():
    import sys
    subnormal = sys.float_info.min / 2
    assert subnormal > 0
    with fast.denormals_flushed():
        assert sys.float_info.min / 2 == 0.0
        with fast.denormals_flushed():  # nested: the outer one sets it back, not this one
            pass
        assert sys.float_info.min / 2 == 0.0
    assert sys.float_info.min / 2 == subnormal
    torch.set_flush_denormal(True)  # a caller's own setting is kept
    try:
        with fast.denormals_flushed():
            pass
        assert sys.float_info.min / 2 == 0.0
    finally:
        torch.set_flush_denormal(False)
