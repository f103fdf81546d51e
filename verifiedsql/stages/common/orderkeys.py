"""The keys of a query's outermost ORDER BY, and the query that reads them back beside its rows: what tells
which rows the ordering ranks equal (the answer's ``ties`` evidence, ``stages/ties.py``, and the scoring of tied
gold rows, ``bench/scoring.py``)."""

from __future__ import annotations

from sqlglot import exp


def sort_keys(select: exp.Select) -> list[exp.Expr] | None:
    """The outermost ORDER BY's key expressions, each select alias or position replaced by the output it names;
    None without an ORDER BY, or with a position out of range."""
    order = select.args.get("order")
    if order is None:
        return None
    outputs = list(select.expressions)
    aliased = {e.alias.lower(): e.this for e in outputs if isinstance(e, exp.Alias)}
    keys: list[exp.Expr] = []
    for ordered in order.expressions:
        key = ordered.this
        if isinstance(key, exp.Literal) and key.is_int:
            if not 1 <= int(key.this) <= len(outputs):
                return None
            named = outputs[int(key.this) - 1]
            key = named.this if isinstance(named, exp.Alias) else named
        elif isinstance(key, exp.Column) and not key.table and key.name.lower() in aliased:
            key = aliased[key.name.lower()]
        keys.append(key.copy())
    return keys


def with_keys(select: exp.Select, keys: list[exp.Expr]) -> exp.Select:
    """A copy of ``select`` with ``keys`` appended to its outputs (``tie_key_0``, ...), so that each row ends
    with its ordering keys; an ORDER BY that names an output still reads."""
    return select.copy().select(*(exp.alias_(key, f"tie_key_{i}") for i, key in enumerate(keys)), append=True)
