"""A run's validation curve from its log: epochs, rises of more than 10% from one epoch to the next, best."""
import re, sys
from onlstm_cli.training.lm.report import swings  # the count a run's own last line gives
for f in sys.argv[1:]:
    v = [float(m) for m in re.findall(r"end of epoch \d+ \|.*?valid ppl ([0-9.]+)", open(f).read())]
    rises = swings(v)
    print(f"{f}: {len(v)} validations, {rises} rises > 10% ({rises / max(len(v) - 1, 1):.2f} per epoch), best {min(v):.2f}")
