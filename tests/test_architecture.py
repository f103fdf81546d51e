"""The package layout docs/architecture.md describes, checked: at most 15 modules at the top level, every
safety module in one package (the guard), the guard and the database layer below the stages, no two modules
of one name for different jobs, no import cycle at module level, one package per method, none importing
another (only the pipeline knows them all), shared pieces below the methods, and stages of one shape."""

from __future__ import annotations

import ast
import importlib
import inspect
import sys
from pathlib import Path

import pytest

from verifiedsql import pipeline
from verifiedsql.config import Options
from verifiedsql.stages.base import Pool

PACKAGE = Path(pipeline.__file__).parent
METHODS = ("pvsql", "dpc", "reforce", "r3", "vet")
# Everything that keeps the user's database and the host safe (docs/safety.md): the two layers and theirs.
SAFETY_MODULES = ("safety", "readonly", "functions", "function_calls", "callscan", "bounded", "watchdog",
                  "boundary", "session_state", "privileges", "sqlite_hooks", "redact", "echo", "contain",
                  "statements", "sqlshape", "transactions", "sandbox", "jsontree", "deadline")
# Names that more than one package uses, each for the same role in its own package.
SHARED_NAMES = {
    "base": "what the package's modules share (llm: the model protocol; stages: the stage shapes)",
    "cli": "the package's command line (the library's; the bench's subcommands)",
    "data": "the data the package's stage or harness reads",
    "prompts": "the package's prompts",
    "stage": "the method's stage",
    "report": "the package's report (the verification report; the bench run's report)",
    "scope": "out-of-scope questions (the answer step's rules; the bench command that measures them)",
}


def import_target(node: ast.ImportFrom, package: str) -> str:
    """The absolute module a ``from ... import`` in ``package`` names (relative levels resolved)."""
    if not node.level:
        return node.module or ""
    base = package.split(".")[: len(package.split(".")) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path) -> set[str]:
    """Every module ``path`` imports, relative imports resolved, ``from x import y`` giving x and x.y."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            target = import_target(node, package)
            found.add(target)
            found.update(f"{target}.{alias.name}" for alias in node.names)
    return found


def method_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[:2] == ["verifiedsql", "stages"] and parts[2] in METHODS else None


def test_no_module_imports_a_method_package_other_than_its_own():
    offences = []
    for path in sorted(PACKAGE.rglob("*.py")):
        name = module_name(path)
        if name == "verifiedsql.pipeline":
            continue
        own = method_of(name)
        for target in imported_modules(path):
            method = method_of(target)
            if method is not None and method != own:
                offences.append(f"{name} imports {target}")
    assert not offences, offences


@pytest.mark.parametrize("method", METHODS)
def test_each_method_package_says_what_it_is(method):
    package = importlib.import_module(f"verifiedsql.stages.{method}")
    doc = package.__doc__ or ""
    assert "docs/papers.md" in doc and "section" in doc.lower(), "the paper and its section"
    assert "option" in doc.lower() and "report" in doc, "the options and the report field"
    assert package.__all__ and all(name in doc for name in package.__all__), "the entry point"
    assert (PACKAGE / "stages" / method / "prompts.py").exists(), "its prompts beside its code"


def test_the_pipeline_lists_stages_of_one_shape_in_order():
    assert [s.name for s in pipeline.CONTEXT_STAGES] == ["compress", "ground", "probe", "literals", "constraints",
                                                         "verify"]
    assert [s.name for s in pipeline.POOL_STAGES] == ["consensus", "vet", "review", "dpc"]
    for stage in pipeline.CONTEXT_STAGES:
        assert list(inspect.signature(stage.enabled).parameters) == ["options"]
        assert list(inspect.signature(stage.run).parameters) == ["ctx"]
        # every optional stage is off by default; the literal checks and the constraint repair (no model call)
        # are on
        assert stage.enabled(Options()) is (stage.name in ("literals", "constraints"))
    for stage in pipeline.POOL_STAGES:
        assert list(inspect.signature(stage.applies).parameters) == ["options", "pool"]
        assert list(inspect.signature(stage.run).parameters) == ["ctx", "pool"]


def test_pool_stages_decide_from_the_options_and_the_pool_alone():
    empty = Pool([], [], None)
    on = Options(consensus=True, vet=True, review=True, dpc=True)
    consensus, vet, review, dpc = pipeline.POOL_STAGES
    assert consensus.applies(on, empty)  # every candidate failed: explore and re-vote
    assert vet.applies(on, empty)  # VET may answer when nothing ran
    assert not review.applies(on, empty) and not dpc.applies(on, empty)  # nothing selected to review or test
    assert not any(stage.applies(Options(), empty) for stage in pipeline.POOL_STAGES)


def test_no_stage_module_imports_the_pipeline():
    for path in sorted((PACKAGE / "stages").rglob("*.py")):
        assert "verifiedsql.pipeline" not in imported_modules(path), path


def top_level_imports(path: Path, modules: set[str], package_dir: Path = PACKAGE) -> set[str]:
    """The modules of ``modules`` that importing ``path`` imports at once: its module-level imports (in
    ``try``/``if`` blocks too, not under ``if TYPE_CHECKING:``, not inside functions); ``from p import m``
    gives ``p.m`` when that is a module, else ``p``."""
    name = module_name(path, package_dir)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.If):
                test = node.test
                checking = getattr(test, "id", getattr(test, "attr", None)) == "TYPE_CHECKING"
                visit(node.orelse) if checking else (visit(node.body), visit(node.orelse))
            elif isinstance(node, ast.Try):
                for block in (node.body, node.orelse, node.finalbody, *(h.body for h in node.handlers)):
                    visit(block)
            elif isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names if alias.name in modules)
            elif isinstance(node, ast.ImportFrom):
                target = import_target(node, package)
                for alias in node.names:
                    if f"{target}.{alias.name}" in modules:
                        found.add(f"{target}.{alias.name}")
                    elif target in modules:
                        found.add(target)

    visit(ast.parse(path.read_text()).body)
    return found - {name}


def import_cycles(package: Path) -> list[list[str]]:
    """The module-level import cycles among the modules under ``package`` (strongly connected components of
    more than one module, or a module importing itself), each sorted."""
    paths = {module_name(path, package): path for path in package.rglob("*.py")}
    graph = {name: top_level_imports(path, set(paths), package) for name, path in paths.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []
    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(max(previous, 10 * len(graph) + 100))
    try:
        def connect(node: str) -> None:
            index[node] = low[node] = len(index)
            stack.append(node)
            for other in graph[node]:
                if other not in index:
                    connect(other)
                    low[node] = min(low[node], low[other])
                elif other in stack:
                    low[node] = min(low[node], index[other])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))

        for node in sorted(graph):
            if node not in index:
                connect(node)
    finally:
        sys.setrecursionlimit(previous)
    return cycles


def test_the_top_level_holds_at_most_15_modules():
    top = sorted(path.name for path in PACKAGE.glob("*.py"))
    assert len(top) <= 15, f"{len(top)} modules at verifiedsql/'s top level (at most 15): {top}"


def test_the_guard_is_one_package_holding_every_safety_module():
    guard = PACKAGE / "guard"
    assert (guard / "__init__.py").exists()
    missing = [name for name in SAFETY_MODULES if not (guard / f"{name}.py").exists()]
    assert not missing, f"safety modules not in verifiedsql/guard/: {missing}"
    elsewhere = sorted(module_name(path) for path in PACKAGE.rglob("*.py")
                       if path.stem in SAFETY_MODULES and path.parent != guard)
    # stages/repair/ has no module named after a safety module either: no second guard hides in the tree
    assert not elsewhere, f"modules named like the guard's outside it: {elsewhere}"


@pytest.mark.parametrize("layer", ["guard", "db"])
def test_the_guard_and_the_database_layer_sit_below_the_stages(layer):
    offences = sorted(f"{module_name(path)} imports {target}" for path in (PACKAGE / layer).rglob("*.py")
                      for target in imported_modules(path)
                      if target.startswith(("verifiedsql.stages", "verifiedsql.pipeline", "verifiedsql.bench")))
    assert not offences, offences


def test_no_two_modules_share_a_name_unless_for_the_same_role():
    names: dict[str, list[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        if path.name != "__init__.py":
            names.setdefault(path.stem, []).append(module_name(path))
    shared = {name: sorted(found) for name, found in names.items() if len(found) > 1 and name not in SHARED_NAMES}
    assert not shared, f"modules of one name in several packages (rename one, or say why in SHARED_NAMES): {shared}"


def test_no_import_cycle_at_module_level():
    assert import_cycles(PACKAGE) == []


def test_the_cycle_check_finds_a_cycle(tmp_path):
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "a.py").write_text("from .sub import b\n")
    (package / "sub" / "b.py").write_text("from typing import TYPE_CHECKING\nfrom .. import c\n"
                                           "if TYPE_CHECKING:\n    from ..d import x\n")
    (package / "c.py").write_text("try:\n    from pkg.a import thing\nexcept ImportError:\n    pass\n")
    (package / "d.py").write_text("from . import a\n\ndef late():\n    from . import c\n")
    # a -> b -> c -> a is a cycle; b's import of d only while type checking and d's of c inside a function
    # are not, so d is outside it
    assert import_cycles(package) == [["pkg.a", "pkg.c", "pkg.sub.b"]]
