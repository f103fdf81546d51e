"""Least privilege on PostgreSQL: which role questions run under, and a warning when it is powerful.

Checked once per ``Database``, on the first connection it uses. The role is ``Options.question_role`` when
set (each generated query runs under ``SET LOCAL ROLE``, see ``readonly.postgresql``), else the login
role. A superuser, ``REPLICATION`` or ``BYPASSRLS`` role gets a warning: it is logged on the
``verifiedsql`` logger and put into every report (``VerificationReport.warnings``). A ``question_role``
that does not exist, or that the login role may not ``SET ROLE`` to, is a ``ConfigurationError``.
"""

from __future__ import annotations

import logging
from typing import Any

from ..errors import ConfigurationError

LOGGER = logging.getLogger("verifiedsql")
RECIPE = "CREATE ROLE {role} NOLOGIN; GRANT pg_read_all_data TO {role}; GRANT {role} TO {login};"

_ROLE = """SELECT current_user, r.rolname, r.rolsuper, r.rolreplication, r.rolbypassrls,
       pg_has_role(current_user, r.oid, 'MEMBER')
FROM pg_catalog.pg_roles r WHERE r.rolname = coalesce(%(role)s, current_user)"""


def _role_row(raw: Any, question_role: str | None) -> tuple[Any, ...]:
    """(login, role, superuser, replication, bypassrls, member) or (login,) when the role does not exist;
    read on ``raw`` (psycopg) and left as idle as it was."""
    from psycopg.pq import TransactionStatus

    idle = raw.info.transaction_status == TransactionStatus.IDLE
    try:
        with raw.cursor() as cursor:
            cursor.execute(_ROLE, {"role": question_role})
            row = cursor.fetchone()
            if row is None:
                cursor.execute("SELECT current_user")
                row = cursor.fetchone()
    finally:
        if idle and not raw.autocommit:
            raw.rollback()
    return tuple(row)


def check_role(conn: Any, question_role: str | None) -> list[str]:
    """The warnings about the role questions run under on ``conn`` (a SQLAlchemy connection to
    PostgreSQL); raises ``ConfigurationError`` for an unusable ``question_role``."""
    row = _role_row(conn.connection.driver_connection, question_role)
    if len(row) == 1:
        login = row[0]
        raise ConfigurationError(
            f"question_role={question_role!r} does not exist on this PostgreSQL server; create it "
            f"({RECIPE.format(role=question_role, login=login)}) or leave question_role unset."
        )
    login, role, superuser, replication, bypassrls, member = row
    if not member:
        raise ConfigurationError(
            f"the login role {login!r} may not SET ROLE {role!r}; run GRANT \"{role}\" TO \"{login}\" "
            "or choose another question_role."
        )
    rights = [name for name, held in (("SUPERUSER", superuser), ("REPLICATION", replication),
                                      ("BYPASSRLS", bypassrls)) if held]
    if not rights:
        return []
    attributes = " and ".join(rights) + (" attributes" if len(rights) > 1 else " attribute")
    warning = (
        f"questions run as the PostgreSQL role {role!r}, which has the {attributes}: what the guards miss "
        "runs with those rights; set question_role= to a role with only pg_read_all_data "
        f"({RECIPE.format(role='vsql_reader', login=login)})."
    )
    LOGGER.warning("verifiedsql: %s", warning)
    return [warning]
