"""Querysets compiled to SQL once per process, then run with new values.

Django compiles a queryset to SQL on every evaluation. For the run page's main query (the run
joined with its source, benchmark, workload, group, environment, protocol, implementation and
project) that took about 1 ms, eight times what SQLite took to run it. A page asks the same
handful of queries with different ids on every request, so a ``Prepared`` query compiles its
queryset once per database connection, with a placeholder for each value, and afterwards only
puts the values in the SQL's parameters, runs it, and builds the model instances as Django's
``ModelIterable`` does, from what the first compilation worked out (the select list, converters,
related populators: for a one-row query Django's own iteration cost four times the query)::

    run_by_id = Prepared(lambda public_id: Run.objects.filter(public_id=public_id)[:1], public_id=str)
    runs = run_by_id(public_id="01a0352b")
    page = ranked.slice(50, 75, group_id=7)  # rows 50 to 75: LIMIT 25 OFFSET 50
    Paginator(ranked.rows(group_id=7), 25)  # each page one query (give the paginator its count)

Values are ``str`` or ``int`` and are compared with ``=`` (an ``exact`` lookup): a value the
database receives unchanged, so its position in the parameters can be found. A query whose
placeholder does not show up among its parameters (a lookup that rewrites the value, a slice
written into the SQL) fails on its first run. ``None`` would change the SQL (``IS NULL``), so a
call with ``None``, or with a value of another type, runs the queryset the ordinary way. The
first call compiles the queryset twice, with two sets of placeholders, and fails unless both give
the same SQL.
``prefetch_related`` lookups run as usual after the main query. A ``values_list()`` queryset
gives its tuples; ``values()``, ``values_list(flat=True)`` and a related manager's queryset (its
known related objects) are refused. ``PreparedIn`` compiles a query over a list of ids once per
length of the list.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any, Generic, TypeVar
from weakref import WeakKeyDictionary

from django.core.exceptions import ImproperlyConfigured
from django.db import connections
from django.db.models import Model, QuerySet, prefetch_related_objects
from django.db.models.query import ModelIterable, ValuesListIterable, get_related_populators

M = TypeVar("M", bound=Model)

# Placeholder values: small positive numbers, so that no integer column of any size or sign
# finds them out of range (Django answers such a lookup with an empty result, not with SQL).
_numbers = itertools.count(20_001)


class _Compiled:
    """A query's SQL and parameters, where each value goes, and what ``ModelIterable`` works out
    from the compiler to build the rows' instances."""

    def __init__(self, queryset: QuerySet, compiler: Any, sql: str, params: tuple, slots: dict[str, list[int]]) -> None:
        self.queryset, self.compiler, self.sql, self.params, self.slots = queryset, compiler, sql, params, slots
        select, klass_info = compiler.select, compiler.klass_info
        self.converters = compiler.get_converters([column[0] for column in select[0 : compiler.col_count]])
        self.tuples = queryset._iterable_class is ValuesListIterable  # values_list(): the rows as tuples
        if self.tuples:
            return
        self.model, self.db = klass_info["model"], queryset.db
        fields = klass_info["select_fields"]
        self.start, self.end = fields[0], fields[-1] + 1
        self.init_list = [column[0].target.attname for column in select[self.start : self.end]]
        self.populators = get_related_populators(klass_info, select, queryset.db)
        self.annotations = tuple((compiler.annotation_col_map or {}).items())

    def params_with(self, values: dict[str, Any]) -> list[Any]:
        params = list(self.params)
        for name, positions in self.slots.items():
            for position in positions:
                # The parameter's own class: PostgreSQL's backend sends ints typed (Int4, Int8…).
                params[position] = type(params[position])(values[name])
        return params


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
        if not self._compilable(values):
            return list(self._build(**values))  # None, or a value of another type: the ordinary way
        connection, compiled = self._compiled_for(values)
        return self._run(connection, compiled, compiled.sql, compiled.params_with(values))

    def slice(self, start: int, stop: int, **values: Any) -> list[M]:
        """Rows ``start`` to ``stop`` (``queryset[start:stop]``) of the query with ``values``: the
        SQL compiled once, then ``LIMIT`` and ``OFFSET`` appended (a page of a list)."""
        if not 0 <= start <= stop:
            raise ValueError(f"Prepared slice [{start}:{stop}] must have 0 <= start <= stop")
        if not self._compilable(values):
            return list(self._build(**values)[start:stop])
        connection, compiled = self._compiled_for(values)
        if compiled.queryset.query.is_sliced:
            raise ImproperlyConfigured("A prepared query sliced by its own queryset cannot be sliced again")
        # Written into the SQL (ints, so safe): as parameters, PostgreSQL's generic plan of the
        # prepared statement is made for a LIMIT it does not know (a tenth of the rows), costs
        # more than a plan for 51 rows, and is never chosen, so every page was planned anew.
        sql = f"{compiled.sql} LIMIT {int(stop - start)} OFFSET {int(start)}"
        return self._run(connection, compiled, sql, compiled.params_with(values))

    def rows(self, **values: Any) -> PreparedRows[M]:
        """The query with ``values`` as a sequence that runs only the slice taken of it: a
        Paginator given its count (``known_count``) slices one page, one query."""
        return PreparedRows(self, values)

    def _compilable(self, values: dict[str, Any]) -> bool:
        """Whether ``values`` (which must name exactly the query's values) go into the compiled
        SQL: each of its declared type, so not None, which would change the SQL."""
        if values.keys() != self._types.keys():
            raise TypeError(f"Prepared query takes {sorted(self._types)}, got {sorted(values)}")
        return all(type(values[name]) is kind for name, kind in self._types.items())

    def _compiled_for(self, values: dict[str, Any]) -> tuple[Any, _Compiled]:
        if self._queryset is None:
            self._queryset = self._build(**self._placeholders[0])
        connection = connections[self._queryset.db]
        compiled = self._compiled.get(connection)
        if compiled is None:
            compiled = self._compiled[connection] = self._compile(self._queryset)
        return connection, compiled

    @staticmethod
    def _run(connection: Any, compiled: _Compiled, sql: str, params: list[Any]) -> list[M]:
        """Run ``sql`` and build its rows' instances as Django's ``ModelIterable`` does, with what
        it works out per query (the select list, converters, related populators) from the first
        compilation: for a one-row page query that bookkeeping cost four times the query."""
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            rows = cursor.fetchall()
        if compiled.converters:
            rows = compiled.compiler.apply_converters(rows, compiled.converters)
        if compiled.tuples:
            return list(map(tuple, rows))
        model, db, start, end, names = compiled.model, compiled.db, compiled.start, compiled.end, compiled.init_list
        populators, annotations = compiled.populators, compiled.annotations
        objects = []
        for row in rows:
            obj = model.from_db(db, names, row[start:end])
            for populator in populators:
                populator.populate(row, obj)
            for attribute, position in annotations:
                setattr(obj, attribute, row[position])
            objects.append(obj)
        lookups = compiled.queryset._prefetch_related_lookups
        if lookups and objects:
            prefetch_related_objects(objects, *lookups)
        return objects

    def _compile(self, queryset: QuerySet[M]) -> _Compiled:
        query = queryset.query
        # values_list() in the order of its fields (Django reorders some: annotations, extra()).
        in_order = [*query.extra_select, *query.values_select, *query.annotation_select] == list(queryset._fields or ())
        tuples = queryset._iterable_class is ValuesListIterable and in_order
        if not (tuples or queryset._iterable_class is ModelIterable) or queryset._known_related_objects:
            raise ImproperlyConfigured("A prepared query yields model instances of a plain queryset, or values_list()")
        compiler = query.get_compiler(using=queryset.db)
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
        return _Compiled(queryset, compiler, sql, tuple(params), slots)


class PreparedRows(Generic[M]):
    """``Prepared.rows``: slicing it (``rows[50:75]``) runs ``Prepared.slice``."""

    def __init__(self, prepared: Prepared[M], values: dict[str, Any]) -> None:
        self._prepared, self._values = prepared, values

    def __getitem__(self, item: slice) -> list[M]:
        if not isinstance(item, slice) or item.step is not None or item.stop is None:
            raise TypeError("Prepared rows are taken as a slice [start:stop]")
        return self._prepared.slice(item.start or 0, item.stop, **self._values)


class PreparedIn(Generic[M]):
    """``build(ids)`` (a queryset over ``…__in=ids``, whose SQL depends on how many ids there are,
    not on which) compiled once for each length of ``ids``: ``PreparedIn(build)(ids)``."""

    def __init__(self, build: Callable[[list[int]], QuerySet[M]]) -> None:
        self._build = build
        self._by_length: dict[int, Prepared[M]] = {}

    def __call__(self, ids: list[int]) -> list[M]:
        if not ids:
            return list(self._build([]))
        prepared = self._by_length.get(len(ids))
        if prepared is None:
            names = [f"id{position}" for position in range(len(ids))]
            prepared = Prepared(
                lambda **values: self._build([values[name] for name in names]), **dict.fromkeys(names, int)
            )
            self._by_length[len(ids)] = prepared
        return prepared(**{f"id{position}": value for position, value in enumerate(ids)})
