"""``kernelindex.inline``: the constants an index depends on are written into the SQL.

A bound ``visibility = %s`` or ``COALESCE(observed_at, %s)`` hides from a prepared statement's
generic plan (PostgreSQL) and from SQLite's planner the partial and expression indexes that
serve every list of runs; these tests pin that the lists' SQL carries them as text.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from django.db import connection

from kernelindex.inline import literal
from runs.models import Run
from runs.ordering import newest_first
from runs.selectors import one_of
from tests.factories import sol_group


def test_literals_are_quoted_and_only_constants_that_have_one_are_written() -> None:
    assert literal("published", "postgresql") == "'published'"
    assert literal("it's 100%", "sqlite") == "'it''s 100%%'"  # "%%": the SQL is %-formatted
    assert literal(2**31 - 1, "postgresql") == "2147483647"
    assert literal(1e300, "sqlite") == "1e+300"
    assert literal(datetime(1, 1, 1, tzinfo=UTC), "postgresql") == "'0001-01-01T00:00:00+00:00'::timestamptz"
    # Left to the driver: booleans, naive dates, dates on SQLite (Django gives it text), None.
    for value, vendor in [(True, "postgresql"), (datetime(1, 1, 1), "postgresql"), (None, "sqlite")]:
        assert literal(value, vendor) is None


def compiled(queryset: Any) -> tuple[str, tuple[Any, ...]]:
    """The SQL and parameters Django sends (the logged SQL has the parameters filled in)."""
    return queryset.query.get_compiler(using="default").as_sql()


@pytest.mark.django_db
def test_the_newest_first_list_carries_its_visibility_and_sentinel_as_text() -> None:
    sol_group(3)
    runs = Run.objects.visible().order_by(*newest_first())
    assert len(runs[:2]) == 2
    sql, params = compiled(runs)
    assert "\"visibility\" = 'published'" in sql
    sentinel = "'0001-01-01T00:00:00+00:00'::timestamptz" if connection.vendor == "postgresql" else "'0001-01-01"
    assert f'COALESCE("runs_run"."observed_at", {sentinel}' in sql
    assert params == ()  # nothing left to bind


@pytest.mark.django_db
def test_statuses_evidence_levels_and_ids_are_written_into_the_sql() -> None:
    sol_group(3)
    environment = Run.objects.first().environment_id
    failed = Run.objects.filter(status="failed", evidence_level="kernelindex_rerun")
    assert failed.count() == 0
    sql, params = compiled(failed)
    assert "\"status\" = 'failed'" in sql and "\"evidence_level\" = 'kernelindex_rerun'" in sql
    assert params == ()
    odd = Run.objects.filter(status="50%s 'x'")  # quoted, and "%" stays text on both databases
    assert odd.count() == 0
    assert "'50%%s ''x'''" in compiled(odd)[0]
    one = Run.objects.filter(**one_of("environment_id", [environment]))
    assert one.count() == 3
    assert f'"environment_id" = {environment}' in compiled(one)[0]
    several = Run.objects.filter(**one_of("environment_id", [environment, 0]))
    assert several.count() == 3
    if connection.vendor == "postgresql":
        sql, params = compiled(several)
        assert f"= ANY('{{{environment},0}}'::bigint[])" in sql and params == ()


@pytest.mark.skipif(connection.vendor != "postgresql", reason="prepared statements are PostgreSQL's")
@pytest.mark.django_db
def test_a_page_asked_again_runs_prepared_statements_with_one_plan(client: Any, settings: Any) -> None:
    settings.PAGE_CACHE_SECONDS = 0  # every request reaches the database
    sol_group(5)
    run = Run.objects.order_by("rank").first()
    for _ in range(12):  # psycopg prepares on the 5th run; PostgreSQL tries 5 plans of its own
        for url in ["/api/v1/runs/", f"/runs/{run.public_id}/", "/runs/"]:
            assert client.get(url).status_code == 200
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement, generic_plans FROM pg_prepared_statements")
        prepared = cursor.fetchall()
    lists = [generic for statement, generic in prepared if 'FROM "runs_run"' in statement]
    assert lists and all(generic > 0 for generic in lists), prepared


@pytest.mark.skipif(connection.vendor != "postgresql", reason="binding on the server is PostgreSQL's")
@pytest.mark.django_db
def test_an_import_binds_on_the_client_and_leaves_the_connection_as_it_was() -> None:
    """runs.bulk.client_bound: an import prepares nothing (its lookups change size every batch)."""
    import psycopg

    from runs.bulk import client_bound

    connection.ensure_connection()
    raw = connection.connection
    before = (raw.cursor_factory, raw.prepare_threshold)
    assert before[1] == 5 and not issubclass(before[0], psycopg.ClientCursor)  # pages' settings
    with client_bound():
        assert raw.prepare_threshold is None and issubclass(raw.cursor_factory, psycopg.ClientCursor)
        for _ in range(7):
            Run.objects.filter(status="failed").count()
    assert (raw.cursor_factory, raw.prepare_threshold) == before
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE '%%runs_run%%'")
        assert cursor.fetchone() == (0,)
