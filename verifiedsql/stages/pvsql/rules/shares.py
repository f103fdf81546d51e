"""Ratios, percentages and shares: the scale, the divisor of "A to B", the rows each side counts, a
group's share of all, and the average number of things per owner."""

from __future__ import annotations

import re
from collections.abc import Sequence

from sqlglot import exp

from ...common.values import unaliased
from .tree import (
    Env,
    Finding,
    column_resolver,
    count_condition,
    counts_every_row,
    divided_value,
    drop_conjuncts,
    flag_count,
    is_flag_average,
    is_hundred,
    plain_count,
    reads_words,
    render,
    scales_a_division,
    select_outputs,
    sum_condition,
    text_equality,
    times_hundreds,
    top_divisions,
    uncast,
    unparen,
    where_conjuncts,
)
from .words import Rules


def scale(tree: exp.Expr, rules: Rules, env: Env) -> list[Finding]:
    """A ratio multiplied by 100 loses the factor; a percentage left a fraction is multiplied by 100 (unless it
    reads a column that stores percentages)."""
    if rules.scale == "ratio":
        found = []
        for mul, side in times_hundreds(tree):
            if not scales_a_division(mul):
                continue
            before = render(mul, env)

            def apply(side: exp.Expr = side) -> None:
                side.replace(exp.Literal.number("1.0"))
            after = render(mul.copy().transform(lambda n: exp.Literal.number("1.0") if is_hundred(n) else n), env)
            found.append(Finding("the question asks for a ratio, but the SQL multiplies it by 100",
                                 f"{before} -> {after} (a ratio, not a percentage)", apply))
        return found
    if rules.scale != "percent" or reads_words(tree, {"percent", "percentage", "pct"}):
        return []
    found = []
    for output in select_outputs(tree):
        if times_hundreds(output):
            continue
        tops = top_divisions(output)
        target: exp.Expr | None = tops[0] if len(tops) == 1 else None
        if target is None and not tops and is_flag_average(output):
            target = output
        if target is None:
            if tops:
                found.append(Finding(f"the question asks for a percentage, but {render(output, env)} is not "
                                     "multiplied by 100"))
            continue
        found.append(_times_hundred(target, env))
    return found


def _times_hundred(node: exp.Expr, env: Env) -> Finding:
    """``a / b`` -> ``100.0 * a / b`` (real arithmetic from the start); any other node -> ``100.0 * node``."""
    def build() -> exp.Expr:
        hundred = exp.Literal.number("100.0")
        if isinstance(node, exp.Div):
            left = node.this.copy()
            left = exp.paren(left) if isinstance(left, exp.Binary) else left
            return exp.Div(this=exp.Mul(this=hundred, expression=left), expression=node.expression.copy(),
                           typed=node.args.get("typed"), safe=node.args.get("safe"))
        return exp.Mul(this=hundred, expression=node.copy())
    before, after = render(node, env), render(build(), env)
    return Finding(f"the question asks for a percentage, but {before} is not multiplied by 100",
                   f"{before} -> {after} (a percentage)", lambda: node.replace(build()))


def divisor(tree: exp.Expr, rules: Rules, env: Env) -> list[Finding]:
    """"The ratio of A to B" computed as A / (A + B): divide by B."""
    if not rules.divisor:
        return []
    found = []
    for output in select_outputs(tree):
        for division in top_divisions(output):
            total = unparen(division.expression)
            if not isinstance(total, exp.Add):
                continue
            numerator = render(divided_value(division.this), env)
            terms = [unparen(total.left), unparen(total.right)]
            for kept, other in ((terms[1], terms[0]), (terms[0], terms[1])):
                if render(divided_value(other), env) != numerator:
                    continue
                before = render(division.expression, env)

                def apply(division: exp.Div = division, kept: exp.Expr = kept) -> None:
                    division.set("expression", kept.copy())
                found.append(Finding(f'"the ratio of A to {rules.divisor}" divides by A plus B ({before})',
                                     f"/ {before} -> / {render(kept, env)} (a ratio of A to B divides by B)", apply))
                break
    return found


def _names(value: str, words: str, codes: bool) -> bool:
    """Whether ``words`` name the stored ``value``: the value is one of them (or several in a row), or begins
    one of them by all but a short ending (``fail``: "failed"); a one-letter code (``codes``: every value of
    the column is one letter) names the word it begins (``F``: "female")."""
    text = value.strip().lower()
    tokens = re.findall(r"[a-z0-9]+", words.lower())
    if not text:
        return False
    if codes:
        return len(text) == 1 and any(token[0] == text for token in tokens)
    if " " in text:
        return f" {text} " in f" {' '.join(tokens)} "
    return any(token == text or (len(text) >= 3 and token.startswith(text) and len(token) - len(text) <= 3)
               for token in tokens)


def _named_value(values: Sequence[object], words: str, other: str) -> str | None:
    """The one stored text value ``words`` name and ``other`` (the ratio's other side) does not."""
    texts = [v for v in values if isinstance(v, str)]
    codes = bool(texts) and all(len(v.strip()) == 1 for v in texts)
    hits = {v for v in texts if _names(v, words, codes) and not _names(v, other, codes)}
    return next(iter(hits)) if len(hits) == 1 else None


def _stored_values(tree: exp.Select, column: exp.Column, env: Env) -> Sequence[object]:
    """The values ``column`` holds: read through ``env.values`` where it can be, else its samples."""
    column_of = column_resolver(tree, env)
    schema_column = column_of(column)
    if schema_column is None:
        return ()
    if env.values is None:
        return schema_column.samples
    tables = [t for t in tree.find_all(exp.Table) if t.find_ancestor(exp.Select) is tree]
    node = next((t for t in tables if t.alias_or_name.lower() == column.table.lower()), None) if column.table \
        else (tables[0] if len(tables) == 1 else None)
    if node is None:
        return schema_column.samples
    name = column.this if isinstance(column.this, exp.Identifier) else exp.to_identifier(column.name)
    return env.values(unaliased(node), name)


def ratio_terms(tree: exp.Expr, rules: Rules, env: Env) -> list[Finding]:
    """"The ratio of A to B" computed over every row (``count of A / COUNT(*)``, ``COUNT(*) / count of A``, or
    ``COUNT(*) / COUNT(*)`` with A in the WHERE): A's count over B's. A is the condition the SQL counts or
    filters on; B is a WHERE condition on a value B's words name (dropped from the WHERE, which would keep
    only B's rows), else A's column equal to the stored value B's words name."""
    if not (rules.divisor and rules.dividend) or not isinstance(tree, exp.Select) or tree.args.get("group"):
        return []
    a_words, b_words = rules.dividend, rules.divisor
    divisions = [d for output in select_outputs(tree) for d in top_divisions(output)]
    if len(divisions) != 1:
        return []
    division = divisions[0]
    top, bottom = count_condition(division.this), count_condition(division.expression)
    if top is not None and bottom is not None:
        return []
    conjuncts = where_conjuncts(tree)

    def naming(condition: exp.Expr | None, words: str, other: str) -> bool:
        found = text_equality(condition) if condition is not None else None
        return found is not None and _names(found[1], words, len(found[1].strip()) == 1) \
            and not _names(found[1], other, len(found[1].strip()) == 1)

    dropped: list[exp.Expr] = []
    if top is not None and plain_count(division.expression) is not None:
        a = top
    elif bottom is not None and plain_count(division.this) is not None and naming(bottom, a_words, b_words):
        a = bottom
    elif plain_count(division.this) is not None and plain_count(division.expression) is not None:
        a_filters = [c for c in conjuncts if naming(c, a_words, b_words)]
        if len(a_filters) != 1:
            return []
        a = a_filters[0]
        dropped.append(a)
    else:
        return []
    b_filters = [c for c in conjuncts if naming(c, b_words, a_words)]
    b: exp.Expr | None = None
    if len(b_filters) == 1:
        b = b_filters[0]
        dropped.append(b)
    elif (equal := text_equality(a)) is not None:
        value = _named_value(_stored_values(tree, equal[0], env), b_words, a_words)
        b = exp.EQ(this=equal[0].copy(), expression=exp.Literal.string(value)) if value is not None else None
    before = render(division, env)
    if b is None:
        return [Finding(f'"the ratio of A to {b_words}" divides by B, but {before} divides by every row')]
    if (a_equal := text_equality(a)) is not None:  # a filter on A's own value would leave B no rows
        dropped += [c for c in conjuncts if (e := text_equality(c)) is not None and e[1] == a_equal[1]
                    and render(e[0], env) == render(a_equal[0], env) and not any(c is d for d in dropped)]
    top_count, bottom_count = divided_value(division.this), divided_value(division.expression)

    def apply(a: exp.Expr = a, b: exp.Expr = b) -> None:
        a_count, b_count = flag_count(a), flag_count(b)  # built before the WHERE loses them
        if top is None:
            top_count.replace(a_count)
        bottom_count.replace(b_count)
        if dropped:
            drop_conjuncts(tree, dropped)

    fix = f"{before} -> {render(flag_count(a), env)} / {render(flag_count(b), env)} (A's rows over B's)"
    return [Finding(f'"the ratio of A to {b_words}" divides by B, but {before} divides by every row', fix,
                    apply)]


def _same_rows(tree: exp.Select, division: exp.Div, env: Env) -> bool:
    """Whether both sides of ``division`` aggregate the same rows alike: the same aggregate, or (in a one-table
    query) two counts of every row."""
    top, bottom = divided_value(division.this), divided_value(division.expression)
    if isinstance(top, exp.AggFunc) and render(top, env) == render(bottom, env):
        return True
    counts = plain_count(division.this), plain_count(division.expression)
    one_table = not tree.args.get("joins") and isinstance((tree.args.get("from_") or exp.From()).this, exp.Table)
    column_of = column_resolver(tree, env)
    return one_table and all(c is not None and counts_every_row(c, column_of) for c in counts)


def _over_rows_that(aggregate: exp.Expr, condition: exp.Expr) -> exp.Expr | None:
    """``COUNT(...)`` -> ``SUM(CASE WHEN condition THEN 1 ELSE 0 END)``, ``SUM(x)`` -> ``SUM(CASE WHEN
    condition THEN x ELSE 0 END)``; None for any other aggregate."""
    if isinstance(aggregate, exp.Count):
        return flag_count(condition)
    if isinstance(aggregate, exp.Sum):
        return exp.Sum(this=exp.Case(ifs=[exp.If(this=condition.copy(), true=aggregate.this.copy())],
                                     default=exp.Literal.number(0)))
    return None


def whole(tree: exp.Expr, rules: Rules, env: Env) -> list[Finding]:
    """A percentage or a fraction of the rows its WHERE keeps, which is 100% (1) whatever the data: where
    both sides aggregate the same rows (``COUNT(*) * 100 / COUNT(*) ... WHERE c``), the numerator counts ``c``
    over every row instead; and a numerator's ``CASE WHEN c`` that the WHERE also requires is not required of
    the denominator's rows. Grouped queries are ``group_share``'s."""
    if not rules.scale or rules.divisor or not isinstance(tree, exp.Select) or tree.args.get("group"):
        return []
    conjuncts = where_conjuncts(tree)
    divisions = [d for output in select_outputs(tree) for d in top_divisions(output)]
    if not conjuncts or len(divisions) != 1:
        return []
    division = divisions[0]
    before = render(division, env)
    condition = count_condition(division.this) or sum_condition(division.this)
    if condition is not None:
        same = [c for c in conjuncts if render(c, env) == render(unparen(condition), env)]
        if not same:
            return []
        return [Finding(f"the WHERE keeps only the rows the numerator counts, so {before} is 100% of them",
                        f"WHERE {render(same[0], env)} dropped (the share is of every row)",
                        lambda: drop_conjuncts(tree, same))]
    if not _same_rows(tree, division, env):
        return []
    problem = f"{before} aggregates the same rows on both sides, so it is 100% of them whatever the data"
    top = divided_value(division.this)
    rebuilt = _over_rows_that(top, conjuncts[0]) if len(conjuncts) == 1 else None
    if rebuilt is None:
        return [Finding(problem)]
    kept = conjuncts[0]

    def apply(top: exp.Expr = top, kept: exp.Expr = kept, rebuilt: exp.Expr = rebuilt) -> None:
        top.replace(rebuilt)
        drop_conjuncts(tree, [kept])
    return [Finding(problem, f"{render(top, env)} -> {render(rebuilt, env)}, WHERE {render(kept, env)} dropped (the "
                             "share is of every row)", apply)]


def group_share(tree: exp.Expr, rules: Rules, env: Env) -> list[Finding]:
    """Each group's percentage or fraction "of all" computed within the group (``COUNT(*) * 100 / COUNT(*)
    ... GROUP BY g``), which is 100% (1) in every group: the denominator is the total over every group (the
    same FROM, joins and WHERE, in a subquery)."""
    if not rules.scale or rules.divisor or not isinstance(tree, exp.Select) or not tree.args.get("group"):
        return []
    divisions = [d for output in select_outputs(tree) for d in top_divisions(output)]
    if len(divisions) != 1 or not _same_rows(tree, divisions[0], env):
        return []
    division = divisions[0]
    bottom = divided_value(division.expression)
    total = tree.copy()
    for part in ("group", "having", "order", "limit", "offset", "distinct", "qualify", "with_"):
        total.set(part, None)
    total.set("expressions", [bottom.copy()])
    subquery = exp.Subquery(this=total)
    return [Finding(f"{render(division, env)} divides each group by itself, so it is 100% of it whatever the data",
                    f"/ {render(bottom, env)} -> / {render(subquery, env)} (the share of the total)",
                    lambda: bottom.replace(subquery))]


def per_item(tree: exp.Expr, rules: Rules, env: Env) -> list[Finding]:
    """"On average, how many X does a Y have" answered with the mean of a stored column (``AVG(quantity)``,
    ``SUM(quantity) / COUNT(*)``): X's rows over the distinct Ys of X's table (``1.0 * COUNT(*) /
    COUNT(DISTINCT y_id)``)."""
    if not rules.per_item or not isinstance(tree, exp.Select) or tree.args.get("group"):
        return []
    outputs = select_outputs(tree)
    if len(outputs) != 1 or outputs[0].find(exp.Distinct, exp.Subquery) is not None:
        return []
    output = uncast(outputs[0])
    mean = isinstance(output, exp.Avg) and isinstance(unparen(output.this), exp.Column)
    divisions = top_divisions(outputs[0])
    ratio = len(divisions) == 1 and isinstance(top := divided_value(divisions[0].this), exp.Sum) \
        and isinstance(unparen(top.this), exp.Column) and plain_count(divisions[0].expression) is not None
    if not (mean or ratio):
        return []
    items, owner = rules.per_item
    catalog = env.catalog()
    words = items.split()
    stems = {"_".join(words), "_".join(words).rstrip("s"), words[-1], words[-1].rstrip("s")}
    clauses = [tree.args.get("from_"), *(tree.args.get("joins") or [])]
    read = [n for clause in clauses if clause is not None and isinstance(n := clause.this, exp.Table)]
    held = [n for n in read if n.name.lower() in stems or n.name.lower().rstrip("s") in stems]
    if len(held) != 1 or (table := catalog.table(held[0].name)) is None:
        return []
    owner_stem = owner[:-1] if owner.endswith("s") else owner
    keys = [c for c in table.columns if c.name.lower() in (f"{owner_stem}_id", f"{owner_stem}id")]
    if len(keys) != 1:
        return []
    key = exp.column(catalog.ident(keys[0].name), table=exp.to_identifier(held[0].alias_or_name)
                     if len(read) > 1 else None)
    rebuilt = exp.Div(this=exp.Cast(this=exp.Count(this=exp.Star()), to=exp.DataType.build("DOUBLE")),
                      expression=exp.Count(this=exp.Distinct(expressions=[key])))
    target = tree.expressions[0]
    before = render(target, env)

    def apply() -> None:
        node = tree.expressions[0]
        node.replace(exp.alias_(rebuilt.copy(), node.alias) if node.alias else rebuilt.copy())
    return [Finding(f"the question asks how many {items} a {owner} has on average, but {before} is a mean of "
                    "stored values", f"{before} -> {render(rebuilt, env)} (rows over distinct {owner}s)", apply)]
