"""The layering of docs/ARCHITECTURE.md §1, read from the code itself: harnesses -> adapters -> core.

Every import of every module of the installed packages is read from its source (module level
and inside functions alike, so a lazy import counts) and checked against the allowed edges;
the module graph must have no cycles; the core must not even name another package of ours in
a string (commands reach the CLI as entry points). A forbidden edge fails with the file and line.

The folders ``adapters/``, ``screenspot_pro/`` and ``webvoyager/`` install as
``regionfocus.adapters`` and so on (pyproject.toml): a module that imports one by its folder's
bare name would load a second copy where it runs from a checkout, and nothing where installed.
"""

from __future__ import annotations

import ast
import importlib.util
from dataclasses import dataclass
from pathlib import Path

import pytest

# the folders (= layers)
PACKAGES = ("regionfocus", "adapters", "screenspot_pro", "webvoyager", "aitz", "plugins")
PREFIX = "regionfocus"  # the import name every folder installs under
KIT = "regionfocus.kit"  # inside the core's folder, a layer of its own: what harnesses share
# layer -> the layers of ours it may import (itself always). The algorithm imports no kit.
ALLOWED = {
    "regionfocus": set(),
    "kit": {"regionfocus"},
    "adapters": {"regionfocus", "kit"},
    "screenspot_pro": {"regionfocus", "kit", "adapters"},
    "webvoyager": {"regionfocus", "kit", "adapters"},
    "aitz": {"regionfocus", "kit", "adapters"},
    # Plug-ins into other frameworks: harness-level, and nothing of ours imports them.
    "plugins": {"regionfocus", "kit", "adapters"},
}


@dataclass(frozen=True)
class Edge:
    source: str  # importing module
    target: str  # imported module (as far as it resolves to one of ours)
    where: str  # file:line


def module_files(root: Path, package: str) -> dict[str, Path]:
    """Installed dotted module name -> file, for every .py below the folder ``root/package``."""
    out = {}
    for path in sorted((root / package).rglob("*.py")):
        rel = path.relative_to(root).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if package != PREFIX:
            parts = [PREFIX, *parts]
        out[".".join(parts)] = path
    return out


def layer(dotted: str) -> str | None:
    """The folder (layer) an installed module name belongs to; None for another project's."""
    parts = dotted.split(".")
    if parts[0] != PREFIX:
        return None
    if dotted == KIT or dotted.startswith(KIT + "."):
        return "kit"
    return parts[1] if len(parts) > 1 and parts[1] in PACKAGES[1:] else PREFIX


def _resolve(module: str, is_package: bool, level: int, name: str | None) -> str:
    if level == 0:
        return name or ""
    base = module.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def imports_of(module: str, path: Path) -> list[Edge]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_package = path.name == "__init__.py"
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(module, is_package, node.level, node.module)
            # `from pkg import sub` may import the submodule pkg.sub: keep the deeper name when
            # it is a module of ours, the package otherwise (resolved against the graph later).
            names = [f"{base}.{a.name}" for a in node.names] + [base]
        else:
            continue
        for target in names:
            if target.split(".")[0] in PACKAGES:  # ours, by an installed or a bare folder name
                out.append(Edge(module, target, f"{path}:{node.lineno}"))
    return out


def core_strings_naming_others(modules: dict[str, Path]) -> list[str]:
    bad = []
    for module, path in modules.items():
        if layer(module) != PREFIX:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                name = node.value.split(":")[0]
                named = layer(name) if name.split(".")[0] == PREFIX else name.split(".")[0]
                if named in PACKAGES[1:] and node.value.strip() == node.value:
                    if all(c.isidentifier() for c in node.value.replace(":", ".").split(".")):
                        bad.append(f"{path}:{node.lineno}: names {node.value!r}")
    return bad


def check(root: Path) -> list[str]:
    """Every violation under ``root`` (a folder holding the four packages), as text."""
    modules: dict[str, Path] = {}
    for package in PACKAGES:
        if (root / package).is_dir():
            modules.update(module_files(root, package))
    problems = []
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        src_pkg = layer(module)
        for edge in imports_of(module, path):
            dst_pkg = layer(edge.target)
            if dst_pkg is None:
                problems.append(
                    f"{edge.where}: imports {edge.target} by its folder's name; use {PREFIX}.{edge.target}"
                )
                continue
            if dst_pkg != src_pkg and dst_pkg not in ALLOWED[src_pkg]:
                problems.append(f"{edge.where}: {src_pkg} must not import {dst_pkg} ({edge.target})")
            target = edge.target
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != module:
                graph[module].add(target)
    problems += [f"import cycle: {' -> '.join(c)}" for c in cycles(graph)]
    problems += core_strings_naming_others(modules)
    return problems


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each as a path.

    A package's ``__init__`` importing its own submodules, which import names back from the
    package, is the one cycle Python resolves by design; it is not counted (edges from a
    submodule to its own parent package are ignored)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def edges(v: str) -> set[str]:
        return {w for w in graph[v] if not v.startswith(w + ".")}

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges(v):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def installed_root() -> Path:
    """The checkout the packages are installed from (editable): the folder holding all four."""
    spec = importlib.util.find_spec(f"{PREFIX}.adapters")
    assert spec is not None and spec.origin is not None, "regionfocus is not installed"
    return Path(spec.origin).parent.parent


def test_the_installed_packages_keep_their_layers():
    root = installed_root()
    for package in PACKAGES:
        assert (root / package).is_dir(), f"{package} not found beside regionfocus in {root}"
    assert check(root) == []


def test_no_folder_installs_under_a_name_we_do_not_own(tmp_path: Path):
    """Outside the checkout, only our own names import (AdapterHub owns `adapters` on PyPI)."""
    import json
    import subprocess
    import sys

    code = (
        "import importlib.util, json; "
        f"print(json.dumps({{n: importlib.util.find_spec(n) is not None for n in {list(PACKAGES[1:])!r} + "
        f"{[f'{PREFIX}.{p}' for p in PACKAGES[1:]]!r}}}))"
    )
    found = json.loads(subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                                      text=True, check=True).stdout)  # fmt: skip
    assert found == {**{p: False for p in PACKAGES[1:]}, **{f"{PREFIX}.{p}": True for p in PACKAGES[1:]}}


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


CLEAN = {
    "regionfocus/__init__.py": "from .core import f\n",
    "regionfocus/core.py": "import os\ndef f():\n    return os\n",
    "adapters/__init__.py": "from regionfocus.core import f\n",
    "screenspot_pro/__init__.py": "from regionfocus.adapters import f\n",
    "webvoyager/__init__.py": "from regionfocus import f\n",
}


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (
            {"regionfocus/bad.py": "def g():\n    import regionfocus.adapters\n"},
            "regionfocus must not import adapters",
        ),
        (
            {"adapters/bad.py": "from regionfocus.webvoyager import x\n"},
            "adapters must not import webvoyager",
        ),
        ({"webvoyager/bad.py": "from adapters import x\n"}, "imports adapters by its folder's name"),
        (
            {"webvoyager/bad.py": "from regionfocus.screenspot_pro.runner import y\n"},
            "webvoyager must not import screenspot_pro",
        ),
        (
            {"screenspot_pro/bad.py": "import regionfocus.webvoyager.browser\n"},
            "screenspot_pro must not import webvoyager",
        ),
        ({"adapters/bad.py": "from regionfocus.plugins import Focus\n"}, "adapters must not import plugins"),
        (
            {"regionfocus/bad.py": "from regionfocus.plugins import Focus\n"},
            "regionfocus must not import plugins",
        ),
        (
            {"plugins/bad.py": "from regionfocus.webvoyager.browser import Browser\n"},
            "plugins must not import webvoyager",
        ),
        (
            {
                "regionfocus/a.py": "from .b import x\n",
                "regionfocus/b.py": "def g():\n    from .a import y\n",
            },
            "import cycle: regionfocus.a -> regionfocus.b",
        ),
        ({"regionfocus/cli2.py": 'MOD = "regionfocus.adapters.cli"\n'}, "names 'regionfocus.adapters.cli'"),
        ({"regionfocus/agent2.py": "from .kit.runlog import RunFolder\n"}, "regionfocus must not import kit"),
    ],
)
def test_a_forbidden_edge_is_caught(tmp_path: Path, extra: dict[str, str], expected: str):
    _write(tmp_path, CLEAN)
    assert check(tmp_path) == []
    _write(tmp_path, extra)
    problems = check(tmp_path)
    assert any(expected in p for p in problems), problems


def test_every_package_folder_is_installed():
    """A subpackage missing from pyproject.toml works in a checkout and is absent from a wheel."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib

    root = Path(__file__).resolve().parents[1]
    tool = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed, folders = set(tool["packages"]), tool["package-dir"]
    found = set()
    for package in PACKAGES:
        for init in (root / package).rglob("__init__.py"):
            rel = init.parent.relative_to(root / package).parts
            found.add(".".join((PREFIX if package == PREFIX else f"{PREFIX}.{package}", *rel)))
    assert found == listed
    assert {f"{PREFIX}.{p}": p for p in PACKAGES[1:]} == folders
