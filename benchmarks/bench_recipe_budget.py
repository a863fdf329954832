"""How long `onlstm train CORPUS --seeds K --time-budget B` takes against B, stage by stage (issue 50, item 10).

    python benchmarks/bench_recipe_budget.py ../shared/data/ptb-lm/ptb.train.txt --lines 20000 --budget 60

Runs the recipe on the first --lines lines of the corpus in a temporary folder, in a process of its own, and
prints the wall time, its ratio to the budget, and when each of the recipe's own lines came (the stages).
`--onlstm-path DIR` runs the onlstm_cli of another checkout (a `git worktree` of an older commit) for a before
and after measured on the same machine. Nothing is asserted: the figures go in docs/.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("corpus", type=Path)
    args.add_argument("--lines", type=int, default=20000)
    args.add_argument("--budget", type=float, default=60.0, help="--time-budget in seconds")
    args.add_argument("--seeds", type=int, default=2)
    args.add_argument("--onlstm-path", type=Path, default=None, help="a checkout whose onlstm_cli runs instead")
    o = args.parse_args()
    env = dict(os.environ)
    if o.onlstm_path is not None:
        env["PYTHONPATH"] = str(o.onlstm_path.resolve())
    with tempfile.TemporaryDirectory() as folder:
        corpus = Path(folder) / "corpus.txt"
        with open(o.corpus, encoding="utf-8") as source:
            corpus.write_text("".join(line for _, line in zip(range(o.lines), source)), encoding="utf-8")
        command = [sys.executable, "-m", "onlstm_cli", "train", str(corpus), "--seeds", str(o.seeds),
                   "--time-budget", f"{o.budget:g}", "-o", str(Path(folder) / "r.onlstm")]
        started = time.monotonic()
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, text=True, env=env)
        for line in process.stderr:
            if line.startswith("recipe:") or line.startswith("done:") or "the time budget let" in line:
                print(f"{time.monotonic() - started:7.1f} s  {line.rstrip()[:150]}")
        process.wait()
        wall = time.monotonic() - started
    print(f"exit {process.returncode}; wall {wall:.1f} s for a budget of {o.budget:g} s: {wall / o.budget:.2f} × "
          f"({o.lines:,} lines, --seeds {o.seeds})")


if __name__ == "__main__":
    main()
