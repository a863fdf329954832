"""A student never below its teachers: after the recipe's span parser has trained, how well it agrees with its
teachers' consensus on the validation text is measured beside how well the teachers themselves agree with it, on
average and each one (the best is named).
Where the student is the worse, the consensus parser (the voting language models as one ensemble file, whose
distances are combined per word) is measured too, and the better of the two is shipped. No gold tree is read.
"""
from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path

from onlstm_cli.errors import OnlstmError
from onlstm_cli.evaluation.metrics import mutual_agreement, pairwise_agreement
from onlstm_cli.induction.teachers import model_trees
from onlstm_cli.modelfile import atomic_save, load_model, read_archive
from onlstm_cli.training.student.votes import Votes, consensus_targets


@dataclass
class StudentCheck:
    student: float                 # the student's mean sentence F1 with the teachers' consensus tree (%)
    teachers: float                # the teachers' (parse layers') mean agreement with that consensus
    mutual: float                  # the teachers' mean agreement with each other
    consensus_parser: float | None = None  # the consensus parser's, where it was measured
    shipped: str = "student"       # "student" or "consensus parser"
    best_teacher: str | None = None          # the teacher (file name) whose own trees agree most with the consensus
    best_teacher_agreement: float | None = None  # its agreement: the student is compared with every teacher

    def text(self) -> str:
        said = (f"the span parser agrees {self.student:.1f} with its teachers' consensus on the validation text, "
                f"the teachers {self.teachers:.1f} (with each other {self.mutual:.1f})")
        said += best_teacher_text(asdict(self))
        if self.consensus_parser is None:
            return said
        return (said + f"; the student is below its teachers, and the consensus parser (the voting language "
                f"models as one ensemble) agrees {self.consensus_parser:.1f}: shipped the {self.shipped}")


def best_teacher_text(check: dict) -> str:
    """", the best of them NAME A" (and where the student agrees less, that it does); "" for a check recorded before
    it compared the student with every teacher. Agreement, not gold trees: a teacher's own trees are among the votes
    it is compared with, so a student above it on gold trees can agree less (docs/experiments/pcfg.md, entry 153)."""
    best, name = check.get("best_teacher_agreement"), check.get("best_teacher")
    if not isinstance(best, (int, float)) or not isinstance(check.get("student"), (int, float)):
        return ""
    below = ("; the student agrees less with the consensus than that teacher, whose own trees are among the votes"
             if check["student"] < best else "")
    return f", the best of them {name} {best:.1f}{below}"


def agreement(trees: list[set], others: list[set]) -> float:
    return 100 * pairwise_agreement([trees, others])[0, 1]


def check_student(out: Path, teachers: list[Path] | None, votes: Votes, log) -> StudentCheck | None:
    """Measure the student at `out` against the consensus of the `votes` it learned (their validation part: the
    teachers' trees and the branching voter as the run weighed them); ship the consensus parser of `teachers`
    (their model files, where they can be one ensemble file; else None) instead where it is the better. None where
    no validation sentence has 3 words or more."""
    keep = [k for k, words in enumerate(votes.valid_sentences) if len(words) >= 3]  # shorter ones have one tree
    if not keep:
        return None
    sentences = [votes.valid_sentences[k] for k in keep]
    consensus = [set(spans) for spans in consensus_targets([votes.valid_spans[k] for k in keep],
                                                           [len(words) for words in sentences])]
    parse_layers = [votes.as_voted([trees[k] for k in keep], keep) for trees in votes.valid_parse_trees]
    each = [agreement(t, consensus) for t in parse_layers]
    best = max(range(len(each)), key=each.__getitem__)
    student = votes.as_voted(model_trees(load_model(out), sentences, span_parsers=True), keep)  # as `parse` cuts
    check = StudentCheck(
        student=agreement(student, consensus),
        teachers=sum(each) / len(each),
        mutual=100 * sum(mutual_agreement(parse_layers)) / len(parse_layers) if len(parse_layers) > 1 else 100.0,
        best_teacher=Path(votes.teacher_names[best]).name, best_teacher_agreement=each[best])
    if check.student < check.teachers and teachers:
        ship_the_better(out, teachers, sentences, consensus, check, log, votes.split,
                        lambda trees: votes.as_voted(trees, keep))
    record_check(out, check)
    return check


def student_path(out: Path) -> Path:
    """Where the student goes when the consensus parser is shipped to `out` in its place."""
    return out.with_name(f"{out.stem}.student.onlstm")


def consensus_path(out: Path) -> Path:
    """Where the consensus parser is written, beside the student it is compared with."""
    return out.with_name(f"{out.stem}.consensus.onlstm")


def ship_the_better(out: Path, teachers: list[Path], sentences, consensus, check: StudentCheck, log,
                    split: str | None = None, as_voted=lambda trees: trees) -> None:
    """The consensus parser beside the student; the one that agrees more with the consensus goes to `out`, the
    other stays beside it (OUT.student.onlstm or OUT.consensus.onlstm). `split`: the rule the votes' trees were
    built with, where the recipe chose it; `as_voted`: its trees as the votes held theirs (Votes.as_voted)."""
    from onlstm_cli.config import EnsembleConfig
    from onlstm_cli.ensemble import make_ensemble
    parser_path = consensus_path(out)
    try:
        if len(teachers) > 1:
            parser = make_ensemble(teachers, parser_path, EnsembleConfig(combine="rank", split=split))
        else:
            atomic_save({**read_archive(teachers[0]), **({"split": split} if split else {})}, parser_path)
            parser = load_model(parser_path)
    except OnlstmError as e:  # teachers that cannot be one file (other vocabularies): the student stays
        log(f"recipe: no consensus parser to compare the student with ({e})")
        return
    check.consensus_parser = agreement(as_voted(model_trees(parser, sentences)), consensus)
    if check.consensus_parser > check.student:
        check.shipped = "consensus parser"
        os.replace(out, student_path(out))
        os.replace(parser_path, out)


def record_check(out: Path, check: StudentCheck) -> None:
    """The check into the shipped file: the span parser's recipe record, or an ensemble's own meta."""
    archive = read_archive(out)
    recipe = archive.get("span_parser", {}).get("meta", {}).get("recipe")
    if isinstance(recipe, dict):
        recipe["student_check"] = asdict(check)
    else:  # the consensus parser shipped: the student's recipe record goes with it, so that `info` shows the recipe
        archive["meta"] = {**archive.get("meta", {}), "student_check": asdict(check), **student_recipe(out)}
    atomic_save(archive, out)


def student_recipe(out: Path) -> dict:
    """{"self_training_recipe": the recipe record of the student beside `out`, with its stage times}, or {}
    where the student was not made by a recipe."""
    student = student_path(out)
    meta = read_archive(student).get("span_parser", {}).get("meta", {}) if student.is_file() else {}
    recipe = meta.get("recipe")
    if not isinstance(recipe, dict):
        return {}
    return {"self_training_recipe": {**recipe, "training_seconds": meta.get("seconds"),
                                     "teachers_parse_seconds": meta.get("parse_seconds")}}
