"""Every relative link of the Markdown pages (README, docs/, models/, CONTRIBUTING …) reaches a file, and every
`#anchor` a heading of it, named as GitHub names it: a page moved or a heading renamed leaves no dead link."""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINK = re.compile(r"\]\(([^)\s]+)\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


NOT_OURS = ("runs", "shared", "node_modules", "build", "dist")  # runs and data beside it, pip's build copies


def pages() -> list[Path]:
    """The project's own Markdown files: none under a hidden folder (.venv, .git), runs/, shared/ (data beside
    the checkout), or build/ and dist/ (the copies `pip install .` leaves, whose links point into the package)."""
    return sorted(p for p in ROOT.rglob("*.md")
                  if not any(part.startswith(".") or part in NOT_OURS or part.endswith(".egg-info")
                             for part in p.relative_to(ROOT).parts[:-1]))


def anchors(page: Path) -> set[str]:
    """GitHub's anchors of a page's headings: lower case, punctuation but `-` and `_` dropped, spaces to `-`,
    a repeated one numbered (`-1`, `-2` …); headings inside fenced code are none."""
    seen: dict[str, int] = {}
    fenced = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        match = None if fenced else HEADING.match(line)
        if match:
            text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", match.group(2))
            slug = re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")
            seen[slug] = seen.get(slug, -1) + 1
            if seen[slug]:
                seen[f"{slug}-{seen[slug]}"] = 0
    return set(seen)


def dead_links(page: Path) -> list[str]:
    dead = []
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto: …: not ours to check
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            dead.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            dead.append(f"{target}: no such heading in {dest.relative_to(ROOT)}")
    return dead


def test_the_pages_are_found():
    names = {str(p.relative_to(ROOT)) for p in pages()}
    assert {"README.md", "CONTRIBUTING.md", "docs/training.md", "docs/training-figures.md",
            "docs/experiments/README.md", "models/zh.md"} <= names


def test_anchors_are_named_as_github_names_them(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("# The recipe: `train --seeds K`\n## Kim et al.'s batch (2026-11-28 03:53)\n## Notes\n"
                    "## Notes\n```\n# not a heading\n```\n", encoding="utf-8")
    assert anchors(page) == {"the-recipe-train---seeds-k", "kim-et-als-batch-2026-11-28-0353", "notes",
                             "notes-1"}


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_and_anchor_resolves(page):
    assert dead_links(page) == []
