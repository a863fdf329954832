"""Parse-focusing's maths: the inside pass with some spans forbidden sums p(tree, sentence) over the trees made of
the allowed spans alone, and its hand-written backward pass is still autograd's."""
import pytest
import torch

from onlstm_cli import fast
from onlstm_cli.config import PcfgConfig
from onlstm_cli.pcfg.model import NeuralPCFG, focus_mask, inside_reference


@pytest.fixture
def pcfg():
    torch.manual_seed(0)
    return NeuralPCFG(PcfgConfig(vocab_size=20, nonterminals=3, preterminals=4, rank=5, symbol_size=8)).double()


def binary_trees(start: int, end: int) -> list[frozenset]:
    """Every binary tree over words start..end − 1, as its spans of two words or more."""
    if end - start == 1:
        return [frozenset()]
    return [left | right | {(start, end)} for split in range(start + 1, end)
            for left in binary_trees(start, split) for right in binary_trees(split, end)]


@torch.no_grad()
def test_one_trees_mask_gives_that_trees_probability_and_all_of_them_sum_to_the_sentences(pcfg):
    torch.manual_seed(3)
    n = 5
    ids, lengths = torch.randint(2, 20, (1, n)), torch.tensor([n])
    trees = binary_trees(0, n)
    assert len(trees) == 14  # Catalan(4)
    each = torch.stack([pcfg.log_likelihood(ids, lengths, focus_mask([tree], [n]).double())[0] for tree in trees])
    whole = pcfg.log_likelihood(ids, lengths)[0]
    assert float(torch.logsumexp(each, 0)) == pytest.approx(float(whole), abs=1e-9)
    assert len({round(float(x), 6) for x in each}) > 1  # the trees differ: no mask lets everything through
    assert float(each.max()) < float(whole)


@torch.no_grad()
def test_two_trees_mask_sums_the_trees_made_of_their_spans(pcfg):
    torch.manual_seed(4)
    n = 6
    ids, lengths = torch.randint(2, 20, (1, n)), torch.tensor([n])
    right = frozenset((i, n) for i in range(n - 1))
    other = frozenset({(0, 6), (0, 2), (2, 6), (2, 4), (4, 6)})
    allowed = right | other
    made_of_them = [tree for tree in binary_trees(0, n) if tree <= allowed]
    assert right in made_of_them and other in made_of_them and len(made_of_them) > 2  # (0,2) + the right branch
    each = [pcfg.log_likelihood(ids, lengths, focus_mask([tree], [n]).double())[0] for tree in made_of_them]
    focused = pcfg.log_likelihood(ids, lengths, focus_mask([allowed], [n]).double())[0]
    assert float(focused) == pytest.approx(float(torch.logsumexp(torch.stack(each), 0)), abs=1e-9)


def test_the_focused_backward_pass_is_autograd_through_the_masked_definition(pcfg):
    torch.manual_seed(5)
    ids, lengths = torch.randint(2, 20, (3, 7)), torch.tensor([7, 5, 3])
    spans = [{(0, 2), (2, 7), (2, 4), (4, 7), (5, 7)}, {(i, 5) for i in range(4)}, {(1, 3)}]
    mask = focus_mask(spans, lengths.tolist()).double()
    weights = torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64)
    reference = inside_reference(*pcfg.terms(ids), lengths, mask)
    expected = torch.autograd.grad((reference * weights).sum(), list(pcfg.parameters()))
    ours = fast.pcfg_inside(*pcfg.terms(ids), lengths, mask)
    got = torch.autograd.grad((ours * weights).sum(), list(pcfg.parameters()))
    assert torch.allclose(ours, reference, atol=1e-9)
    assert max(float((a - b).abs().max()) for a, b in zip(expected, got)) < 1e-8
    unfocused = fast.pcfg_inside(*pcfg.terms(ids), lengths)
    assert bool((ours < unfocused).all())  # fewer trees, less probability


def test_a_float32_focused_pass_has_finite_gradients_on_long_sentences():
    torch.manual_seed(6)
    model = NeuralPCFG(PcfgConfig(vocab_size=50, nonterminals=4, preterminals=6, rank=8, symbol_size=16))
    n = 30
    ids, lengths = torch.randint(2, 50, (2, n)), torch.tensor([n, 17])
    spans = [{(i, n) for i in range(n - 1)}, {(0, i) for i in range(2, 17)}]
    loss = -model.log_likelihood(ids, lengths, focus_mask(spans, lengths.tolist())).sum()
    loss.backward()
    assert torch.isfinite(loss)
    assert all(bool(torch.isfinite(p.grad).all()) for p in model.parameters() if p.grad is not None)
