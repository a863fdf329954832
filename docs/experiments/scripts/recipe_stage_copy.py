"""A copy of a finished recipe's record for a rerun of its later stages (far_apart_*.sh, cut_focus_*.sh): the
split's paths pointed beside the copy, the span parser's stages (both rounds) taken out as an interrupted recipe
records them, and what a rerun changes.
usage: recipe_stage_copy.py SOURCE_RECORD DEST_RECORD [--only-family F] [--no-vote-family F] [--stage-one-seconds S]
                            [--set KEY=JSON]…
  --only-family F: keep only family F's teachers (the others train again);
  --no-vote-family F: family F's teachers stay (one may host the student) but do not vote, recorded as far apart
                      with agreement and line 0 (a probe's record, pcfg.md entry 173);
  --stage-one-seconds S: stage 1's wall time so far (the others' taken out with them);
  --set options.KEY=JSON: an option of the rerun, e.g. recipe.more_pcfgs=true."""
import argparse
import json
import os

parser = argparse.ArgumentParser()
parser.add_argument("source")
parser.add_argument("dest")
parser.add_argument("--only-family")
parser.add_argument("--no-vote-family")
parser.add_argument("--stage-one-seconds", type=float)
parser.add_argument("--set", action="append", default=[])
args = parser.parse_args()
record = json.load(open(args.source))
for name in ("corpus", "valid"):  # the recipe's split of the corpus, now beside the copy
    path = record["options"][name]
    record["options"][name] = os.path.join(os.path.dirname(os.path.realpath(args.dest)), os.path.basename(path))
record["span_parser"] = record["first_round"] = None  # the stages not yet run, as an interrupted recipe records them
record["stage_seconds"].pop("span_parser", None)
record["stage_seconds"].pop("second_round", None)
if args.only_family:
    record["teachers"] = [t for t in record["teachers"] if t.get("family", "onlstm") == args.only_family]
if args.no_vote_family:
    for teacher in record["teachers"]:
        if teacher.get("family", "onlstm") == args.no_vote_family:
            teacher["far_apart"] = {"agreement": 0.0, "line": 0.0}
if args.stage_one_seconds is not None:
    record["stage_seconds"] = {"language_models": args.stage_one_seconds}
for setting in args.set:
    key, value = setting.split("=", 1)
    *path, last = key.split(".")
    options = record["options"]
    for part in path:
        options = options[part]
    options[last] = json.loads(value)
json.dump(record, open(args.dest, "w"), indent=1)
