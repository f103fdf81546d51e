"""Whether an answer's ``ORDER BY ... LIMIT n`` cuts through rows the ordering ranks equal.

"The grade with the most students" written as ``ORDER BY COUNT(*) DESC LIMIT 1`` returns one of the tied
grades when several share the top count, and which one is the engine's choice: SQLite and PostgreSQL pick
differently, and five candidates that agree on the SQL agree on the engine's pick, not on the answer. The check
reads the ordering keys of the first ``n + 1`` rows, one bounded read-only query, and says whether row ``n + 1``
ranks equal with row ``n``.
"""

from __future__ import annotations

from sqlglot import exp

from ..errors import QueryError, QueryTimeoutError, QuestionTimeoutError, UnsafeSQLError
from ..report import Evidence
from ..results import ResultSet
from .common.orderkeys import sort_keys, with_keys
from .context import QuestionContext

TIE_TIMEOUT_S = 5.0  # the one probe query (also capped by statement_timeout_s and the time left)


def limit_of(tree: exp.Expr) -> int | None:
    """The row limit of an ordered, non-DISTINCT single SELECT (``ORDER BY ... LIMIT n``), else None."""
    if not isinstance(tree, exp.Select) or tree.args.get("distinct") or not tree.args.get("order"):
        return None
    limit = tree.args.get("limit")
    count = limit.expression if isinstance(limit, exp.Limit) else None
    return int(count.this) if isinstance(count, exp.Literal) and count.is_int else None


def tie_probe(tree: exp.Select, limit: int) -> exp.Select | None:
    """The query with its ordering keys appended to its outputs (``orderkeys.with_keys``), limited to
    ``limit + 1`` rows in the same order; None when a key cannot be read back (a position out of range)."""
    keys = sort_keys(tree)
    return None if keys is None else with_keys(tree, keys).limit(limit + 1)


def tie_evidence(ctx: QuestionContext, tree: exp.Expr | None, result: ResultSet) -> list[Evidence]:
    """Against the answer when its LIMIT cuts through tied rows; nothing when it has no such LIMIT, returned
    fewer rows than the limit, or is tie-free; neutral when the probe could not run."""
    limit = limit_of(tree) if tree is not None else None
    if limit is None or limit == 0 or result.row_count != limit or result.truncated:
        return []
    assert isinstance(tree, exp.Select)
    probe = tie_probe(tree, limit)
    if probe is None:
        return []
    width = len(tree.args["order"].expressions)
    try:
        rows = ctx.query(probe.sql(dialect=ctx.database.profile.sqlglot_dialect), timeout_s=TIE_TIMEOUT_S,
                         doing="a tie check").rows
    except (QueryError, QueryTimeoutError, QuestionTimeoutError, UnsafeSQLError) as error:
        return [Evidence("ties", "neutral", f"whether the LIMIT cuts through tied rows was not checked ({error})")]
    if len(rows) <= limit or rows[limit][-width:] != rows[limit - 1][-width:]:
        return []
    return [Evidence("ties", "against",
                     f"the LIMIT {limit} cuts through rows the ORDER BY ranks equal (row {limit + 1} ties with row "
                     f"{limit}), so which of them are returned is the engine's choice")]
