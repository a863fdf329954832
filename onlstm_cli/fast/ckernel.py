"""The C cell kernel (`cell_kernel.c`): built once with the system's C compiler, loaded with ctypes, and
called only through `CellKernel`, whose methods check every buffer before C touches it.

On CPU a torch-only ON-LSTM step is a dozen small kernels, and at this tool's sizes those cost as much
as the step's matmul; the C file does a whole step, forward or backward, in one vectorized pass per batch
row, draws DropConnect masks and computes the decoder's softmax cross-entropy. Where no compiler is
found, the build fails or its probe fails, or ONLSTM_NO_KERNEL is set, `load()` returns None and the
selector runs the torch path, which computes the same thing.

Safety of the compiled-library cache: a shared object is code. It is only ever loaded from a directory
owned by this user and closed to others (created 0700), and only if the file itself is ours and not
writable by others; anything else is refused and the library is built afresh in a private temporary
directory. The cache key covers the source, the flags, the compiler and the CPU's feature flags (the
build uses -march=native), and a freshly built library is first run in a child process, so a library that
would die of an illegal instruction never reaches this one.
"""
from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import platform
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

SOURCE = Path(__file__).with_name("cell_kernel.c")
FLAGS = ["-O3", "-march=native", "-fno-math-errno", "-fno-trapping-math", "-fopenmp", "-fPIC", "-shared"]


class KernelArgumentError(ValueError):
    """A buffer the C kernel would read or write out of bounds, or of the wrong kind."""


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "onlstm"


def _cpu_features() -> str:
    """The CPU's model name and feature flags (what -march=native builds for)."""
    try:
        with open("/proc/cpuinfo") as f:
            lines = [line for line in f if line.startswith(("model name", "flags", "Features"))]
        return "".join(sorted(set(lines)))
    except OSError:
        return platform.processor()


def _compiler_identity(compiler: str) -> str:
    path = shutil.which(compiler) or compiler
    try:
        info = os.stat(os.path.realpath(path))
        return f"{os.path.realpath(path)}:{info.st_size}:{info.st_mtime_ns}"
    except OSError:
        return path


def cache_key(compiler: str) -> str:
    parts = [SOURCE.read_text(), *FLAGS, _compiler_identity(compiler), platform.machine(), _cpu_features()]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


def private_dir(directory: Path) -> bool:
    """Whether `directory` is owned by this user and neither group- nor world-writable (creating it 0700)."""
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = directory.lstat()
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o022


def trusted_file(path: Path) -> bool:
    try:
        info = path.lstat()
    except OSError:
        return False
    return stat.S_ISREG(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o022


def build(compiler: str, directory: Path) -> Path:
    """Compile the kernel into `directory` (unless this exact build is there and trusted); its path.

    Written under a temporary name, probed in a child process, then renamed: a concurrent, interrupted or
    crashing build leaves no library behind under the final name.
    """
    if not private_dir(directory):
        raise OSError(f"{directory} is not a private directory of this user")
    target = directory / f"cell_kernel-{cache_key(compiler)}.so"
    if trusted_file(target):
        return target
    fd, partial = tempfile.mkstemp(suffix=".so", dir=directory)
    os.close(fd)
    try:
        subprocess.run([compiler, *FLAGS, "-o", partial, str(SOURCE), "-lm"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
        os.chmod(partial, 0o700)
        probe = subprocess.run([sys.executable, "-c", _PROBE, partial], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, timeout=60)
        if probe.returncode != 0:
            raise OSError(f"the built kernel failed its probe (exit {probe.returncode})")
        os.replace(partial, target)
    finally:
        if os.path.exists(partial):
            os.unlink(partial)
    return target


# Run in a child process on a new library: one forward step and one mask, the vector code paths.
_PROBE = """
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
F = ctypes.c_float
n, chunk = 2, 8
H = n * chunk
gates, c0, c1, h, m = (F * (2 * n + 4 * H))(), (F * H)(), (F * H)(), (F * H)(), (F * (2 * n))()
p = ctypes.c_void_p
lib.onlstm_forward_step.argtypes = [ctypes.c_int] * 4 + [p, ctypes.c_long] + [p] * 7
assert lib.onlstm_forward_step(1, n, chunk, 0, gates, 2 * n + 4 * H, c0, c1, h, m, None, None, None) == 0
assert abs(m[2 * n - 1] - 1.0) < 1e-6
"""


@functools.lru_cache(maxsize=None)
def load() -> "CellKernel | None":
    """The compiled kernel, or None where it cannot be had (then the torch path runs)."""
    if os.environ.get("ONLSTM_NO_KERNEL") or platform.system() != "Linux":
        return None
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        return None
    try:
        path = build(compiler, cache_dir())
    except (OSError, subprocess.SubprocessError):
        return _load_uncached(compiler)
    try:
        return CellKernel(ctypes.CDLL(str(path)))
    except OSError:
        return None


def _load_uncached(compiler: str) -> "CellKernel | None":
    """No usable cache: build in a fresh private directory (mkdtemp makes it 0700 under a random name),
    load, and remove the directory at once: a loaded library stays mapped after its file is gone, and
    nothing else would ever reuse the directory (each process used to leave one behind in /tmp)."""
    directory = None
    try:
        directory = tempfile.mkdtemp(prefix="onlstm-kernel-")
        return CellKernel(ctypes.CDLL(str(build(compiler, Path(directory)))))
    except (OSError, subprocess.SubprocessError):
        return None
    finally:
        if directory is not None:
            shutil.rmtree(directory, ignore_errors=True)


class Rows:
    """A float32 CPU tensor seen as rows of `width` contiguous floats, checked once; `at(row, count)` is
    the address of rows row … row + count − 1, checked against the tensor's bounds."""
    __slots__ = ("tensor", "width", "count", "base")

    def __init__(self, tensor: torch.Tensor, width: int, name: str = "buffer"):
        if tensor.device.type != "cpu" or tensor.dtype != torch.float32:
            raise KernelArgumentError(f"{name}: the C kernel takes float32 CPU tensors, not {tensor.dtype} on "
                                      f"{tensor.device}")
        if not tensor.is_contiguous() or tensor.numel() % width:
            raise KernelArgumentError(f"{name}: expected contiguous rows of {width} floats, got {tuple(tensor.shape)}")
        self.tensor, self.width, self.count, self.base = tensor, width, tensor.numel() // width, tensor.data_ptr()

    def at(self, row: int, count: int, width: int) -> int:
        if width != self.width or row < 0 or row + count > self.count:
            raise KernelArgumentError(f"rows {row}…{row + count} of width {width} are outside a buffer of "
                                      f"{self.count} rows of width {self.width}")
        return self.base + row * self.width * 4


def _strided_rows(matrix: torch.Tensor, rows: int, width: int, name: str) -> tuple[int, int]:
    """(address, row stride) of a 2-D float32 CPU matrix of `rows` rows whose rows hold ≥ width floats."""
    if matrix.device.type != "cpu" or matrix.dtype != torch.float32 or matrix.dim() != 2:
        raise KernelArgumentError(f"{name}: expected a 2-D float32 CPU matrix, got {matrix.dtype} "
                                  f"{tuple(matrix.shape)} on {matrix.device}")
    if matrix.shape[0] != rows or matrix.shape[1] < width or (rows > 1 and matrix.stride(0) < width) \
            or matrix.stride(1) != 1:
        raise KernelArgumentError(f"{name}: expected {rows} rows of {width} contiguous floats, got "
                                  f"{tuple(matrix.shape)} with strides {matrix.stride()}")
    return matrix.data_ptr(), matrix.stride(0)


class CellKernel:
    """The C entry points, each behind a check of its arguments. Row buffers are passed as (Rows, row)."""

    def __init__(self, lib: ctypes.CDLL):
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
        lib.onlstm_span_tree.argtypes = [i, i, p, p, p, ctypes.c_float, p]
        lib.onlstm_span_tree.restype = i
        self.lib = lib

    @staticmethod
    def _at(buffer, batch: int, width: int):
        return None if buffer is None else buffer[0].at(buffer[1], batch, width)

    def forward_step(self, n: int, chunk: int, symmetric: bool, gates: torch.Tensor, c_prev, c_out, h_out,
                     masters, probs=None, acts=None, tanh_c=None) -> None:
        """One step for the rows of `gates` (batch × ≥ 2n + 4H pre-activations): writes c_out, h_out, the
        master gates [ĩ | f̃] and, for a backward pass, probs, acts and tanh_c (each optional)."""
        H = n * chunk
        batch = gates.shape[0]
        address, stride = _strided_rows(gates, batch, 2 * n + 4 * H, "gates")
        at = self._at
        if self.lib.onlstm_forward_step(batch, n, chunk, int(symmetric), address, stride, at(c_prev, batch, H),
                                        at(c_out, batch, H), at(h_out, batch, H), at(masters, batch, 2 * n),
                                        at(probs, batch, 2 * n), at(acts, batch, 4 * H), at(tanh_c, batch, H)):
            raise MemoryError("out of memory in the ON-LSTM cell kernel")

    def master_gates(self, n: int, symmetric: bool, logits: torch.Tensor, masters) -> None:
        """The master gates [ĩ | f̃] alone from the rows of `logits` (batch × ≥ 2n)."""
        batch = logits.shape[0]
        address, stride = _strided_rows(logits, batch, 2 * n, "logits")
        if self.lib.onlstm_master_gates(batch, n, int(symmetric), address, stride, self._at(masters, batch, 2 * n)):
            raise MemoryError("out of memory in the ON-LSTM cell kernel")

    def backward_step(self, n: int, chunk: int, symmetric: bool, d_h, d_c, acts, tanh_c, c_prev, masters, probs,
                      d_gates: torch.Tensor) -> None:
        """One backward step: d_gates (batch × 2n + 4H) from dL/dh_t; d_c (dL/dc_t) becomes dL/dc_{t−1}."""
        H = n * chunk
        batch = d_gates.shape[0]
        address, stride = _strided_rows(d_gates, batch, 2 * n + 4 * H, "d_gates")
        at = self._at
        if self.lib.onlstm_backward_step(batch, n, chunk, int(symmetric), at(d_h, batch, H), at(d_c, batch, H),
                                         at(acts, batch, 4 * H), at(tanh_c, batch, H), at(c_prev, batch, H),
                                         at(masters, batch, 2 * n), at(probs, batch, 2 * n), address, stride):
            raise MemoryError("out of memory in the ON-LSTM cell kernel")

    def drop_mask(self, mask: torch.Tensor, seed: int, p: float) -> None:
        """Fill `mask` with 0 (probability p) or 1/(1 − p), from counter-based random numbers of `seed`."""
        if mask.device.type != "cpu" or mask.dtype != torch.float32 or not mask.is_contiguous() \
                and not mask.t().is_contiguous():
            raise KernelArgumentError("drop_mask: expected a dense float32 CPU tensor")
        if not 0 <= p < 1:
            raise KernelArgumentError(f"drop_mask: p must lie in [0, 1), got {p}")
        threshold = min(round(p * 2 ** 32), 2 ** 32 - 1)
        self.lib.onlstm_drop_mask(mask.numel(), seed % 2 ** 64, threshold, 1.0 / (1 - p), mask.data_ptr())

    def softmax_xent(self, logits: torch.Tensor, targets: torch.Tensor, losses: torch.Tensor,
                     d_logits: torch.Tensor | None) -> None:
        """losses[r] = logsumexp(logits[r]) − logits[r, targets[r]]; d_logits (optional) = softmax − onehot."""
        rows, vocab = logits.shape
        Rows(logits, vocab, "logits")
        Rows(losses, 1, "losses")
        if d_logits is not None:
            Rows(d_logits, vocab, "d_logits")
        if d_logits is not None and d_logits.shape != logits.shape or losses.numel() != rows:
            raise KernelArgumentError("softmax_xent: d_logits must be shaped like logits, losses one per row")
        if targets.dtype != torch.int64 or targets.device.type != "cpu" or not targets.is_contiguous() \
                or targets.numel() != rows:
            raise KernelArgumentError("softmax_xent: expected contiguous int64 CPU targets, one per row")
        if rows and not 0 <= int(targets.min()) <= int(targets.max()) < vocab:
            raise KernelArgumentError(f"target word ids must lie in [0, {vocab})")
        self.lib.onlstm_softmax_xent(rows, vocab, logits.data_ptr(), targets.data_ptr(), losses.data_ptr(),
                                     None if d_logits is None else d_logits.data_ptr())

    def span_tree(self, fenceposts: torch.Tensor, bias: torch.Tensor, weight: torch.Tensor, out_bias: float,
                  n: int) -> list[int]:
        """The split heights of the best tree over n words whose n + 1 fenceposts' first-layer activations
        are the first n + 1 rows of `fenceposts` (span_parser.py): scoring and CKY in C."""
        width = bias.numel()
        rows = Rows(fenceposts, width, "fenceposts")
        Rows(bias, width, "bias")
        Rows(weight, width, "weight")
        heights = (ctypes.c_int * max(n, 1))()
        if self.lib.onlstm_span_tree(n, width, rows.at(0, n + 1, width), bias.data_ptr(), weight.data_ptr(),
                                     out_bias, heights):
            raise MemoryError(f"out of memory for the span parser's tree of {n} words")
        return list(heights[:n])

