"""Querysets compiled to SQL once per process, then run with new values.

Django compiles a queryset to SQL on every evaluation. For the run page's main query (the run
joined with its source, benchmark, workload, group, environment, protocol, implementation and
project) that took about 1 ms, eight times what SQLite took to run it. A page asks the same
handful of queries with different ids on every request, so a ``Prepared`` query compiles its
queryset once per database connection, with a placeholder for each value, and afterwards only
puts the values in the SQL's parameters and builds the model instances as Django does (its own
``ModelIterable`` over the compiler of the first compilation)::

    run_by_id = Prepared(lambda public_id: Run.objects.filter(public_id=public_id)[:1], public_id=str)
    runs = run_by_id(public_id="01a0352b")

Values are ``str`` or ``int`` and are compared with ``=`` (an ``exact`` lookup): a value the
database receives unchanged, so its position in the parameters can be found. A query whose
placeholder does not show up among its parameters (a lookup that rewrites the value, a slice
written into the SQL) fails on its first run. ``None`` would change the SQL (``IS NULL``), so a
call with ``None``, or with a value of another type, runs the queryset the ordinary way. The
first call compiles the queryset twice, with two sets of placeholders, and fails unless both give
the same SQL.
``prefetch_related`` lookups run as usual after the main query.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable
from typing import Any, Generic, TypeVar
from weakref import WeakKeyDictionary

from django.core.exceptions import ImproperlyConfigured
from django.db import connections
from django.db.models import Model, QuerySet

M = TypeVar("M", bound=Model)

# Placeholder values: small positive numbers, so that no integer column of any size or sign
# finds them out of range (Django answers such a lookup with an empty result, not with SQL).
_numbers = itertools.count(20_001)


class _Compiled:
    __slots__ = ("queryset", "compiler", "sql", "params", "slots", "converters")

    def __init__(
        self, queryset: QuerySet, compiler: Any, sql: str, params: tuple, slots: dict[str, list[int]], converters: Any
    ) -> None:
        self.queryset, self.compiler, self.sql, self.params = queryset, compiler, sql, params
        self.slots, self.converters = slots, converters


class Prepared(Generic[M]):
    """``build(**values)`` → a queryset; ``types`` names each value and its type (str or int)."""

    def __init__(self, build: Callable[..., QuerySet[M]], **types: type) -> None:
        for name, kind in types.items():
            if kind not in (str, int):
                raise ImproperlyConfigured(f"Prepared value {name!r} must be str or int, not {kind.__name__}")
        self._build = build
        self._types = types
        # Two sets of placeholders: a parameter is a value's slot when it holds that value's
        # placeholder in both compilations, so a constant of the query that happens to equal one
        # placeholder is never taken for it.
        self._placeholders: tuple[dict[str, str | int], ...] = tuple(
            {
                name: (f"prepared:{name}:{next(_numbers)}" if kind is str else next(_numbers))
                for name, kind in types.items()
            }
            for _ in range(2)
        )
        self._compiled: WeakKeyDictionary[Any, _Compiled] = WeakKeyDictionary()
        self._queryset: QuerySet[M] | None = None  # built once, with the first placeholders

    def __call__(self, **values: Any) -> list[M]:
        if values.keys() != self._types.keys():
            raise TypeError(f"Prepared query takes {sorted(self._types)}, got {sorted(values)}")
        if any(type(values[name]) is not kind for name, kind in self._types.items()):
            return list(self._build(**values))  # None, or a value of another type: the ordinary way
        if self._queryset is None:
            self._queryset = self._build(**self._placeholders[0])
        connection = connections[self._queryset.db]
        compiled = self._compiled.get(connection)
        if compiled is None:
            compiled = self._compiled[connection] = self._compile(self._queryset)
        params = list(compiled.params)
        for name, positions in compiled.slots.items():
            for position in positions:
                # The parameter's own class: PostgreSQL's backend sends ints typed (Int4, Int8…).
                params[position] = type(params[position])(values[name])
        # A copy of the first compilation's compiler (its select list, joins and converters) that
        # answers the stored SQL with these parameters; Django's iterable builds the instances.
        compiler = copy.copy(compiled.compiler)
        sql, bound, converters = compiled.sql, tuple(params), compiled.converters
        compiler.as_sql = lambda *args, **kwargs: (sql, bound)
        compiler.get_converters = lambda expressions: converters  # its select list's, found once
        queryset = compiled.queryset._chain()
        queryset.query.get_compiler = lambda *args, **kwargs: compiler
        return list(queryset)

    def _compile(self, queryset: QuerySet[M]) -> _Compiled:
        compiler = queryset.query.get_compiler(using=queryset.db)
        sql, params = compiler.as_sql()
        other = self._build(**self._placeholders[1])
        other_sql, other_params = other.query.get_compiler(using=queryset.db).as_sql()
        if other_sql != sql or len(other_params) != len(params):
            raise ImproperlyConfigured(f"The SQL of a prepared query depends on its values: {sql} / {other_sql}")
        slots: dict[str, list[int]] = {}
        for name, kind in self._types.items():
            first, second = self._placeholders[0][name], self._placeholders[1][name]
            slots[name] = [
                i
                for i, (a, b) in enumerate(zip(params, other_params, strict=True))
                if isinstance(a, kind) and a == first and isinstance(b, kind) and b == second
            ]
            if not slots[name]:
                raise ImproperlyConfigured(f"Prepared value {name!r} is not a parameter of the query's SQL: {sql}")
        converters = compiler.get_converters([column[0] for column in compiler.select[0 : compiler.col_count]])
        return _Compiled(queryset, compiler, sql, tuple(params), slots, converters)
