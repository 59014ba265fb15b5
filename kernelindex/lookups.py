"""``field__any=[…]``: the rows whose field equals one of many values, as ``__in`` finds them.

On PostgreSQL it is ``field = ANY(%s::type[])`` with the values as one array parameter instead of
``field IN (%s, %s, …)`` with one parameter each. An import looks up its 2,000-run batches by
identity, public id, digest and name this way: with a placeholder per value, Django prepared
and psycopg split a query of thousands of placeholders, about a tenth of an import's CPU. Other
databases get ``IN`` (SQLite has no arrays). Registered on every field by ``KernelIndexConfig``.

Texts and integers go as the array's text literal (``'{…}'``), written here with ``str.replace``
and ``join``: psycopg's list adapter quotes element by element with a regular expression, and
2,000 run identities (canonical JSON, full of double quotes) cost it 60 ms a lookup. Integers
(ids) are written into the SQL, texts are bound.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import EmptyResultSet
from django.db.models.lookups import Exact, In

from kernelindex.inline import quoted


class AnyOf(In):
    lookup_name = "any"

    def _as_array(self, connection: Any) -> bool:
        return connection.vendor == "postgresql" and self.rhs_is_direct_value()

    def process_rhs(self, compiler: Any, connection: Any) -> tuple[str, list[Any]]:
        if not self._as_array(connection):
            return super().process_rhs(compiler, connection)
        field = self.lhs.output_field
        # As In: NULL equals nothing, and no value at all matches no row.
        values = [field.get_db_prep_value(value, connection, prepared=True) for value in self.rhs if value is not None]
        if not values:
            raise EmptyResultSet
        array = _array_literal(values)
        if {type(value) for value in values} == {int}:
            # Ids are written into the SQL, so the plan is made for them (a GPU's environments):
            # a prepared statement's generic plan, made for one GPU, read the whole newest-first
            # index for another (4 s at 1,000,000 runs).
            return f"'{array}'", []
        return "%s", [array]

    def get_rhs_op(self, connection: Any, rhs: str) -> str:
        if not self._as_array(connection):
            return super().get_rhs_op(connection, rhs)
        return f"= ANY({rhs}::{self.lhs.output_field.cast_db_type(connection)}[])"


def _array_literal(values: list[Any]) -> Any:
    """PostgreSQL's text form of an array of ``values`` when they are all texts or all integers;
    otherwise the list itself, for psycopg to adapt."""
    kinds = {type(value) for value in values}
    if kinds == {int}:
        return "{" + ",".join(map(str, values)) + "}"
    if kinds == {str}:
        # Inside double quotes only a backslash and a double quote need escaping.
        return "{" + ",".join('"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"' for v in values) + "}"
    return values


class InlinedExact(Exact):
    """``field=value`` with a text value written into the SQL (``kernelindex.inline.quoted``),
    for a column that a partial index's condition names (``visibility = 'published'`` of the
    published runs' indexes; a status or evidence level other than the common one).

    SQLite uses a partial index for ``column = ?`` only after checking the bound value against the
    index's condition, so it marks such a statement to be compiled again whenever that parameter
    is bound again: every run list, ranking and run page recompiled its query on every request
    (``sqlite_stmt.reprep``), 3 to 8% of their CPU. PostgreSQL, binding on the server, makes one
    generic plan of a prepared statement for every value: a plan of ``visibility = $1`` can use
    no index of the published runs, and one of ``status = $1`` made while "passed" was asked
    would walk the whole newest-first index for "failed". With the literal in the text a
    compiled statement is reused, and each value has its own. Registered on the fields by
    their app."""

    def process_rhs(self, compiler: Any, connection: Any) -> tuple[str, list[Any]]:
        if self.rhs_is_direct_value() and isinstance(self.rhs, str):
            return quoted(self.rhs), []
        return super().process_rhs(compiler, connection)
