"""Issue 52: `train --seeds 2 --families onlstm,pcfg`: PCFGs train beside the language models, vote with their own
trees, and the record, the card and the end line name both families."""
from __future__ import annotations

import json

from conftest import write_corpus

from onlstm_cli.config import RecipeConfig, SelfTrainConfig, TrainConfig
from onlstm_cli.info import info_text, model_info
from onlstm_cli.modelfile import load_model
from onlstm_cli.text.tokenizers import Tokenizer
from onlstm_cli.training.recipe.runner import run_recipe, state_path
from onlstm_cli.training.run.clock import Budget


def test_pcfgs_train_and_vote_beside_the_language_models(tmp_path):
    corpus = write_corpus(tmp_path / "corpus.txt", 100, seed=5)
    out = tmp_path / "mixed.onlstm"
    said = []
    result = run_recipe(corpus, out, None, dict(emb_size=20, hidden_size=20, n_layers=3, chunk_size=5),
                        TrainConfig(epochs=1, time_budget=None, batch_size=4, bptt=10, optimizer="adam", lr=0.01,
                                    threads=1),
                        dict(tokenizer=Tokenizer("ptb")),
                        RecipeConfig(seeds=2, side_by_side=1, families=("onlstm", "pcfg")),
                        # one epoch on a toy text may leave a PCFG a branching rule, which would not vote
                        self_train=SelfTrainConfig(max_branching_agreement=100.0),
                        log=said.append, budget=Budget(None))
    assert not result.interrupted and out.is_file()
    record = json.loads(state_path(out).read_text())
    assert [(t["family"], t["seed"]) for t in record["teachers"]] == [
        ("onlstm", 1111), ("onlstm", 1112), ("pcfg", 1111), ("pcfg", 1112)]
    pcfgs = [out.with_name(t["path"]) for t in record["teachers"][2:]]
    assert [load_model(p).kind for p in pcfgs] == ["pcfg", "pcfg"]
    assert all(t["valid_ppl"] > 1 and t["votes"] for t in record["teachers"])
    assert any("PCFG 3 of 4 (seed 1111)" in line for line in said), said
    assert any("mixed.pcfg-seed1111.onlstm, mixed.pcfg-seed1112.onlstm with their own trees" in line
               for line in said), said
    assert "span parser on 4 models' votes" in result.summary() and "beside it 4 models (" in result.summary()
    card = info_text(model_info(out))
    assert "the 2 other models' own trees weigh 1 each" in card
    assert f"seed 1111 (pcfg, valid ppl {record['teachers'][2]['valid_ppl']}" in card
