"""The fused C cell step (`cell_kernel.c`): built once with the system's C compiler, loaded with ctypes.

(The same file also draws DropConnect masks, the other per-step cost of training on CPU.)

On CPU a torch-only ON-LSTM step is a dozen small kernels, and at the sizes of this tool those cost as
much as the step's matmul. The C file does the whole step, forward or backward, in one vectorized pass
per batch row. It is compiled on first use (about half a second) into a per-user cache and reused from
there; where no compiler is found, the build fails, or ONLSTM_NO_KERNEL is set, `load()` returns None
and model.py runs its torch path, which computes the same thing.
"""
from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
from pathlib import Path

SOURCE = Path(__file__).with_name("cell_kernel.c")
FLAGS = ["-O3", "-march=native", "-fno-math-errno", "-fno-trapping-math", "-fopenmp", "-fPIC", "-shared"]


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "onlstm"


def _cpu_model() -> str:
    try:
        return next((line for line in open("/proc/cpuinfo") if line.startswith("model name")), "")
    except OSError:
        return ""


def build(compiler: str, directory: Path) -> Path:
    """Compile the kernel (unless this exact build is cached) and return the shared library's path.

    The file name hashes the source, flags, compiler and CPU, since -march=native builds for this CPU;
    it is written under a temporary name and renamed, so a concurrent or interrupted build leaves no
    half-written library behind.
    """
    key = hashlib.sha256("\0".join([SOURCE.read_text(), *FLAGS, compiler, platform.machine(),
                                    _cpu_model()]).encode()).hexdigest()[:16]
    target = directory / f"cell_kernel-{key}.so"
    if target.exists():
        return target
    directory.mkdir(parents=True, exist_ok=True)
    fd, partial = tempfile.mkstemp(suffix=".so", dir=directory)
    os.close(fd)
    try:
        subprocess.run([compiler, *FLAGS, "-o", partial, str(SOURCE), "-lm"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
        os.replace(partial, target)
    finally:
        if os.path.exists(partial):
            os.unlink(partial)
    return target


@functools.lru_cache(maxsize=None)
def load() -> ctypes.CDLL | None:
    """The compiled kernel, or None where it cannot be had (then model.py's torch path runs)."""
    if os.environ.get("ONLSTM_NO_KERNEL") or platform.system() != "Linux":
        return None
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        return None
    for directory in (cache_dir(), Path(tempfile.gettempdir()) / f"onlstm-{os.getuid()}"):
        try:
            lib = ctypes.CDLL(str(build(compiler, directory)))
            break
        except (OSError, subprocess.SubprocessError):
            continue
    else:
        return None
    i, p, long = ctypes.c_int, ctypes.c_void_p, ctypes.c_long
    lib.onlstm_forward_step.argtypes = [i, i, i, i, p, long, p, p, p, p, p, p, p]
    lib.onlstm_backward_step.argtypes = [i, i, i, i, p, p, p, p, p, p, p, p, long]
    lib.onlstm_forward_step.restype = lib.onlstm_backward_step.restype = i
    lib.onlstm_master_gates.argtypes = [i, i, i, p, long, p]
    lib.onlstm_master_gates.restype = i
    lib.onlstm_drop_mask.argtypes = [long, ctypes.c_ulonglong, ctypes.c_uint, ctypes.c_float, p]
    lib.onlstm_drop_mask.restype = None
    lib.onlstm_softmax_xent.argtypes = [long, long, p, p, p, p]
    lib.onlstm_softmax_xent.restype = None
    return lib
