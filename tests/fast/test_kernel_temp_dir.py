"""When the kernel cache cannot be used, the C kernel is built in a private temporary directory: the
library must still load and work, and the directory must not outlive the load (it used to stay in /tmp,
one per process)."""
from __future__ import annotations

import tempfile

import pytest
import torch

from onlstm_cli.fast import ckernel


@pytest.fixture
def fresh_load():
    ckernel.load.cache_clear()
    yield ckernel.load
    ckernel.load.cache_clear()  # the next caller gets the kernel of the real cache again


@pytest.mark.skipif(ckernel.load() is None, reason="no C compiler here")
def test_a_kernel_built_outside_the_cache_works_and_leaves_no_directory(tmp_path, monkeypatch, fresh_load):
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)  # writable by others: never a cache (ckernel.private_dir)
    monkeypatch.setattr(ckernel, "cache_dir", lambda: shared)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    kernel = fresh_load()
    assert kernel is not None
    mask = torch.empty(1000)
    kernel.drop_mask(mask, seed=1, p=0.5)  # the library is still mapped and runs
    assert set(mask.unique().tolist()) <= {0.0, 2.0} and 0 < int((mask == 0).sum()) < 1000
    assert list(scratch.iterdir()) == []
    assert not list(shared.glob("*.so"))


def test_a_failed_build_leaves_no_directory(tmp_path, monkeypatch, fresh_load):
    monkeypatch.setattr(ckernel, "cache_dir", lambda: tmp_path / "file")
    (tmp_path / "file").write_text("not a directory")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    monkeypatch.setenv("CC", str(tmp_path / "no-such-compiler"))
    assert fresh_load() is None
    assert list(scratch.iterdir()) == []
