"""The README's examples run as written: its shell lines that need only the bundled models (and the shared
data, where it is beside the checkout), and its Python blocks, each saved as a script and run as one. Every
output the README shows is what the example prints: a `$ command` line's output is the lines under it, and a
`print(…)  # …` comment is a line the block prints. Training commands, which take minutes to hours, are left
to the tests of `train`."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import read_terminal

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
# lines that need what a reader brings (their own corpus or sentences, a trained model, hours of CPU)
NOT_RUN = re.compile(r"onlstm train|big\.txt|my_|my\.onlstm|pt\.onlstm|en-st\.onlstm|mine\.onlstm|pip install|torchrun|"
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


def shown_outputs() -> list[tuple[str, list[str]]]:
    """Each `$ command` of the README with the output shown under it (its lines up to the next `$` or blank)."""
    shown = []
    for block in code_blocks():
        output = None
        for line in block:
            if line.startswith("$ "):
                output = []
                shown.append((line[2:].split("  #")[0].strip(), output))
            elif not line.strip():
                output = None
            elif output is not None:
                output.append(line)
    return [(command, output) for command, output in shown if output]


def shell_lines() -> list[str]:
    lines = []
    for block in code_blocks():
        for line in block:
            command = line.removeprefix("$ ").split("  #")[0].strip()
            if re.match(r"(echo|printf|onlstm) ", command) and not NOT_RUN.search(command):
                lines.append(command)
    return lines


def python_blocks() -> list[str]:
    """Every Python block but the one that trains (self-training takes minutes to hours: the tests of `train`)."""
    return ["\n".join(block) for block in code_blocks()
            if re.match(r"(import|from) \w", block[0]) and "self_train(" not in "\n".join(block)]


def test_the_readme_has_examples_to_run():
    assert len(shell_lines()) >= 6 and len(python_blocks()) >= 3 and len(shown_outputs()) >= 3


def run_in_readers_folder(line: str, tmp_path: Path, on_a_terminal: bool = False) -> subprocess.CompletedProcess:
    """Run a README line in a fresh folder beside the shared data, after the lines before it that write a file
    (`printf … > sentences.txt`), as a reader would have run them; the line itself with its output to a
    pseudo-terminal where `on_a_terminal`."""
    if "../shared" in line and not SHARED.is_dir():
        pytest.skip("the shared data is not beside the checkout")
    (tmp_path / "work").mkdir()
    os.symlink(SHARED, tmp_path / "shared")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    lines = shell_lines()
    for command in [earlier for earlier in lines[:lines.index(line)] if writes_a_file(earlier)] + [line]:
        run = on_terminal if on_a_terminal and command == line else subprocess.run
        result = run(["bash", "-c", f"set -o pipefail; {command}"], cwd=tmp_path / "work",
                     capture_output=True, text=True, env=env, timeout=600, stdin=subprocess.DEVNULL)
        assert result.returncode == 0, f"{command}: {result.stderr[-500:]}"
    return result


def on_terminal(args: list[str], **options) -> subprocess.CompletedProcess:
    """subprocess.run with stdout a pseudo-terminal (what a reader's terminal is), read back as text."""
    import pty
    options.pop("capture_output")
    timeout = options.pop("timeout")
    reader, writer = pty.openpty()
    with subprocess.Popen(args, stdout=writer, stderr=subprocess.PIPE, **options) as process:
        os.close(writer)
        shown = read_terminal(reader, process, timeout)
        stderr = process.stderr.read()
        process.wait(timeout)
    os.close(reader)
    # what a reader sees: the text, its colours (SGR escapes) rendered away
    stdout = re.sub(r"\x1b\[[0-9;]*m", "", shown.decode("utf-8").replace("\r\n", "\n"))
    return subprocess.CompletedProcess(args, process.returncode, stdout, stderr)


def writes_a_file(line: str) -> bool:
    return re.match(r"(echo|printf) ", line) is not None and " > " in line


@pytest.mark.parametrize("line", [line for line in shell_lines()
                                  if not writes_a_file(line) and line not in dict(shown_outputs())])
def test_the_readme_shell_examples_run(line, tmp_path):
    """Each line in its own test, so that test workers share them out."""
    run_in_readers_folder(line, tmp_path)
    written = re.search(r" > (\S+)$", line)
    if written:
        assert (tmp_path / "work" / written.group(1)).stat().st_size > 0, f"{line} wrote nothing"


@pytest.mark.parametrize("line,output", shown_outputs())
def test_the_readme_shows_what_its_commands_print(line, output, tmp_path):
    """A drawn tree is what a terminal shows: that example's output is read from a pseudo-terminal, the others'
    from a pipe (issue 53: the Quickstart showed a bracket line where a terminal draws the tree)."""
    on_a_terminal = any("└──" in shown for shown in output)
    assert run_in_readers_folder(line, tmp_path, on_a_terminal).stdout.splitlines() == output


def test_the_readme_python_examples_run_and_print_what_they_say(tmp_path):
    """Each block saved as a file and run as a script, as a reader would (worker processes that spawn import it
    again)."""
    pytest.importorskip("spacy")
    (tmp_path / "sentences.txt").write_text("The cat sat on the mat.\nA dog barked.\n")
    for k, block in enumerate(python_blocks()):
        if "dask" in block:
            pytest.importorskip("dask.bag")
        script = tmp_path / f"example{k}.py"
        script.write_text(block + "\n", encoding="utf-8")
        result = subprocess.run([sys.executable, script.name], cwd=tmp_path, capture_output=True, text=True,
                                timeout=600)
        assert result.returncode == 0, f"{block[:200]}: {result.stderr[-800:]}"
        for said in re.findall(r"^\s*print\(.*\)\s+# (.*)$", block, flags=re.M):
            assert said in result.stdout.splitlines(), (said, result.stdout[:800])
