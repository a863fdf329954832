"""The README's examples run as written: its shell lines that need only the bundled models (and the shared
data, where it is beside the checkout), and its Python blocks, whose `# (S …` comments must be what they
print. Training commands, which take minutes to hours, are left to the tests of `train`."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
# lines that need what a reader brings (their own corpus or sentences, a trained model, hours of CPU)
NOT_RUN = re.compile(r"onlstm train|big\.txt|my_|pt\.onlstm|en-st\.onlstm|mine\.onlstm|pip install|torchrun|"
                     r"python3? -m venv|benchmarks/|scripts/|\bcd\b|rm -rf|10k\.txt")


def code_blocks() -> list[list[str]]:
    """The README's indented code blocks, each as its lines (indent removed)."""
    blocks, current = [], []
    for line in (ROOT / "README.md").read_text(encoding="utf-8").splitlines() + [""]:
        if line.startswith("    ") or (current and not line.strip()):
            current.append(line[4:])
        elif current:
            blocks.append(current)
            current = []
    return [block for block in blocks if any(line.strip() for line in block)]


def shell_lines() -> list[str]:
    lines = []
    for block in code_blocks():
        for line in block:
            command = line.split("  #")[0].strip()
            if re.match(r"(echo|printf|onlstm) ", command) and not NOT_RUN.search(command):
                lines.append(command)
    return lines


def python_blocks() -> list[str]:
    return ["\n".join(block) for block in code_blocks() if block[0].startswith(("from onlstm_cli import Parser",
                                                                               "import spacy"))]


def test_the_readme_has_examples_to_run():
    assert len(shell_lines()) >= 6 and len(python_blocks()) >= 2


def writes_a_file(line: str) -> bool:
    return re.match(r"(echo|printf) ", line) is not None and " > " in line


@pytest.mark.parametrize("line", [line for line in shell_lines() if not writes_a_file(line)])
def test_the_readme_shell_examples_run(line, tmp_path):
    """Each line in its own test, so that test workers share them out; the lines that write a file for
    later lines (`printf … > sentences.txt`) run first, as a reader would have run them."""
    if "../shared" in line and not SHARED.is_dir():
        pytest.skip("the shared data is not beside the checkout")
    (tmp_path / "work").mkdir()
    os.symlink(SHARED, tmp_path / "shared")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    lines = shell_lines()
    for command in [earlier for earlier in lines[:lines.index(line)] if writes_a_file(earlier)] + [line]:
        quiet = "" if " > " in command else " > /dev/null"  # a line's own redirect writes its file
        result = subprocess.run(["bash", "-c", f"set -o pipefail; {command}{quiet}"], cwd=tmp_path / "work",
                                capture_output=True, text=True, env=env, timeout=600, stdin=subprocess.DEVNULL)
        assert result.returncode == 0, f"{command}: {result.stderr[-500:]}"
    written = re.search(r" > (\S+)$", line)
    if written:
        assert (tmp_path / "work" / written.group(1)).stat().st_size > 0, f"{line} wrote nothing"


def test_the_readme_python_examples_run_and_print_what_they_say(tmp_path):
    pytest.importorskip("spacy")
    (tmp_path / "sentences.txt").write_text("The cat sat on the mat.\nA dog barked.\n")
    for block in python_blocks():
        if "dask" in block:
            pytest.importorskip("dask.bag")
        result = subprocess.run([sys.executable, "-c", block], cwd=tmp_path, capture_output=True, text=True,
                                timeout=600)
        assert result.returncode == 0, f"{block[:200]}: {result.stderr[-800:]}"
        for said in re.findall(r"print\(.*\)\s+# (\(S .*)", block):
            shown = said.rstrip(".").rstrip()
            assert any(line.startswith(shown) for line in result.stdout.splitlines()), (said, result.stdout[:500])
