"""Training windows from a memory-mapped token file: with --batch-size 1 a window is a contiguous slice of
the read-only map, which torch used to wrap as it was ("The given NumPy array is not writable")."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import torch

from onlstm_cli.text.corpus import TokenColumns, open_token_file, write_token_file

KEY = {"corpus": "test"}


def mapped_ids(tmp_path, n: int = 50) -> np.ndarray:
    path = tmp_path / "ids.tokens"
    write_token_file(path, [np.arange(n, dtype=np.int32)], KEY)
    ids = open_token_file(path, KEY)
    assert isinstance(ids, np.memmap) and not ids.flags.writeable
    return ids


def test_a_window_of_one_column_is_a_writable_copy_of_the_map(tmp_path):
    ids = mapped_ids(tmp_path)
    window = TokenColumns(ids, 1).window(2, 5)
    assert window.dtype == torch.int64 and window.shape == (5, 1)
    assert window[:, 0].tolist() == [2, 3, 4, 5, 6]
    window += 100  # a tensor of its own: the map (and the file) stay as they were
    assert ids[2:7].tolist() == [2, 3, 4, 5, 6]


def test_batch_size_one_gives_no_torch_warning(tmp_path):
    """torch warns once per process, so this runs in a fresh one, with every warning an error."""
    mapped_ids(tmp_path)
    code = ("import sys, numpy as np\n"
            "from onlstm_cli.text.corpus import TokenColumns, open_token_file\n"
            "ids = open_token_file(sys.argv[1], {'corpus': 'test'})\n"
            "for batch_size in (1, 2):\n"
            "    TokenColumns(ids, batch_size).window(0, 3)\n")
    result = subprocess.run([sys.executable, "-W", "error", "-c", code, str(tmp_path / "ids.tokens")],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "not writable" not in result.stderr
