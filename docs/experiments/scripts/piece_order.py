"""How a model's pieces are put together, where its tree is cut at punctuation marks (turkish.md): `evaluate`'s
cut-at-marks figure for a model file, with the pieces joined as now (by the model's distances at each piece's
start), left-branching, or right-branching; inside each piece the model's tree is kept.

    python docs/experiments/scripts/piece_order.py GOLD FILE...
"""
import json
import subprocess
import sys
import tempfile

CHILD = r'''
import sys
import onlstm_cli.evaluation.model_scores as scores
from onlstm_cli.cli.commands import app  # registers the commands

order = sys.argv[1]
if order != "model":
    slope = 1.0 if order == "left" else -1.0   # left: the last piece splits off first, as left-branching trees do

    def cut(self, distances):
        if self.cut_level is None or not any(self.cut_level):
            return distances
        low, lift, n = min(distances), max(distances) - min(distances) + 1.0, len(distances)
        return [low + lift * level + (lift - 1.0) * (0.5 + slope * (k / n - 0.5)) if level else d + lift * level
                for k, (d, level) in enumerate(zip(distances, self.cut_level))]

    scores.Leaves.cut = cut
app(["evaluate", "--gold", sys.argv[2], "-m", sys.argv[3], "--json"], standalone_mode=False)
'''

gold, files = sys.argv[1], sys.argv[2:]
for path in files:
    figures = []
    for order in ("model", "left", "right"):
        with tempfile.TemporaryFile("w+") as out:
            subprocess.run([sys.executable, "-c", CHILD, order, gold, path], stdout=out, stderr=subprocess.DEVNULL,
                           check=True)
            out.seek(0)
            systems = json.load(out)["systems"]
        figures.append(f"{order} {next(iter(systems.values()))['sentence_f1']:.2f}")
    print(f"{path}: " + ", ".join(figures))
