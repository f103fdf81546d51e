"""The engine-independent schema model and its compact rendering for prompts."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from sqlalchemy.dialects import registry


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    nullable: bool = True
    primary_key: bool = False
    samples: tuple[Any, ...] = ()


@dataclass(frozen=True)
class ForeignKey:
    columns: tuple[str, ...]
    referred_table: str
    referred_columns: tuple[str, ...]


@dataclass(frozen=True)
class Table:
    name: str  # qualified (``sales.orders``) when the ``schema`` option names a namespace
    columns: tuple[Column, ...]
    foreign_keys: tuple[ForeignKey, ...] = ()
    namespace: str | None = None  # the namespace ``name`` begins with, if any

    @property
    def primary_key(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns if c.primary_key)

    def column(self, name: str) -> Column | None:
        lowered = name.lower()
        return next((c for c in self.columns if c.name.lower() == lowered), None)


@dataclass(frozen=True)
class Schema:
    """Tables of one database (one schema/namespace), as the prompts and checks see them."""

    tables: tuple[Table, ...]
    namespace: str | None = None

    def table(self, name: str) -> Table | None:
        lowered = name.lower()
        return next((t for t in self.tables if t.name.lower() == lowered), None)

    @property
    def column_count(self) -> int:
        return sum(len(t.columns) for t in self.tables)


@cache
def reserved_words(engine: str) -> frozenset[str]:
    """The engine's reserved words in lower case, as its SQLAlchemy dialect quotes them (empty for a dialect
    that is not installed)."""
    try:
        preparer = registry.load(engine).preparer
    except Exception:  # noqa: BLE001 - any failure to load the dialect means no list to go by
        return frozenset()
    return frozenset(word.lower() for word in preparer.reserved_words)


@cache
def reserved_anywhere() -> frozenset[str]:
    """The words reserved on any registered engine: the prompt's DDL quotes a name that is one of them (``order``),
    whatever the engine, so that the model sees it quoted."""
    from ..backends import names  # the registry imports the engines' modules, which import this one

    return frozenset().union(*(reserved_words(engine) for engine in names()))


def _quote(name: str) -> str:
    plain = name.replace("_", "").isalnum() and not name[:1].isdigit() and name.lower() not in reserved_anywhere()
    return name if plain else '"' + name.replace('"', '""') + '"'


def _quote_table(name: str, namespace: str | None) -> str:
    """A table name as SQL writes it: a qualified one quoted part by part (``sales.orders``, not
    ``"sales.orders"``, which would name a table with a dot in its name)."""
    if namespace and name.startswith(namespace + "."):
        return f"{_quote(namespace)}.{_quote(name[len(namespace) + 1:])}"
    return _quote(name)


def _sample_text(value: Any, limit: int = 40) -> str:
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def render_table(table: Table, *, with_samples: bool = True) -> str:
    """One ``CREATE TABLE`` statement with keys, and sample values as trailing comments."""
    lines = []
    for column in table.columns:
        line = f"  {_quote(column.name)} {column.type}"
        if column.primary_key and len(table.primary_key) == 1:
            line += " PRIMARY KEY"
        if with_samples and column.samples:
            line += ",  -- e.g. " + ", ".join(_sample_text(v) for v in column.samples)
        else:
            line += ","
        lines.append(line)
    if len(table.primary_key) > 1:
        lines.append(f"  PRIMARY KEY ({', '.join(map(_quote, table.primary_key))}),")
    for fk in table.foreign_keys:
        lines.append(
            f"  FOREIGN KEY ({', '.join(map(_quote, fk.columns))}) REFERENCES "
            f"{_quote_table(fk.referred_table, table.namespace)}({', '.join(map(_quote, fk.referred_columns))}),"
        )
    if lines:
        last = lines[-1]
        if "  -- e.g." in last:
            body, comment = last.split(",  -- e.g.", 1)
            lines[-1] = body + "  -- e.g." + comment
        else:
            lines[-1] = last.rstrip(",")
    return f"CREATE TABLE {_quote_table(table.name, table.namespace)} (\n" + "\n".join(lines) + "\n);"


def render_schema(schema: Schema, *, with_samples: bool = True) -> str:
    """The whole schema as compact DDL, tables in reflection order."""
    return "\n\n".join(render_table(t, with_samples=with_samples) for t in schema.tables)
