"""A `Parser` mapped over process pools and cluster engines: it travels as a reference, each worker loads
the model once, and the trees are those of the parser at home (README: "Python")."""
from __future__ import annotations

import multiprocessing
import pickle
from concurrent.futures import ProcessPoolExecutor

import pytest

LINES = ["The cat sat on the mat .\n", "A dog barked at the moon .\n", "Dogs bark .\n"] * 4


def test_a_process_pool_maps_the_parser_to_its_own_trees(model):
    from onlstm_cli import Parser
    parser = Parser.load(model)
    assert len(pickle.dumps(parser)) < 10_000
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        trees = list(pool.map(parser.parse, LINES, chunksize=4))
    assert trees == [parser.parse(line) for line in LINES]


def test_dask_bag_maps_the_parser_over_partitions(model, tmp_path):
    bag = pytest.importorskip("dask.bag", reason="the dask extra is not installed")
    from onlstm_cli import Parser
    parser = Parser.load(model)
    text = tmp_path / "sentences.txt"
    text.write_text("".join(LINES))
    trees = bag.read_text(str(text), blocksize=64).map(parser.parse).compute(scheduler="processes", num_workers=2)
    assert [str(t) for t in trees] == [str(parser.parse(line)) for line in LINES]


def test_a_forked_pool_after_parsing_at_home_does_not_hang(model):
    """Linux's default pool forks: its workers start from a process whose OpenMP team has run."""
    from onlstm_cli import Parser
    parser = Parser.load(model)
    expected = [parser.parse(line) for line in LINES]
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("fork")) as pool:
        assert list(pool.map(parser.parse, LINES, chunksize=4, timeout=120)) == expected
