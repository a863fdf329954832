"""A run's validation curve from its log: epochs, rises of more than 10% from one epoch to the next, best."""
import re, sys
for f in sys.argv[1:]:
    v = [float(m) for m in re.findall(r"end of epoch \d+ \|.*?valid ppl ([0-9.]+)", open(f).read())]
    rises = sum(1 for a, b in zip(v, v[1:]) if b > 1.1 * a)
    print(f"{f}: {len(v)} validations, {rises} rises > 10% ({rises / max(len(v) - 1, 1):.2f} per epoch), best {min(v):.2f}")
