"""Issue 36, "layers visible in the tree": move verifiedsql's top-level modules into their packages and
rewrite every reference to them. Run from anywhere inside the repository:

    .venv/bin/python scripts/restructure_layout.py          # moves with `git mv`, rewrites, prints each change
    .venv/bin/python scripts/restructure_layout.py --check  # prints what it would do, changes nothing

It is idempotent: a second run finds nothing to move and nothing to rewrite. It fails (exit status 1, before
changing anything) on what it cannot map: a top-level module that is neither moved nor kept, a module both
at its old and its new place, an import of a module that exists nowhere after the moves, a mention of a
moved module in the architecture tree (``docs/architecture.md``) it cannot place. Not part of the package;
delete it once the layout is on main and no branch from before it is left to move.

What it rewrites, in verifiedsql/, tests/, benchmarks/ (not the recorded runs), scripts/, examples/,
pyproject.toml, .ci/, README.md, mkdocs.yml and docs/:

* imports, absolute (``verifiedsql.guard.safety``) and relative (``from ..safety import``, ``from . import
  safety``), each relative import re-expressed from the importing module's new place;
* dotted names and paths in text: ``verifiedsql.readonly.x`` in strings and comments, ``verifiedsql/bounded.py``;
* in Markdown, a module named by its bare file name in backticks (``safety.py``), which the docs use for the
  top-level modules only, becomes its path under verifiedsql/ (``guard/safety.py``);
* the architecture tree (the fenced block starting with ``verifiedsql/`` on ``docs/architecture.md``, which
  tests/test_readme_tables.py checks): moved entries go under their new package, entries for packages that did
  not exist are made, descriptions are kept;
* ``[tool.setuptools] packages`` in pyproject.toml gains the new packages.
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "verifiedsql"

GUARD = ("safety", "readonly", "functions", "callscan", "bounded", "watchdog", "boundary", "session_state",
         "privileges", "sqlite_hooks", "redact", "echo", "contain", "statements", "transactions", "sandbox",
         "jsontree", "sqlshape", "deadline")
# (old path, new path) under verifiedsql/; optional ones may be absent (a module a branch may add)
MOVES: list[tuple[str, str]] = [
    *((f"{name}.py", f"guard/{name}.py") for name in GUARD),
    ("calls.py", "guard/function_calls.py"),  # SQL function calls; stages/calls.py is the recorded model call
    ("database.py", "db/database.py"),
    ("catalog_reflect.py", "db/catalog_reflect.py"),
    ("schema.py", "db/schema.py"),
    ("softf1.py", "stages/dpc/softf1.py"),  # DPC's only
    ("similarity.py", "stages/vet/similarity.py"),  # VET's only
    ("failures.py", "stages/common/failures.py"),  # the answer step, schema facts and the bench's anatomy
    ("orderkeys.py", "stages/common/orderkeys.py"),  # the ties evidence and the bench's scoring
]
# modules a branch adds (issue 33: DuckDB's extension settings; issue 34: batched sample reads)
OPTIONAL = {"duckdb_extensions.py": "guard/duckdb_extensions.py", "samples.py": "db/samples.py"}
# The top level after the moves: the front doors, the pipeline and the vocabulary every layer shares.
KEEP = {"__init__.py", "aio.py", "cli.py", "config.py", "dbapi.py", "engine.py", "errors.py", "logs.py",
        "pipeline.py", "profiles.py", "report.py", "report_html.py", "results.py", "session.py"}
NEW_PACKAGES = {
    "guard": ("verifiedsql/guard/", "everything that keeps the user's database and host safe: the statement "
              "guard, the engine guard, function allowlists, bounds and the watchdog, session state, privileges, "
              "hooks, redaction, the sandbox"),
    "db": ("verifiedsql/db/", "the user's database as the pipeline reads it: read-only execution through the "
           "guard, reflection, the schema model"),
}
INIT_DOCS = {
    "guard": '"""The guard: everything that keeps the user\'s database and the host safe from generated SQL and\n'
             'model-written code. The statement guard (``safety``) and the engine guard (``readonly``) are the two\n'
             'layers every generated statement passes; the other modules are theirs: function calls and\n'
             'allowlists, the schema boundary, bounds on time and size, session state, privileges, the caller\'s\n'
             'hooks and transactions, redaction, error echoes, the sandbox for model-written pandas."""\n',
    "db": '"""The user\'s database as the pipeline reads it: read-only execution through the guard\n'
          '(``database``), bulk reflection from the engine\'s catalog (``catalog_reflect``) and the\n'
          'engine-independent schema model (``schema``); batched sample reads (``samples``) where present."""\n',
}
SCANNED = ("verifiedsql", "tests", "benchmarks", "scripts", "examples", ".ci")
SKIPPED = ("benchmarks/runs", "benchmarks/data", "benchmarks/results", "scripts/restructure_layout.py")
# path-like text left alone: a synthetic tree that tests the architecture tree's parser, not a real path
PATH_TEXT_EXEMPT = {"tests/test_readme_tables.py"}
TEXT_FILES = ("pyproject.toml", "mkdocs.yml", "README.md")
ARCHITECTURE_PAGE = "docs/architecture.md"  # the one page with the package's tree
LINE_LENGTH = 120  # ruff's, in pyproject.toml
TEXT_SUFFIXES = {".py", ".md", ".toml", ".sh", ".txt", ".yml", ".yaml", ".cfg", ".ini", ".json", ""}


class Unmappable(Exception):
    """Something the script cannot map; nothing has been changed."""


def dotted(path: str) -> str:
    """``guard/safety.py`` -> ``verifiedsql.guard.safety``; ``guard/__init__.py`` -> ``verifiedsql.guard``."""
    parts = path.removesuffix(".py").split("/")
    return ".".join([PACKAGE, *(parts[:-1] if parts[-1] == "__init__" else parts)])


@dataclass
class Plan:
    moves: list[tuple[str, str]]  # paths under verifiedsql/ still to move
    modules: dict[str, str]  # old dotted name -> new dotted name (every move, done or not)
    old_name: dict[str, str]  # new file path (repo-relative) -> its old dotted name, for the files moved now


def plan_moves(package: Path) -> Plan:
    moves, modules, errors = [], {}, []
    for old, new in MOVES + list(OPTIONAL.items()):
        src, dst = package / old, package / new
        if src.exists() and dst.exists():
            errors.append(f"verifiedsql/{old} and verifiedsql/{new} both exist: merge them by hand first")
        elif src.exists():
            moves.append((old, new))
        elif not dst.exists() and old not in OPTIONAL:
            errors.append(f"verifiedsql/{old} is at neither its old nor its new place (verifiedsql/{new})")
        if src.exists() or dst.exists():
            modules[dotted(old)] = dotted(new)
    moving = {old for old, _ in moves}
    stray = sorted(p.name for p in package.glob("*.py") if p.name not in KEEP and p.name not in moving)
    if stray:
        errors.append(f"top-level modules this script does not know: {stray}; add each to MOVES or KEEP")
    if len(KEEP) > 15:
        errors.append(f"KEEP holds {len(KEEP)} modules; the top level may hold 15")
    if errors:
        raise Unmappable("\n".join(errors))
    return Plan(moves, modules, {f"{PACKAGE}/{new}": dotted(old) for old, new in moves})


# ------------------------------------------------------------------------------------------ Python files

def resolve(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    """The absolute module a ``from ... import`` names, seen from ``module``."""
    if not node.level:
        return node.module or ""
    parts = module.split(".")
    base = parts if is_package else parts[:-1]
    base = base[: len(base) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def relative(target: str, package: str) -> str:
    """``target`` written relative to ``package`` (``from <this> import``)."""
    here, there = package.split("."), target.split(".")
    common = 0
    while common < min(len(here), len(there)) and here[common] == there[common]:
        common += 1
    return "." * (len(here) - common + 1) + ".".join(there[common:])


def mapped(name: str, modules: dict[str, str]) -> str:
    """``name`` (a module or ``module.attribute``) after the moves."""
    for old, new in modules.items():
        if name == old or name.startswith(old + "."):
            return new + name[len(old):]
    return name


def rewrite_import(node: ast.ImportFrom, module: str, new_module: str, is_package: bool,
                   modules: dict[str, str]) -> list[str] | None:
    """The statements that replace ``node`` (one per target module), or None when nothing moves."""
    target = resolve(node, module, is_package)
    if not target.startswith(PACKAGE):
        return None
    groups: dict[str, list[str]] = {}
    changed = False
    for alias in node.names:
        full = f"{target}.{alias.name}"
        if full in modules:  # from package import module
            new_full = modules[full]
            new_target, name = new_full.rsplit(".", 1)
            if name != alias.name and alias.asname is None:
                alias = ast.alias(alias.name, alias.name)  # the renamed module keeps its old name in this file
            changed = True
        else:
            new_target, name = mapped(target, modules), alias.name
            changed |= new_target != target
        groups.setdefault(new_target, []).append(name if alias.asname is None else f"{name} as {alias.asname}")
    new_package = new_module if is_package else new_module.rsplit(".", 1)[0]
    old_package = module if is_package else module.rsplit(".", 1)[0]
    if not changed and not (node.level and new_package != old_package):
        return None
    statements = []
    for new_target, names in groups.items():
        head = relative(new_target, new_package) if node.level else new_target
        statements.append(f"from {head} import {', '.join(names)}")
    return statements


def rewrite_python(text: str, module: str, new_module: str, is_package: bool, modules: dict[str, str]) -> str:
    """Imports first (relative ones resolved from the module's old name, written from its new one), then
    dotted names in the rest of the text."""
    try:
        tree = ast.parse(text)
    except SyntaxError as error:
        raise Unmappable(f"{module}: does not parse ({error})") from error
    lines = text.splitlines(keepends=True)
    edits = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            new = rewrite_import(node, module, new_module, is_package, modules)
            if new is not None:
                edits.append((node, new))
    for node, statements in sorted(edits, key=lambda edit: (edit[0].lineno, edit[0].col_offset), reverse=True):
        assert node.end_lineno is not None and node.end_col_offset is not None
        first, last = node.lineno - 1, node.end_lineno - 1
        indent = " " * node.col_offset
        before, after = lines[first][: node.col_offset], lines[last][node.end_col_offset:]
        lines[first: last + 1] = [before + ("\n" + indent).join(statements) + after]
    return rewrite_dotted("".join(lines), modules)


def rewrite_dotted(text: str, modules: dict[str, str]) -> str:
    for old, new in modules.items():
        text = re.sub(rf"(?<![\w.]){re.escape(old)}(?!\w)", new, text)
    return text


def rewrite_paths(text: str, modules: dict[str, str]) -> str:
    """``verifiedsql/bounded.py`` -> ``verifiedsql/guard/bounded.py``."""
    for old, new in modules.items():
        old_path, new_path = old.replace(".", "/") + ".py", new.replace(".", "/") + ".py"
        text = re.sub(rf"(?<![\w/.]){re.escape(old_path)}\b", new_path, text)
    return text


# --------------------------------------------------------------------------------------------- Markdown

def rewrite_markdown(text: str, modules: dict[str, str], where: str, log: list[str]) -> str:
    text = rewrite_paths(rewrite_dotted(text, modules), modules)
    for old, new in modules.items():  # `safety.py`: the docs name top-level modules by file name alone
        if old.count(".") != 1:
            continue
        bare, moved = old.split(".")[1] + ".py", new.split(".", 1)[1].replace(".", "/") + ".py"
        text, count = re.subn(rf"`{re.escape(bare)}`", f"`{moved}`", text)
        if count:
            log.append(f"{where}: `{bare}` -> `{moved}` ({count}x)")
    return text


ENTRY = re.compile(r"^(?P<indent> *)(?P<name>[\w.-]+(?:\.py|/))(?:(?P<gap> +)(?P<text>.*))?$")
DESCRIPTION_COLUMN = 17


@dataclass
class Entry:
    indent: int
    name: str
    lines: list[str]  # the first line's description, then each continuation line as written

    def render(self, indent: int) -> list[str]:
        head = " " * indent + self.name
        if self.lines[0]:
            head = head.ljust(DESCRIPTION_COLUMN - 1) + " " if len(head) < DESCRIPTION_COLUMN - 1 else head + " "
        return [head + self.lines[0], *self.lines[1:]]


def parse_top_entries(block: list[str]) -> list[Entry | str]:
    """The tree's lines after ``verifiedsql/``: top-level entries (indent 2) with all the lines under them;
    lines at indent 0 (other folders) are kept as text."""
    items: list[Entry | str] = []
    for line in block:
        indent = len(line) - len(line.lstrip(" "))
        match = ENTRY.match(line)
        if indent == 2 and match:
            items.append(Entry(2, match["name"], [match["text"] or ""]))
        elif indent > 2 and items and isinstance(items[-1], Entry):
            items[-1].lines.append(line)
        else:
            items.append(line)
    return items


def mentions(entry: Entry) -> list[str]:
    return re.findall(r"(?<![\w/.])([A-Za-z_]\w*\.py)\b", "\n".join(entry.lines))


def wrap_into(entry: Entry, addition: str) -> None:
    """Append ``addition`` to a package entry whose description lists its modules (``dpc/  DPC: ...``)."""
    pad = " " * DESCRIPTION_COLUMN
    entry.lines += textwrap.wrap(addition, width=116, initial_indent=pad, subsequent_indent=pad)


def rewrite_tree(block: list[str], modules: dict[str, str], where: str, log: list[str]) -> list[str]:
    """The architecture tree with moved modules under their new packages."""
    moves = {old.split(".")[1] + ".py": new.split(".")[1:] for old, new in modules.items() if old.count(".") == 1}
    out: list[Entry | str] = []
    children: dict[str, list[Entry]] = {}  # a package the tree gets now -> the entries moved into it
    appended: dict[str, list[str]] = {}  # a package entry below the top (stages/dpc/) -> text for its description
    for item in parse_top_entries(block[1:]):
        if not isinstance(item, Entry) or item.name not in moves:
            out.append(item)
            continue
        parts = moves[item.name]
        folder, new_name = "/".join(parts[:-1]) + "/", parts[-1] + ".py"
        strays = [m for m in mentions(item) if m != item.name
                  and (m in KEEP or (m in moves and moves[m][:-1] != parts[:-1]))]
        if strays:
            raise Unmappable(f"{where}: the tree entry {item.name} names {strays}, which will not sit beside it in "
                             f"verifiedsql/{folder}: reword the entry by hand")
        log.append(f"{where}: tree entry {item.name} -> verifiedsql/{folder}{new_name}")
        item.name = new_name
        if folder[:-1] in NEW_PACKAGES:
            if folder not in children:
                children[folder] = []
                out.append(Entry(2, folder, [NEW_PACKAGES[folder[:-1]][1]]))
            children[folder].append(item)
        else:
            appended.setdefault(folder, []).append(f"{new_name}: " + " ".join(line.strip() for line in item.lines))
    rendered, placed = [block[0]], set()
    for item in out:
        if isinstance(item, str):
            rendered.append(item)
        elif item.name in children:
            first, *rest = textwrap.wrap(item.lines[0], width=116 - DESCRIPTION_COLUMN)
            rendered += Entry(2, item.name, [first, *(" " * DESCRIPTION_COLUMN + line for line in rest)]).render(2)
            for child in children[item.name]:
                rendered += child.render(4)
        else:
            lines = item.render(2)
            for folder, additions in appended.items():
                top, _, below = folder.partition("/")
                if item.name == top + "/":
                    lines = _append_nested(lines, below, additions)
                    placed.add(folder)
            rendered += lines
    moved_here = {name for name, parts in moves.items() if parts[0] in NEW_PACKAGES}
    named = {name for entries in children.values() for child in entries for name in [child.name, *mentions(child)]}
    unnamed = sorted(f"{moves[name][0]}/{moves[name][-1]}.py" for name in moved_here
                     if moves[name][-1] + ".py" not in named)
    if children and unnamed:  # this run moved the tree's entries, and these modules had none
        log.append(f"{where}: the tree had no entry for {unnamed}: add one by hand")
    if set(appended) - placed:
        raise Unmappable(f"{where}: the tree has no entries for {sorted(set(appended) - placed)}, where moved "
                         "modules go: add them by hand")
    return rendered


def _append_nested(lines: list[str], child: str, additions: list[str]) -> list[str]:
    """``lines`` (a top-level package entry) with ``additions`` appended to its child entry ``child``."""
    starts = [i for i, line in enumerate(lines) if line.startswith(" " * 4 + child) and ENTRY.match(line)]
    if not starts:
        raise Unmappable(f"the tree's {lines[0].split()[0]} entry has no {child} line to describe the modules moved "
                         "there")
    start = starts[0]
    end = start + 1
    while end < len(lines) and len(lines[end]) - len(lines[end].lstrip()) >= DESCRIPTION_COLUMN:
        end += 1
    holder = Entry(4, child, [])
    for addition in additions:
        wrap_into(holder, addition)
    return lines[:end] + holder.lines + lines[end:]


def rewrite_trees(text: str, modules: dict[str, str], where: str, log: list[str]) -> tuple[str, list[tuple[int, int]]]:
    """``text`` with each architecture tree rewritten, and the spans of the trees (left out of the other
    rewrites)."""
    spans = []
    pieces, last = [], 0
    for match in re.finditer(r"^```[^\n]*\n(verifiedsql/\n.*?)^```", text, re.MULTILINE | re.DOTALL):
        block = match.group(1).rstrip("\n").split("\n")
        new = "\n".join(rewrite_tree(block, modules, where, log)) + "\n"
        pieces += [text[last: match.start(1)], new]
        last = match.end(1)
    pieces.append(text[last:])
    result = "".join(pieces)
    for match in re.finditer(r"^```[^\n]*\n(verifiedsql/\n.*?)^```", result, re.MULTILINE | re.DOTALL):
        spans.append((match.start(1), match.end(1)))
    return result, spans


def rewrite_markdown_file(text: str, modules: dict[str, str], where: str, log: list[str]) -> str:
    """A Markdown file rewritten: the tree on the architecture page, the module names and paths everywhere."""
    if where == ARCHITECTURE_PAGE:
        text, spans = rewrite_trees(text, modules, where, log)
        if not spans:
            raise Unmappable(f"{where}: no architecture tree (a fenced block starting with `verifiedsql/`)")
    else:
        spans = []
    pieces, last = [], 0
    for start, end in spans:
        pieces += [rewrite_markdown(text[last:start], modules, where, log), text[start:end]]
        last = end
    pieces.append(rewrite_markdown(text[last:], modules, where, log))
    return "".join(pieces)


# ------------------------------------------------------------------------------------------ the run

def python_files(root: Path) -> list[Path]:
    found = []
    for top in SCANNED:
        for path in sorted((root / top).rglob("*")) if (root / top).is_dir() else []:
            rel = path.relative_to(root).as_posix()
            if path.is_file() and path.suffix in TEXT_SUFFIXES and "__pycache__" not in path.parts \
                    and not any(rel == s or rel.startswith(s + "/") for s in SKIPPED):
                found.append(path)
    return found


def module_of(rel: str) -> tuple[str, bool] | None:
    """(dotted name, is a package) of a file under verifiedsql/; None elsewhere."""
    if not rel.startswith(PACKAGE + "/") or not rel.endswith(".py"):
        return None
    return dotted(rel[len(PACKAGE) + 1:]), rel.endswith("/__init__.py")


def add_packages(text: str, packages: list[str]) -> str:
    match = re.search(r"^packages = \[(.*?)\]", text, re.MULTILINE | re.DOTALL)
    if match is None:
        raise Unmappable("pyproject.toml: no `packages = [...]` under [tool.setuptools]")
    listed = re.findall(r'"([\w.]+)"', match.group(1))
    missing = [p for p in packages if p not in listed]
    if not missing:
        return text
    anchor = '"verifiedsql.backends", '
    if anchor not in match.group(1):
        raise Unmappable(f"pyproject.toml: cannot place {missing} in the packages list")
    inserted = anchor + "".join(f'"{p}", ' for p in missing)
    return text[: match.start(1)] + match.group(1).replace(anchor, inserted, 1) + text[match.end(1):]


def unresolved_imports(root: Path, files: dict[Path, str]) -> list[str]:
    """Imports of verifiedsql modules that exist nowhere after the moves."""
    package = root / PACKAGE
    existing = {dotted(p.relative_to(package).as_posix()) for p in package.rglob("*.py")} | {PACKAGE}
    existing.add("verifiedsql.dialects")  # dialects/, mapped into the package by pyproject.toml
    problems = []
    for path, text in files.items():
        if path.suffix != ".py":
            continue
        rel = path.relative_to(root).as_posix()
        own = module_of(rel)
        tree = ast.parse(text)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                if node.level and own is None:
                    continue
                target = resolve(node, own[0], own[1]) if node.level and own else node.module or ""
                if target.split(".")[0] == PACKAGE and target not in existing:
                    problems.append(f"{rel}:{node.lineno}: imports {target}, which does not exist")
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == PACKAGE and alias.name not in existing:
                        problems.append(f"{rel}:{node.lineno}: imports {alias.name}, which does not exist")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="print what would change; change nothing")
    parser.add_argument("--root", type=Path, default=ROOT, help="the repository (default: this script's)")
    args = parser.parse_args()
    root: Path = args.root.resolve()
    package = root / PACKAGE
    log: list[str] = []
    try:
        plan = plan_moves(package)
        # every rewrite is computed before anything changes, so a failure leaves the tree as it was
        new_files: dict[Path, str] = {}
        old_lines: dict[Path, set[str]] = {}  # each rewritten Python file's lines before
        for path in python_files(root):
            rel = path.relative_to(root).as_posix()
            old_rel = next((f"{PACKAGE}/{old}" for old, new in plan.moves if f"{PACKAGE}/{new}" == rel), rel)
            new_rel = next((f"{PACKAGE}/{new}" for old, new in plan.moves if f"{PACKAGE}/{old}" == rel), rel)
            try:
                text = path.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                continue
            if path.suffix == ".py":
                old_mod, new_mod = module_of(old_rel), module_of(new_rel)
                if old_mod is not None and new_mod is not None:
                    new = rewrite_python(text, old_mod[0], new_mod[0], old_mod[1], plan.modules)
                else:
                    new = rewrite_python(text, rel, rel, False, plan.modules)
            else:
                new = rewrite_dotted(text, plan.modules)
            if rel not in PATH_TEXT_EXEMPT:
                new = rewrite_paths(new, plan.modules)
            if new != text:
                new_files[root / new_rel] = new
                old_lines[root / new_rel] = set(text.splitlines())
                log.append(f"rewrote {new_rel}")
        for name in TEXT_FILES + tuple(p.relative_to(root).as_posix() for p in sorted((root / "docs").rglob("*.md"))):
            path = root / name
            if not path.exists():
                continue
            text = path.read_text(encoding="utf-8")
            new = rewrite_markdown_file(text, plan.modules, name, log) if name.endswith(".md") \
                else rewrite_paths(rewrite_dotted(text, plan.modules), plan.modules)
            if name == "pyproject.toml":
                new = add_packages(new, [f"{PACKAGE}.{p}" for p in NEW_PACKAGES if (package / p).exists()
                                         or any(n.startswith(p + "/") for _, n in plan.moves)])
            if new != text:
                new_files[path] = new
                log.append(f"rewrote {name}")
    except Unmappable as error:
        print(f"restructure_layout: cannot map, nothing changed:\n{error}", file=sys.stderr)
        return 1
    for old, new in plan.moves:
        log.insert(0, f"git mv verifiedsql/{old} verifiedsql/{new}")
    print("\n".join(log) if log else "nothing to do: the layout is in place")
    if args.check:
        return 0
    for folder in sorted({new.rsplit("/", 1)[0] for _, new in plan.moves if "/" in new}):
        init = package / folder / "__init__.py"
        if not init.exists():
            init.parent.mkdir(parents=True, exist_ok=True)
            init.write_text(INIT_DOCS.get(folder, '"""(describe this package)"""\n'), encoding="utf-8")
            subprocess.run(["git", "add", str(init)], cwd=root, check=True)
            print(f"made verifiedsql/{folder}/__init__.py")
    for old, new in plan.moves:
        subprocess.run(["git", "mv", f"{PACKAGE}/{old}", f"{PACKAGE}/{new}"], cwd=root, check=True)
    for path, text in new_files.items():
        if path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
    problems = unresolved_imports(root, {p: p.read_text(encoding="utf-8") for p in python_files(root)
                                         if p.suffix == ".py"})
    if problems:
        print("restructure_layout: imports that name no module after the moves (fix by hand):\n"
              + "\n".join(problems), file=sys.stderr)
        return 1
    long_lines = [f"{path.relative_to(root)}:{number}" for path, text in new_files.items() if path.suffix == ".py"
                  for number, line in enumerate(text.splitlines(), 1)
                  if len(line) > LINE_LENGTH and line not in old_lines.get(path, set())]
    if long_lines:
        print(f"lines over {LINE_LENGTH} characters now (wrap them by hand): {', '.join(long_lines)}")
    ruff = next((r for r in (root / ".venv/bin/ruff", Path(sys.executable).parent / "ruff") if r.exists()), None)
    if ruff is not None:  # imports rewritten in place may be out of order now
        subprocess.run([str(ruff), "check", "--fix", "--select", "I", "--quiet", *SCANNED[:4]], cwd=root, check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
