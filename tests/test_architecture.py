"""The package layout the README describes, checked: one package per method, none importing another
(only the pipeline knows them all), shared pieces below the methods, and stages of one shape."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest

from verifiedsql import pipeline
from verifiedsql.config import Options
from verifiedsql.stages.base import Pool

PACKAGE = Path(pipeline.__file__).parent
METHODS = ("pvsql", "dpc", "reforce", "r3", "vet")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
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
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
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
        # every optional stage is off by default; the literal checks (no model call) are on
        assert stage.enabled(Options()) is (stage.name == "literals")
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
