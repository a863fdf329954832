"""The language model (onlstm_cli/lm/model.py): paths agree, caches follow weight changes, regularisers."""
from __future__ import annotations

import pytest
import torch

import onlstm_cli.lm.model as model_module
from onlstm_cli.fast import onednn
from onlstm_cli.lm.model import LockedDropout, ModelConfig, ONLSTMLanguageModel

# --- the language model --------------------------------------------------------------------------

def tiny_lm(**overrides) -> ONLSTMLanguageModel:
    torch.manual_seed(0)
    config = dict(vocab_size=30, emb_size=20, hidden_size=40, n_layers=3, chunk_size=5)
    config.update(overrides)
    return ONLSTMLanguageModel(ModelConfig(**config))


def tokens(T=6, B=3, V=30, seed=0):
    return torch.randint(0, V, (T, B), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("rule", ["paper", "symmetric"])
def test_lm_reference_and_fast_agree_in_eval_mode(rule):
    model = tiny_lm(master_input=rule).double().eval()
    x = tokens()
    with torch.no_grad():
        fast = model(x)
        ref = model(x, reference=True)
    assert fast.logits.shape == (6, 3, 30)
    assert torch.allclose(fast.logits, ref.logits, atol=1e-10)
    assert len(fast.distances) == 3
    for a, b in zip(fast.distances, ref.distances):
        assert a.shape == (6, 3)
        assert torch.allclose(a, b, atol=1e-10)
    for (h1, c1), (h2, c2) in zip(fast.state, ref.state):
        assert torch.allclose(h1, h2, atol=1e-10) and torch.allclose(c1, c2, atol=1e-10)


@pytest.mark.parametrize("rule", ["paper", "symmetric"])
def test_lm_all_three_paths_agree(rule):
    """no_grad runs the lean inference layer, grad mode the autograd.Function, reference=True the oracle."""
    model = tiny_lm(master_input=rule).double().eval()
    x = tokens(T=9, B=4, seed=3)
    with torch.no_grad():
        lean = model(x)
        ref = model(x, reference=True)
    fast = model(x)
    assert fast.logits.requires_grad and not lean.logits.requires_grad
    for out in (lean, fast):
        assert torch.allclose(out.logits, ref.logits, atol=1e-10)
        for a, b in zip(out.distances, ref.distances):
            assert torch.allclose(a, b, atol=1e-10)
        for a, b in zip(out.master_input, ref.master_input):
            assert torch.allclose(a, b, atol=1e-10)


def test_up_to_layer_gives_the_same_distances_and_no_logits():
    model = tiny_lm().eval()
    x = tokens(T=7, B=2, seed=4)
    with torch.no_grad():
        full = model(x)
        part = model(x, up_to_layer=2)
    assert part.logits is None
    assert len(part.distances) == 2
    for a, b in zip(part.distances, full.distances[:2]):
        assert torch.equal(a, b)


def test_first_layer_table_gives_the_same_outputs_and_follows_weight_changes():
    model = tiny_lm().eval()
    x = tokens(T=9, B=4, seed=6)
    with torch.no_grad():
        tabled = model(x)
        assert model._gate_table is not None
    direct = model(x)  # with gradients on, the table is not used
    assert torch.allclose(tabled.logits, direct.logits, atol=1e-5)
    for a, b in zip(tabled.distances, direct.distances):
        assert torch.allclose(a, b, atol=1e-5)
    with torch.no_grad():
        model.embedding.weight[3] += 0.5  # an in-place change must not leave a stale table behind
        model.layers[0].ih.bias.mul_(2.0)
        changed = model(x)
    assert torch.allclose(changed.logits, model(x).logits, atol=1e-5)
    assert not torch.allclose(changed.logits, tabled.logits, atol=1e-3)


def test_packed_recurrent_weight_is_kept_at_inference_and_follows_weight_changes():
    model = tiny_lm().eval()
    x = tokens(T=9, B=4, seed=7)
    with torch.no_grad():
        first = model(x, with_logits=False)
        prepared = model.layers[1].prepared
        kept = prepared.recurrent(prepared.hh, 4)
        model(tokens(T=5, B=2, seed=8), with_logits=False)  # another batch size reuses it
        assert prepared.recurrent(prepared.hh, 2) is kept
        model.layers[1].hh.weight.mul_(1.5)  # an in-place change (an optimizer step) repacks
        changed = model(x, with_logits=False)
        assert prepared.recurrent(prepared.hh, 4) is not kept
    expected = model(x, reference=True, with_logits=False)
    for a, b in zip(changed.distances, expected.distances):
        assert torch.allclose(a, b, atol=1e-5)
    assert not torch.allclose(changed.distances[1], first.distances[1], atol=1e-4)


def test_first_layer_table_is_not_used_in_training_or_for_few_tokens():
    model = tiny_lm(vocab_size=1000)
    with torch.no_grad():
        model(tokens(T=30, B=10))
        assert model._gate_table is None  # training mode: dropout makes projections differ per token
        model.eval()
        model(tokens(T=3, B=2))
        assert model._gate_table is None  # 6 tokens do not pay for a 1000-row table
        model(tokens(T=30, B=10))
        assert model._gate_table is not None


def test_lm_gradients_reach_every_parameter():
    model = tiny_lm().train()
    out = model(tokens(T=8, B=4))
    loss = torch.nn.functional.cross_entropy(out.logits.reshape(-1, 30), tokens(T=8, B=4, seed=1).reshape(-1))
    loss.backward()
    names = [name for name, _ in model.named_parameters()]
    assert any(name.startswith("layers.2.hh") for name in names)
    for name, p in model.named_parameters():
        assert p.grad is not None, name
        assert torch.isfinite(p.grad).all(), name
        assert p.grad.abs().sum() > 0, name


def test_lm_distances_are_in_level_range():
    model = tiny_lm().eval()
    with torch.no_grad():
        out = model(tokens(), with_logits=False)
    assert out.logits is None
    levels = [layer.n_levels for layer in model.layers]
    assert levels == [8, 8, 4]
    for d, n in zip(out.distances, levels):
        assert (d >= 1 - 1e-5).all() and (d <= n + 1e-5).all()


def test_lm_state_carries_over():
    """Running two halves with the state carried over equals running the whole sequence."""
    model = tiny_lm().double().eval()
    x = tokens(T=8)
    with torch.no_grad():
        whole = model(x)
        first = model(x[:4])
        second = model(x[4:], first.state)
    assert torch.allclose(torch.cat([first.logits, second.logits]), whole.logits, atol=1e-10)


def test_dropout_off_in_eval_and_on_in_train():
    model = tiny_lm()
    x = tokens()
    model.eval()
    with torch.no_grad():
        assert torch.equal(model(x).logits, model(x).logits)
    model.train()
    with torch.no_grad():
        a, b = model(x).logits, model(x).logits
    assert not torch.allclose(a, b)


def test_dropconnect_alone_changes_train_outputs():
    model = tiny_lm(dropout=0.0, dropout_h=0.0, dropout_i=0.0, dropout_e=0.0, weight_drop=0.5)
    x = tokens()
    model.train()
    with torch.no_grad():
        a, b = model(x).logits, model(x).logits
    assert not torch.allclose(a, b)
    model.eval()
    with torch.no_grad():
        assert torch.equal(model(x).logits, model(x).logits)


def test_no_dropout_at_all_makes_train_mode_deterministic():
    model = tiny_lm(dropout=0.0, dropout_h=0.0, dropout_i=0.0, dropout_e=0.0, weight_drop=0.0).train()
    x = tokens()
    with torch.no_grad():
        assert torch.equal(model(x).logits, model(x).logits)


def test_locked_dropout_mask_is_shared_over_time():
    drop = LockedDropout().train()
    x = torch.ones(9, 4, 50)
    y = drop(x, 0.5)
    assert torch.equal(y, y[:1].expand_as(y))  # same mask at every time step
    assert (y == 0).any() and (y == 2).any()   # some dropped, the rest scaled by 1/(1−p)
    drop.eval()
    assert torch.equal(drop(x, 0.5), x)


def test_bad_sizes_are_rejected():
    with pytest.raises(ValueError):
        tiny_lm(hidden_size=42)
    with pytest.raises(ValueError):
        tiny_lm(master_input="other")


def test_recurrent_weights_are_column_major_and_train_like_row_major_ones():
    """Their gradients come out of the products column-major, so autograd takes them as they are; a
    model with the same weights stored row by row must get the same gradients."""
    models = [tiny_lm(dropout=0, dropout_h=0, dropout_i=0, dropout_e=0, weight_drop=0).train() for _ in range(2)]
    for layer in models[1].layers:
        for linear_map in (layer.ih, layer.hh):
            linear_map.weight = torch.nn.Parameter(linear_map.weight.detach().contiguous())
    x, y = tokens(T=8, B=4), tokens(T=8, B=4, seed=1)
    for model in models:
        model(x, targets=y).loss.backward()
    for layer, row_major in zip(*(m.layers for m in models)):
        for name in ("ih", "hh"):
            weight, other = getattr(layer, name).weight, getattr(row_major, name).weight
            assert onednn.is_column_major(weight) and torch.equal(weight, other)
            assert weight.grad.stride() == weight.stride(), name  # taken as it came, not copied
            assert torch.allclose(weight.grad, other.grad, atol=1e-5), name


def test_lm_loss_equals_cross_entropy_of_its_logits():
    model = tiny_lm().eval()
    x, y = tokens(T=8, B=4), tokens(T=8, B=4, seed=1)
    with torch.no_grad():
        logits = model(x).logits
        out = model(x, targets=y)
    assert out.logits is None
    expected = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
    assert torch.allclose(out.loss, expected, atol=1e-5)
    with pytest.raises(ValueError, match="not both"):
        model(x, targets=y, up_to_layer=2)


def test_embedding_dropout_drops_whole_word_types():
    torch.manual_seed(3)
    embed = torch.nn.Embedding(50, 8)
    tokens = torch.randint(0, 50, (40, 10))
    out = model_module.embedding_dropout(embed, tokens, 0.4, training=True)
    dropped = (out == 0).all(-1)
    kept = ~dropped
    assert torch.allclose(out[kept], embed.weight[tokens][kept] / 0.6)
    for word in tokens.unique():  # every occurrence of a word shares its fate
        assert dropped[tokens == word].all() or kept[tokens == word].all()
    fraction = torch.stack([dropped[tokens == word][0] for word in tokens.unique()]).float().mean()
    assert 0.2 < fraction < 0.6  # of the word types
    assert torch.equal(model_module.embedding_dropout(embed, tokens, 0.4, training=False), embed(tokens))
