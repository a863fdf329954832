"""The files a recipe (recipe/runner.py) writes beside --out, and what it leaves there once it has finished.

Beside OUT: each language model, OUT.lm-seedS.onlstm, with its checkpoint (.ckpt) and the corpus as its ids
(.tokens); the span parser's checkpoint, OUT.ckpt; where a second round follows the first span parser, that one's
file, OUT.round1.onlstm, and its checkpoint; without --valid, the held-out split, OUT.recipe-train.txt
and OUT.recipe-valid.txt; and the record, OUT.recipe.json.

A finished recipe needs only OUT, the language models (the record names them as the teachers whose votes
made OUT: `info`, `ensemble` and `parse --model` read them; OUT itself holds the first one's language model),
the first span parser where a second round trained on its votes, and the record. The checkpoints, token files and
split text are intermediate: they serve a resume, and a larger --time-budget that sends the language models on
from their checkpoints. They stay while a rerun may need them (an interrupted recipe keeps them all), and go once
the recipe has finished, unless --keep-intermediate; a finished recipe rerun with a larger budget then says it
cannot go on.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from onlstm_cli.errors import TrainingError
from onlstm_cli.files import bounded_lines, lock_path
from onlstm_cli.modelfile import atomic_file, glob_escape
from onlstm_cli.training.run.files import checkpoint_path, run_outputs, token_file_path

RECORD_SUFFIX = ".recipe.json"


def state_path(out: Path) -> Path:
    """The recipe's record, beside --out."""
    return Path(str(out) + RECORD_SUFFIX)


def recipe_seeds(first: int, count: int) -> list[int]:
    """The seeds of a recipe's language models: --seed, --seed + 1, …"""
    return [first + k for k in range(count)]


def lm_path(out: Path, seed: int) -> Path:
    """Where the language model of one seed goes: beside --out, named for what it is."""
    return out.with_name(f"{out.stem}.lm-seed{seed}.onlstm")


def first_round_path(out: Path) -> Path:
    """Where the first span parser goes where a second round follows it (recipe/second_round.py): beside --out."""
    return out.with_name(f"{out.stem}.round1.onlstm")


def split_paths(out: Path) -> dict[str, Path]:
    return {name: out.with_name(f"{out.stem}.recipe-{name}.txt") for name in ("train", "valid")}


def recipe_outputs(out: Path, teachers: list[tuple[str, Path]], held_out: bool) -> list[tuple[str, Path]]:
    """Every file a recipe writes, replaces or removes, each as (what the user calls it, path), for
    files.check_outputs against its inputs: --out and its checkpoint, each language model's files, the
    held-out split (where the recipe makes it), the record, the files the student check writes, and the locks.
    `teachers`: each teacher's model file, as (what the user calls it, path)."""
    from onlstm_cli.training.student.check import consensus_path, student_path
    files = run_outputs(out)
    for what, path in teachers:
        files += run_outputs(path, f"the recipe's {what[len('the '):]}")
    if held_out:
        files += [(f"the recipe's held-out split ({name})", path) for name, path in split_paths(out).items()]
    return files + [("the recipe's record", state_path(out)), ("the student check's file", student_path(out)),
                    ("the student check's file", consensus_path(out)), ("the recipe's lock", lock_path(recipe_stem(out)))]


def recipe_stem(out: Path) -> Path:
    """What a recipe locks while it runs (files.output_lock), named as its files are, from --out's stem: two
    recipes whose files would have the same names cannot run at once."""
    return out.with_name(f"{out.stem}.recipe")


def check_names_free(out: Path) -> None:
    """Refuse a recipe whose files beside --out are named like those of another recipe's (they are named from
    --out's stem: -o x.onlstm and -o x.v2 both make x.lm-seed1111.onlstm and x.recipe-train.txt), so that one
    never trains over, or removes, the other's."""
    for record in sorted(out.parent.glob(f"{glob_escape(out.stem)}*{RECORD_SUFFIX}")):
        other = record.with_name(record.name[:-len(RECORD_SUFFIX)])
        if other.name != out.name and other.stem == out.stem:
            raise TrainingError(f"--out {out.name}: the recipe of {other.name} ({record.name}) is beside it, and its "
                                f"files are named the same ({out.stem}.lm-seedS.onlstm, {out.stem}.recipe-*.txt); give "
                                "--out a name whose part before the last dot is its own")


def utf8_lines(corpus: Path):
    """The corpus's lines, decoded as a plain `train` reads them (corpus.iter_sentences): bytes that are not UTF-8
    are refused in one line, never trained on as guesses, and so is a line too long to be one (files.bounded_lines)."""
    with open(corpus, "rb") as lines:
        for number, raw in enumerate(bounded_lines(lines, corpus), 1):  # a line beyond MAX_LINE_BYTES is refused
            try:
                yield raw.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError as e:
                raise TrainingError(f"{corpus} is not UTF-8 text (line {number}, byte {e.start})") from None


def held_out_split(corpus: Path, out: Path) -> tuple[Path, Path]:
    """Every 20th non-blank line of the corpus as validation text, the others to train on, written beside
    `out` (the same corpus gives the same files, so a rerun finds what it trained on). It streams: a corpus
    is read a line at a time, as training reads it, never whole into memory."""
    paths = split_paths(out)
    with atomic_file(paths["train"], "w", refuse_symlink=True) as train, \
            atomic_file(paths["valid"], "w", refuse_symlink=True) as valid:
        kept = 0
        for line in utf8_lines(corpus):
            if line.strip():
                (valid if kept % 20 == 19 else train).write(line + "\n")
                kept += 1
    return paths["train"], paths["valid"]


def recipe_files(out: Path) -> list[Path]:
    """The files of the recipe of `out` that are there, its record last: what to delete to start it anew (each
    model of a seed with its checkpoint and token file, found by name, so that a seed stopped before its first
    model file counts too; not the locks, which a run removes as it ends)."""
    from onlstm_cli.training.student.check import consensus_path, student_path
    stem = glob_escape(out.stem)
    seeds = sorted(p for family in ("lm", "pcfg") for p in out.parent.glob(f"{stem}.{family}-seed*"))
    first = first_round_path(out)
    paths = [out, checkpoint_path(out), token_file_path(out), student_path(out), consensus_path(out), *seeds, first,
             checkpoint_path(first), *split_paths(out).values(), state_path(out)]
    return [p for p in dict.fromkeys(paths) if p.is_file() or p.is_symlink()]


def intermediate_files(out: Path, teachers: list[Path], held_out: bool) -> list[Path]:
    """The files only a resume (or a larger --time-budget) reads, those that are there. The split text only
    where the recipe wrote it (`held_out`): a --valid of the user's is never the recipe's to remove."""
    paths = [p for teacher in teachers for p in (checkpoint_path(teacher), token_file_path(teacher))]
    paths.append(checkpoint_path(out))
    if held_out:
        paths += split_paths(out).values()
    return [p for p in paths if p.is_file() and not p.is_symlink()]  # a link planted there is not ours


def size_text(size: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} bytes"


@dataclass
class LeftBeside:
    """What a finished recipe leaves beside --out: its language models and record, and the intermediate files,
    removed (by default) or kept (--keep-intermediate)."""
    models: list[Path]
    record: Path
    intermediate: list[Path] = field(default_factory=list)
    intermediate_bytes: int = 0
    removed: bool = False

    def text(self) -> str:
        models_bytes = sum(p.stat().st_size for p in self.models if p.exists())
        first = self.models[0].name if self.models else "-"
        kinds = "language models" if all(lm_path_name(p) for p in self.models) else "models"  # other families' too
        text = (f"beside it {len(self.models)} {kinds} ({first}, …: {size_text(models_bytes)}) and the "
                f"record {self.record.name}")
        if not self.intermediate_bytes:
            return text
        if self.removed:
            return (text + f"; removed {size_text(self.intermediate_bytes)} of checkpoints, token files and split "
                    "text the finished recipe no longer needs (--keep-intermediate keeps them)")
        return (text + f"; kept {size_text(self.intermediate_bytes)} of checkpoints, token files and split text "
                "(--keep-intermediate): only a rerun with a larger --time-budget reads them")


def leave_finished(out: Path, teachers: list[Path], models: list[Path], record: Path, held_out: bool,
                   keep: bool) -> LeftBeside:
    """Once a recipe has finished: its intermediate files removed unless `keep`, and what is left."""
    intermediate = intermediate_files(out, teachers, held_out)
    size = sum(p.stat().st_size for p in intermediate)
    if not keep:
        for path in intermediate:
            path.unlink(missing_ok=True)
    return LeftBeside(models, record, intermediate, size, removed=not keep)


def lm_path_name(path: Path) -> bool:
    """Whether `path` is named as `lm_path` names a recipe's language model (OUT.lm-seedS.onlstm)."""
    return ".lm-seed" in path.name
