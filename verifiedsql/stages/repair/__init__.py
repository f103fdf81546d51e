"""Deterministic repair of a candidate the engine rejected, before any model refinement (``schema_repair``).

The failing SQL is read on its sqlglot AST and held against the reflected schema (column types, keys,
samples). Each repair is a new SQL with a short description of what changed; the caller runs it through
both safety layers, and the first one that runs replaces the candidate's SQL. Nothing here calls the model
or the database: ``proposals`` is a pure function of the schema, the dialect, the SQL and its error.

Repair classes, all from schema facts only:

- **quotes**: a schema name left bare where it needs quotes (spaces or signs, a reserved word, MySQL's
  backticks: ``FROM Customer Info``, ``FROM order``) is quoted as the schema names it (``requote.py``);
  the other repairs are proposed on the quoted SQL, and a quoted SQL that fails anew is repaired next round.

- **columns**: an unknown or ambiguous column is resolved against the tables in scope. A qualifier moves to
  the joined table that has the column; a name that a foreign key (or the ``<table>_id``/``id`` naming of a
  single-column primary key) maps onto the qualified table's key becomes that key; a column held by no table
  in scope is reached through a many-to-one foreign key (a join is added, so no row is repeated), or the
  only table read is replaced by the one table that has every column the query names; an ambiguous column
  gets the qualifier that a join equality or a key makes equivalent.
- **identifiers**: case and quoting (PostgreSQL folds unquoted names), and near misses (underscores,
  plurals, one or two edits, abbreviations that leave no whole word out) of columns and tables, only when
  exactly one schema name is that close.
- **functions**: a function the engine does not know (MySQL habits such as ``YEAR()``, ``DATE_FORMAT``,
  ``CONCAT``, ``DATEDIFF``) is read as MySQL and written in the engine's dialect through sqlglot; on SQLite,
  ``YEAR``/``MONTH``/``DAY``/``EXTRACT`` become ``STRFTIME``.
- **types** (from the reflected types): a date function on an integer year column becomes the column
  (``EXTRACT(YEAR FROM year) = 2020`` -> ``year = 2020``), on text that holds dates or years a cast; a
  comparison or join of text with a number (a subquery's output included, ``IN (SELECT ...)`` too) casts the
  side whose sampled values all convert; ``LIKE`` and
  string functions on a non-text column cast it to text. SQLite converts types silently, so there only the
  date functions are repaired.
- **clauses**: a WHERE condition that holds an aggregate of its own query moves to HAVING, grouped by the
  selected columns when there is no GROUP BY; where the engine refuses a selected or ordering column that is
  not grouped (PostgreSQL, DuckDB, Snowflake; SQLite takes it from any row of the group), the column joins
  the GROUP BY, which keeps the groups when the grouped key determines it (an id and its name).

One module per family: ``columns.py``, ``joins.py`` (keys and joins), ``identifiers.py`` (near misses and
tables), ``dialect.py`` (dialect functions), ``types.py``, ``clauses.py``, and ``requote.py``; ``problems.py``
holds what they share, ``planner.py`` puts them together, ``propose.py`` turns their fixes into proposals and
runs them.
"""

from .dialect import date_part, day_of_year, week_of_year
from .identifiers import resembles
from .propose import MAX_PROPOSALS, MAX_ROUNDS, MAX_RUNS, Proposal, Repaired, proposals, repair_failure

__all__ = ["MAX_PROPOSALS", "MAX_ROUNDS", "MAX_RUNS", "Proposal", "Repaired", "date_part", "day_of_year",
           "proposals", "repair_failure", "resembles", "week_of_year"]
