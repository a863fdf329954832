"""The files a recipe (recipe.py) writes beside --out, and what it leaves there once it has finished.

Beside OUT: each language model, OUT.lm-seedS.onlstm, with its checkpoint (.ckpt) and the corpus as its ids
(.tokens); the span parser's checkpoint, OUT.ckpt; without --valid, the held-out split, OUT.recipe-train.txt
and OUT.recipe-valid.txt; and the record, OUT.recipe.json.

A finished recipe needs only OUT, the language models (the record names them as the teachers whose votes
made OUT: `info`, `ensemble` and `parse --model` read them; OUT itself holds the first one's language model)
and the record. The checkpoints, token files and split text are intermediate: they serve a resume, and a
larger --time-budget that sends the language models on from their checkpoints. They stay while a rerun may
need them (an interrupted recipe keeps them all), and go once the recipe has finished, unless
--keep-intermediate; a finished recipe rerun with a larger budget then says it cannot go on.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from onlstm_cli.modelfile import atomic_file
from onlstm_cli.training.run_checks import checkpoint_path, token_file_path


def lm_path(out: Path, seed: int) -> Path:
    """Where the language model of one seed goes: beside --out, named for what it is."""
    return out.with_name(f"{out.stem}.lm-seed{seed}.onlstm")


def split_paths(out: Path) -> dict[str, Path]:
    return {name: out.with_name(f"{out.stem}.recipe-{name}.txt") for name in ("train", "valid")}


def held_out_split(corpus: Path, out: Path) -> tuple[Path, Path]:
    """Every 20th non-blank line of the corpus as validation text, the others to train on, written beside
    `out` (the same corpus gives the same files, so a rerun finds what it trained on). It streams: a corpus
    is read a line at a time, as training reads it, never whole into memory."""
    paths = split_paths(out)
    with atomic_file(paths["train"], "w", refuse_symlink=True) as train, \
            atomic_file(paths["valid"], "w", refuse_symlink=True) as valid, open(corpus, "rb") as lines:
        kept = 0
        for raw in lines:
            line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
            if line.strip():
                (valid if kept % 20 == 19 else train).write(line + "\n")
                kept += 1
    return paths["train"], paths["valid"]


def intermediate_files(out: Path, seeds: list[int], held_out: bool) -> list[Path]:
    """The files only a resume (or a larger --time-budget) reads, those that are there. The split text only
    where the recipe wrote it (`held_out`): a --valid of the user's is never the recipe's to remove."""
    paths = [p for seed in seeds for p in (checkpoint_path(lm_path(out, seed)), token_file_path(lm_path(out, seed)))]
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
        text = (f"beside it {len(self.models)} language models ({first}, …: {size_text(models_bytes)}) and the "
                f"record {self.record.name}")
        if not self.intermediate_bytes:
            return text
        if self.removed:
            return (text + f"; removed {size_text(self.intermediate_bytes)} of checkpoints, token files and split "
                    "text the finished recipe no longer needs (--keep-intermediate keeps them)")
        return (text + f"; kept {size_text(self.intermediate_bytes)} of checkpoints, token files and split text "
                "(--keep-intermediate): only a rerun with a larger --time-budget reads them")


def leave_finished(out: Path, seeds: list[int], models: list[Path], record: Path, held_out: bool,
                   keep: bool) -> LeftBeside:
    """Once a recipe has finished: its intermediate files removed unless `keep`, and what is left."""
    intermediate = intermediate_files(out, seeds, held_out)
    size = sum(p.stat().st_size for p in intermediate)
    if not keep:
        for path in intermediate:
            path.unlink(missing_ok=True)
    return LeftBeside(models, record, intermediate, size, removed=not keep)
