"""The package's shape (issue 39): layers that only point down, and modules and functions small enough to read.
An AST walk over every `import`, those inside functions included."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "onlstm_cli"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}


def imports(name: str) -> set[str]:
    """The package's modules that module `name` imports, wherever in it the import stands."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in MODULES:
                target = target.rpartition(".")[0]
            if target.startswith("onlstm_cli") and target != name:
                found.add(target)
    return found


def folder(name: str) -> str:
    """onlstm_cli.text.vocab → onlstm_cli.text; a top-level module is its own folder."""
    return ".".join(name.split(".")[:2])


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected parts of more than one node (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in edges.get(node, ()):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            part = []
            while not part or part[-1] != node:
                part.append(stack.pop())
                on_stack.discard(part[-1])
            if len(part) > 1:
                found.append(sorted(part))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


EDGES = {name: {t for t in imports(name) if t != "onlstm_cli"} for name in MODULES}  # the package's lazy table


def test_no_module_imports_one_that_imports_it_back():
    assert cycles(EDGES) == []


def test_no_folder_imports_one_that_imports_it_back():
    folders: dict[str, set[str]] = {}
    for name, targets in EDGES.items():
        folders.setdefault(folder(name), set()).update(folder(t) for t in targets if folder(t) != folder(name))
    assert cycles(folders) == []


def test_the_checker_finds_a_circle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_module_is_long_and_no_function_either(name):
    """No module over 450 lines; no class over 250 and no function over 60 outside the fast/ kernels."""
    source = MODULES[name].read_text(encoding="utf-8")
    assert len(source.splitlines()) <= 450
    if ".fast" in name:
        return
    long = [node.name for node in ast.walk(ast.parse(source))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno + 1 > 60]
    assert long == []
    large = [node.name for node in ast.walk(ast.parse(source))
             if isinstance(node, ast.ClassDef) and node.end_lineno - node.lineno + 1 > 250]
    assert large == []


# docs/layout.md's layers, lowest first: a module imports from its own layer and the ones below, never above.
# Folders are named as `layer_of` reads them: onlstm_cli.text, onlstm_cli.training.lm, onlstm_cli.ensemble.
LAYERS = [
    {"errors", "config", "trees", "signals", "console", "files"},
    {"text"},
    {"fast"},
    {"lm", "span", "pcfg"},
    {"model_archive", "model_meta"},
    {"pcfg_file"},
    {"modelfile", "ensemble"},
    {"induction"},
    {"evaluation"},
    {"training.run"},
    {"training.lm", "training.pcfg"},
    {"training.student"},
    {"training", "training.recipe"},
    {"pictures", "writers", "info", "api", "spacy_component"},
    {"cli"},
    {"__main__", ""},
]


def layer_of(name: str) -> int:
    """The rank in LAYERS of module `name` (training's subfolders each a folder of their own)."""
    parts = name.split(".")[1:]
    key = ".".join(parts[:2]) if parts[:1] == ["training"] and len(parts) > 2 else ".".join(parts[:1])
    ranks = [rank for rank, folders in enumerate(LAYERS) if key in folders]
    assert ranks, f"{name}: its folder {key!r} is in no layer of LAYERS (docs/layout.md)"
    return ranks[0]


def test_every_import_points_down_the_layers_of_docs_layout():
    upward = sorted(f"{name} → {target}" for name, targets in EDGES.items() for target in targets
                    if layer_of(target) > layer_of(name))
    assert upward == []


def test_the_layer_checker_finds_an_import_that_points_up():
    assert layer_of("onlstm_cli.training.student.votes") > layer_of("onlstm_cli.training.lm.train")
    assert layer_of("onlstm_cli.text.vocab") < layer_of("onlstm_cli.modelfile") < layer_of("onlstm_cli.cli.app")


def test_every_folder_of_the_package_is_installed():
    """pyproject.toml names the packages a wheel holds: a folder missing there imports from a checkout (editable)
    and fails once installed (issue 51's subpackages did, on CI's plain `pip install .`)."""
    import tomllib
    listed = set(tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text(encoding="utf-8"))
                 ["tool"]["setuptools"]["packages"])
    folders = {module_name(init) for init in PACKAGE.rglob("__init__.py")}
    assert folders - listed == set()
