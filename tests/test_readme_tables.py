"""The documentation's reference tables are checked against the code: the README's options table against
``Options``, the errors table (``docs/usage/errors.md``) against ``verifiedsql.errors`` and
``verifiedsql.__all__``, and the architecture tree (``docs/architecture.md``) against the modules under
``verifiedsql/``.

The architecture tree is the first fenced block of the architecture page, in this format:

    verifiedsql/
      engine.py      what it does; the description may go on over
                     more lines, indented deeper than any entry (to the description column)
      calls.py       ...; callscan.py: a sibling module may be named inside a description as `name.py`
      llm/           a package: its modules are named inside its description (base.py, cache.py, ...)
      stages/        ... or listed as entries of their own, indented under the package:
        pvsql/       a sub-package
          probe.py   ...
    dialects/        lines at column 0 after the package: other top-level folders (checked to exist)

An entry is a line whose first word is ``name.py`` or ``name/`` (a path relative to the enclosing package
may have slashes), indented at most 4 columns deeper than the package it is in. Every file and folder the
tree names must exist; every module (``__init__.py`` aside) and every package under ``verifiedsql/`` must be
named, as an entry or as ``name.py`` in the description of its package or of a sibling module.
"""

from __future__ import annotations

import dataclasses
import importlib
import re
from pathlib import Path
from typing import Any

import pytest

import verifiedsql
import verifiedsql.errors
from verifiedsql.config import LLMSettings, Options
from verifiedsql.engine import OPTION_NAMES

ROOT = Path(__file__).parents[1]
README = (ROOT / "README.md").read_text()
ERRORS_PAGE = (ROOT / "docs" / "usage" / "errors.md").read_text()
ARCHITECTURE_PAGE = (ROOT / "docs" / "architecture.md").read_text()
PACKAGE = ROOT / "verifiedsql"

# keyword options of the LLM settings (Options.build) -> their LLMSettings field
LLM_KEYWORDS = {
    "llm_base_url": "base_url", "llm_model": "model", "llm_api_key": "api_key", "local_model": "local_model",
    "llm_timeout_s": "timeout_s", "llm_max_retries": "max_retries", "local_threads": "local_threads",
}
# Options fields that are documented under another keyword: ``cache`` sets cache_path (in readwrite mode), and
# ``llm`` is the settings object the llm_* keywords build
DOCUMENTED_AS = {"cache_path": {"cache"}, "llm": set(LLM_KEYWORDS)}


# ------------------------------------------------------------------------------------------ tables


def section(heading: str, text: str = README) -> str:
    """The text (the README's unless given) from ``heading`` (a whole line) to the next heading of the same or
    a higher level."""
    match = re.search(rf"^{re.escape(heading)}[ \t]*$", text, re.MULTILINE)
    assert match, f"no {heading!r} heading"
    level = len(heading) - len(heading.lstrip("#"))
    end = re.compile(rf"^#{{1,{level}}} ", re.MULTILINE).search(text, match.end())
    return text[match.end():end.start() if end else len(text)]


def table_rows(text: str) -> list[list[str]]:
    """The cells of the first Markdown table in ``text``, header and separator left out. Cells are split
    on ``|``; only the first cells are used, so a ``|`` inside the last one does no harm."""
    lines = [line.strip() for line in text.splitlines()]
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    assert rows, "the table is empty"
    return rows


def ticked(cell: str) -> list[str]:
    """The `backticked` names in a cell."""
    return re.findall(r"`([^`]+)`", cell)


# ------------------------------------------------------------------------------------ (a) options


def options_table() -> list[tuple[list[str], str]]:
    """(option names, default text) of every row of the options table."""
    rows = table_rows(section("### Options"))
    assert all(ticked(row[0]) for row in rows), "every row names its options in backticks"
    return [(ticked(row[0]), row[1]) for row in rows]


def documented_options() -> list[str]:
    return [name for names, _ in options_table() for name in names]


def test_every_documented_option_exists() -> None:
    unknown = sorted(set(documented_options()) - OPTION_NAMES)
    assert not unknown, f"the README documents options that do not exist: {unknown}"
    for name in documented_options():  # and each is accepted by the options builder
        assert name in {f.name for f in dataclasses.fields(Options)} | set(LLM_KEYWORDS) | {"cache"}, name


def test_every_option_is_documented_once() -> None:
    documented = documented_options()
    twice = sorted({name for name in documented if documented.count(name) > 1})
    assert not twice, f"options documented more than once: {twice}"
    missing = [f.name for f in dataclasses.fields(Options)
               if f.name not in documented
               and not (f.name in DOCUMENTED_AS and DOCUMENTED_AS[f.name] <= set(documented))]
    missing += [name for name in sorted(OPTION_NAMES - {f.name for f in dataclasses.fields(Options)})
                if name not in documented]
    assert not missing, f"options the README's table does not document: {missing}"


def default_of(name: str) -> Any:
    """The default of a keyword option, from the dataclass field (not the environment)."""
    if name in LLM_KEYWORDS:
        return LLMSettings.__dataclass_fields__[LLM_KEYWORDS[name]].default
    field = Options.__dataclass_fields__["cache_path" if name == "cache" else name]
    return field.default


UNITS = {"": 1, "s": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3}


def default_matches(text: str, value: Any) -> bool | None:
    """Whether a default as the README writes it (``off``, ``none``, ``10,000``, ``64 MiB``, ``5 s``,
    ```1.5b` (env ...)``) is ``value``; None when the text is prose this does not read."""
    text = re.sub(r"\s*\(.*\)$", "", text.strip()).strip().strip("`")
    if text == "off":
        return value in (False, None, "off")
    if text == "on":
        return value is True
    if text in ("none", "default schema"):
        return value is None
    number = re.fullmatch(r"(\d[\d,]*(?:\.\d+)?)\s*(s|KiB|MiB|GiB)?", text)
    if number:
        expected = float(number[1].replace(",", "")) * UNITS[number[2] or ""]
        return isinstance(value, (int, float)) and not isinstance(value, bool) and value == expected
    if re.fullmatch(r"[\w.-]+", text):
        return str(value) == text
    return None


def test_documented_defaults_match_the_code() -> None:
    checked, wrong = 0, []
    for names, text in options_table():
        values = [part for part in re.split(r",\s+", text)]  # "10,000, 30": a comma and a space part values
        if len(values) == 1 and len(names) > 1:
            values = values * len(names)  # one default said for all, e.g. "off" for `cache`, `cache_mode`
        if len(values) != len(names):
            continue  # prose, e.g. the environment fallbacks of the endpoint settings
        for name, value_text in zip(names, values):
            verdict = default_matches(value_text, default_of(name))
            if verdict is not None:
                checked += 1
                if not verdict:
                    wrong.append(f"{name}: README says {value_text!r}, the code {default_of(name)!r}")
    assert not wrong, "defaults in the README that differ from the code:\n" + "\n".join(wrong)
    assert checked >= 30, f"only {checked} defaults could be read: has the table's format changed?"


def test_default_reader() -> None:
    assert default_matches("10,000", 10_000) and default_matches("64 MiB", 64 * 1024 * 1024)
    assert default_matches("5 s", 5.0) and default_matches("off", False) and default_matches("none", None)
    assert default_matches("`1.5b` (env `VERIFIEDSQL_LOCAL_MODEL`)", "1.5b")
    assert default_matches("3", 4) is False and default_matches("off", True) is False
    assert default_matches("env `X`, then `Y`", None) is None


# ------------------------------------------------------------------------------------- (b) errors


def error_rows() -> list[list[str]]:
    return table_rows(section("# Errors", ERRORS_PAGE))


def exception_classes(module: Any) -> dict[str, type[BaseException]]:
    return {name: value for name, value in vars(module).items()
            if isinstance(value, type) and issubclass(value, BaseException) and value.__module__ == module.__name__}


def resolve(name: str) -> Any:
    """A documented error name: ``verifiedsql.errors.<name>``, or a dotted path such as
    ``verifiedsql.dbapi.InterfaceError``."""
    if "." not in name:
        return getattr(verifiedsql.errors, name, None)
    module, _, attribute = name.rpartition(".")
    return getattr(importlib.import_module(module), attribute, None)


def test_every_documented_error_exists() -> None:
    for row in error_rows():
        assert ticked(row[0]), f"an errors row without a `name`: {row}"
        for name in ticked(row[0]):
            error = resolve(name)
            assert isinstance(error, type) and issubclass(error, verifiedsql.errors.VerifiedSQLError), (
                f"the errors page documents {name!r}, which is not a verifiedsql error")
    # errors named inside a row ("`UnparseableSQLError`, a subclass", "a PEP 249 `InterfaceError`") exist too
    known = {**exception_classes(importlib.import_module("verifiedsql.dbapi")), **exception_classes(verifiedsql.errors)}
    for row in error_rows():
        for name in ticked(" | ".join(row[1:])):
            if re.fullmatch(r"[\w.]+Error", name):  # a name, not code such as `except VerifiedSQLError`
                assert (known.get(name) if name.isidentifier() else resolve(name)), (
                    f"the errors page names an unknown error {name!r}")


def test_every_error_is_documented() -> None:
    in_first_column = {name for row in error_rows() for name in ticked(row[0])}
    anywhere = {name for row in error_rows() for cell in row for name in ticked(cell)}
    missing = sorted(set(exception_classes(verifiedsql.errors)) - anywhere)
    assert not missing, f"errors in verifiedsql.errors that the errors page does not name: {missing}"
    exported = sorted(name for name in verifiedsql.__all__
                      if isinstance(getattr(verifiedsql, name), type)
                      and issubclass(getattr(verifiedsql, name), BaseException))
    assert exported, "verifiedsql.__all__ exports no error"
    unlisted = [name for name in exported if name not in in_first_column]
    assert not unlisted, f"errors exported by verifiedsql without a row of their own on the errors page: {unlisted}"


# -------------------------------------------------------------------------------- (c) architecture

ENTRY = re.compile(r"^(?P<indent> *)(?P<path>[\w.-]+(?:/[\w.-]+)*(?:\.py|/))(?:\s+(?P<text>.*))?$")
MENTION = re.compile(r"(?<![\w/.])([A-Za-z_]\w*\.py)\b")


def architecture_block() -> list[str]:
    match = re.search(r"^```[^\n]*\n(.*?)^```", section("# Architecture", ARCHITECTURE_PAGE), re.MULTILINE | re.DOTALL)
    assert match, "the architecture page has no fenced block"
    return match.group(1).splitlines()


def parse_tree(lines: list[str]) -> tuple[set[str], set[str], set[str]]:
    """(paths named by entries, package files named inside descriptions, top-level folders), every path
    relative to the repository root, folders ending in ``/``."""
    assert lines and lines[0].strip() == "verifiedsql/", "the tree starts with a `verifiedsql/` line"
    entries: set[str] = {"verifiedsql/"}
    mentions: set[str] = set()
    top: set[str] = set()
    stack: list[tuple[int, str]] = [(0, "verifiedsql/")]  # (indent, folder) of the open folders
    current: str | None = None  # the folder that descriptions' `name.py` mentions are in
    for line in lines[1:]:
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip(" "))
        if indent == 0:  # after the package: other top-level folders and files
            match = ENTRY.match(line)
            if match:
                top.add(match["path"])
            stack, current = [], None
            continue
        if not stack:
            continue
        while len(stack) > 1 and indent <= stack[-1][0]:
            stack.pop()
        match = ENTRY.match(line)
        text = line
        if match and indent <= stack[-1][0] + 4:
            path = stack[-1][1] + match["path"]
            entries.add(path)
            if path.endswith("/"):
                stack.append((indent, path))
                current = path
            else:
                current = stack[-1][1]
            text = match["text"] or ""
        if current is not None:
            mentions.update(current + name for name in MENTION.findall(text))
    return entries, mentions, top


def package_contents() -> tuple[set[str], set[str]]:
    """(modules other than ``__init__.py``, packages) under verifiedsql/, as paths from the repository root."""
    modules = {p.relative_to(ROOT).as_posix() for p in PACKAGE.rglob("*.py")
               if p.name != "__init__.py" and "__pycache__" not in p.parts}
    packages = {p.parent.relative_to(ROOT).as_posix() + "/" for p in PACKAGE.rglob("__init__.py")
                if "__pycache__" not in p.parts}
    return modules, packages


def test_tree_parser() -> None:
    block = """verifiedsql/
  engine.py      the engine
  calls.py       calls; callscan.py: the scan, not tests/test_calls.py
  llm/           models.py installs it, local.py serves it; prompts.py
                 review_prompts.py for R3
  session_state.py PostgreSQL session state
  stages/        the stages
    base.py      the base
    pvsql/       PV-SQL
      probe.py   probes
    cluster.py   clustering
  report.py      the report
dialects/        profiles
tests/           the tests""".splitlines()
    entries, mentions, top = parse_tree(block)
    assert entries == {"verifiedsql/", "verifiedsql/engine.py", "verifiedsql/calls.py", "verifiedsql/llm/",
                       "verifiedsql/session_state.py", "verifiedsql/stages/", "verifiedsql/stages/base.py",
                       "verifiedsql/stages/pvsql/", "verifiedsql/stages/pvsql/probe.py",
                       "verifiedsql/stages/cluster.py", "verifiedsql/report.py"}
    assert mentions == {"verifiedsql/callscan.py", "verifiedsql/llm/models.py", "verifiedsql/llm/local.py",
                        "verifiedsql/llm/prompts.py", "verifiedsql/llm/review_prompts.py"}
    assert top == {"dialects/", "tests/"}


def test_architecture_tree_names_only_what_exists() -> None:
    entries, mentions, top = parse_tree(architecture_block())
    missing = sorted(path for path in entries | mentions | top if not (ROOT / path).exists())
    assert not missing, f"the architecture page names what does not exist: {missing}"


def test_architecture_tree_names_every_module() -> None:
    entries, mentions, _ = parse_tree(architecture_block())
    modules, packages = package_contents()
    unnamed = sorted((modules | packages) - entries - mentions)
    assert not unnamed, (f"modules and packages under verifiedsql/ that the architecture page's tree does "
                         f"not name (see this test's docstring for the format): {unnamed}")


@pytest.mark.parametrize(("heading", "text"), [("### Options", README), ("# Errors", ERRORS_PAGE),
                                             ("# Architecture", ARCHITECTURE_PAGE)])
def test_sections_exist(heading: str, text: str) -> None:
    assert section(heading, text).strip()
