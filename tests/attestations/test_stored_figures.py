"""The figures runs.counts stores at every write equal what counting the runs gives, after an
import, a moderation action that hides a run, and its restore (the index pages read only them)."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.management import call_command
from django.db import transaction
from django.db.models import Count, Max, Q

from attestations import moderation
from ingest.engine import import_bundles
from kernelindex import canonical
from runs import counts
from runs.manifests import bundle_export, bundle_verify
from runs.models import Benchmark, ComparisonGroup, Environment, Project, Run, Source
from tests.factories import FIRST_BATCH_AND_RERUNS

pytestmark = pytest.mark.django_db

PUBLISHED = Q(runs__visibility="published")
PROJECT_RUNS = Q(implementations__runs__visibility="published")
SUBMITTERS = PUBLISHED & Q(runs__is_reference=False)


def counted() -> dict[str, Any]:
    """Every figure, computed from the runs the slow way (what the pages did per request)."""
    return {
        "sources": {
            s.pk: (s.a, s.b, s.c, s.d, s.e)
            for s in Source.objects.annotate(
                a=Count("runs", filter=PUBLISHED, distinct=True),
                b=Count("runs__benchmark", filter=PUBLISHED, distinct=True),
                c=Count("runs__submitter", filter=SUBMITTERS, distinct=True),
                d=Count("runs__group__hardware_product", filter=PUBLISHED, distinct=True),
                e=Max("runs__observed_at", filter=PUBLISHED),
            )
        },
        "benchmarks": {
            b.pk: (b.a, b.c, b.e)
            for b in Benchmark.objects.annotate(
                a=Count("runs", filter=PUBLISHED, distinct=True),
                c=Count("runs__submitter", filter=SUBMITTERS, distinct=True),
                e=Max("runs__observed_at", filter=PUBLISHED),
            )
        },
        "groups": {
            g.pk: (g.a, g.r, g.e)
            for g in ComparisonGroup.objects.annotate(
                a=Count("runs", filter=PUBLISHED),
                r=Count("runs", filter=PUBLISHED & Q(runs__is_reference=True)),
                e=Max("runs__observed_at", filter=PUBLISHED),
            )
        },
        "projects": {
            p.pk: (p.a, p.b, p.c, p.e)
            for p in Project.objects.annotate(
                a=Count("implementations__runs", filter=PROJECT_RUNS, distinct=True),
                b=Count("implementations__runs__benchmark", filter=PROJECT_RUNS, distinct=True),
                c=Count("implementations", distinct=True),
                e=Max("implementations__runs__observed_at", filter=PROJECT_RUNS),
            )
        },
        "environments": {e.pk: (e.a,) for e in Environment.objects.annotate(a=Count("runs", filter=PUBLISHED))},
    }


def ranking_counts_hold() -> bool:
    """Every group's ranking page row count, from the stored figures, is what counting gives."""
    from runs import selectors

    return all(
        group.ranked_count + group.reference_runs == selectors.ranking_rows(group).count()
        and group.published_runs == selectors.ranking_rows(group, show_all=True).count()
        for group in ComparisonGroup.objects.all()
    )


def stored() -> dict[str, Any]:
    return {
        "sources": {
            s.pk: (s.published_runs, s.benchmark_count, s.submitter_count, s.gpu_count, s.last_observed_at)
            for s in Source.objects.all()
        },
        "benchmarks": {
            b.pk: (b.published_runs, b.submitter_count, b.last_observed_at) for b in Benchmark.objects.all()
        },
        "groups": {
            g.pk: (g.published_runs, g.reference_runs, g.last_observed_at) for g in ComparisonGroup.objects.all()
        },
        "projects": {
            p.pk: (p.published_runs, p.benchmark_count, p.revision_count, p.last_observed_at)
            for p in Project.objects.all()
        },
        "environments": {e.pk: (e.published_runs,) for e in Environment.objects.all()},
    }


def test_stored_figures_follow_imports_and_moderation(django_user_model):
    call_command("import", *map(str, FIRST_BATCH_AND_RERUNS), stdout=open("/dev/null", "w"))  # noqa: SIM115
    assert Project.objects.exists() and Environment.objects.count() > 1
    assert stored() == counted()

    # Hide the most recent run of the project with the most runs: its project, group, benchmark,
    # source and environment all lose a run (and maybe their latest date).
    project = Project.objects.order_by("-published_runs", "pk").first()
    run = Run.objects.filter(implementation__project=project).order_by("-observed_at").first()
    moderator = django_user_model.objects.create_user("mod", password="unused-password-1", is_staff=True)
    before = stored()
    moderation.run_hide(run, moderator, "a test of the stored figures")
    after = stored()
    assert after == counted()
    assert after["projects"][project.pk][0] == before["projects"][project.pk][0] - 1
    assert after["sources"][run.source_id][0] == before["sources"][run.source_id][0] - 1

    moderation.run_restore(Run.objects.get(pk=run.pk), moderator, "restored")
    assert stored() == counted() == before

    # A reference row hidden and restored: its group's ranking shows one row fewer, then again as
    # many, and the ranking page's row count (ranked_count + reference_runs) follows.
    reference = Run.objects.filter(is_reference=True, visibility="published").order_by("pk").first()
    assert ranking_counts_hold()
    moderation.run_hide(reference, moderator, "a test of the reference rows' figure")
    assert stored() == counted() and ranking_counts_hold()
    assert stored()["groups"][reference.group_id][1] == before["groups"][reference.group_id][1] - 1
    moderation.run_restore(Run.objects.get(pk=reference.pk), moderator, "restored")
    assert stored() == counted() == before and ranking_counts_hold()

    # And refresh_all (the migration's and a repair's path) changes nothing that is right.
    counts.refresh_all()
    assert stored() == before


def test_manage_py_recount_repairs_figures_changed_by_hand():
    call_command("import", *map(str, FIRST_BATCH_AND_RERUNS), stdout=open("/dev/null", "w"))  # noqa: SIM115
    right = stored()
    Source.objects.update(published_runs=0, submitter_count=0)
    Project.objects.update(published_runs=7)
    assert stored() != right
    call_command("recount", stdout=open("/dev/null", "w"))  # noqa: SIM115
    assert stored() == right == counted()


@pytest.mark.parametrize(
    ("document", "path", "value"),
    [
        ("environment", ("software", "libraries"), {"cuda": "12.8"}),
        ("implementation", (), {"project": "a project of its own"}),
    ],
)
def test_a_run_that_changes_environment_or_project_leaves_the_old_ones_figures_right(document, path, value):
    """A re-import that gives a run another environment (or implementation, of another project)
    recounts the one it left, even when no run of its group names that one any more."""
    call_command("import", *map(str, FIRST_BATCH_AND_RERUNS), stdout=open("/dev/null", "w"))  # noqa: SIM115
    run = Run.objects.filter(**{f"{document}__isnull": False}).order_by("pk").first()
    bundle = bundle_export(run)
    assert document in bundle
    spec = bundle[document]["spec"]
    for key in path:
        spec = spec[key]
    spec.update(value)
    bundle["run"]["spec"][f"{document}Digest"] = canonical.digest_of(bundle[document])
    left = getattr(run, f"{document}_id")
    assert import_bundles([bundle_verify(bundle)], trust_annotations=True).updated == 1
    assert getattr(Run.objects.get(pk=run.pk), f"{document}_id") != left
    assert stored() == counted()


def _state() -> dict[str, Any]:
    """Every run's rank and identity-bearing columns, and every stored figure, by natural keys
    (primary keys differ between two imports; sequences are not rolled back)."""
    return {
        "runs": sorted(
            Run.objects.values_list(
                "public_id", "rank", "group__key", "digest", "revision", "environment__digest", "visibility"
            )
        ),
        "groups": sorted(
            ComparisonGroup.objects.values_list("key", "ranked_count", "published_runs", "reference_runs")
        ),
        "sources": sorted(Source.objects.values_list("slug", "published_runs", "submitter_count", "benchmark_count")),
        "benchmarks": sorted(Benchmark.objects.values_list("native_id", "published_runs", "submitter_count")),
        "projects": sorted(Project.objects.values_list("slug", "published_runs", "benchmark_count")),
        "environments": sorted(Environment.objects.values_list("digest", "published_runs")),
    }


def test_an_import_in_small_batches_writes_what_one_batch_writes(monkeypatch):
    """The engine writes each batch's new runs while it builds the next (on PostgreSQL, on a
    thread), holds a batch's last group back for the next, and ranks again at the end a group
    that one batch could not finish. In batches of 7 runs (most groups cut) the result is the
    same as in one batch of all of them: ranks, figures and the published ranking rows."""
    from ingest import engine, pipeline

    def import_all() -> dict[str, Any]:
        call_command("import", *map(str, FIRST_BATCH_AND_RERUNS), stdout=open("/dev/null", "w"))  # noqa: SIM115
        assert stored() == counted() and ranking_counts_hold()
        return _state()

    class Undo(Exception):
        pass

    with pytest.raises(Undo), transaction.atomic():
        whole = import_all()
        raise Undo
    assert not Run.objects.exists()
    batches: list[int] = []
    small = engine.import_bundles

    def in_batches_of_seven(*args: Any, **kwargs: Any) -> Any:
        batches.append(1)
        return small(*args, **kwargs, batch_size=7)

    monkeypatch.setattr(pipeline, "import_bundles", in_batches_of_seven)
    assert import_all() == whole
    assert batches and Run.objects.count() > 7 * 10


def test_an_import_whose_copy_fails_writes_nothing(monkeypatch):
    """A COPY that fails on the engine's thread fails the import with its error, and the import
    leaves nothing behind; the connection is fine for the next."""
    from ingest import engine

    prepare, format_rows = engine.prepare_rows, engine.format_rows

    def fail() -> None:
        raise RuntimeError("the COPY broke")

    def failing_prepare(model: Any, rows: list[dict[str, Any]]) -> Any:
        pks, write = prepare(model, rows)
        return pks, fail if model is Run else write

    def failing_format(model: Any, rows: list[dict[str, Any]], pks: list[int]) -> Any:
        write = format_rows(model, rows, pks)
        return fail if model is Run else write

    monkeypatch.setattr(engine, "prepare_rows", failing_prepare)
    monkeypatch.setattr(engine, "format_rows", failing_format)
    with pytest.raises(RuntimeError, match="the COPY broke"):
        call_command("import", *map(str, FIRST_BATCH_AND_RERUNS), stdout=open("/dev/null", "w"))  # noqa: SIM115
    assert not Run.objects.exists() and not ComparisonGroup.objects.exists()
    monkeypatch.undo()
    call_command("import", *map(str, FIRST_BATCH_AND_RERUNS), stdout=open("/dev/null", "w"))  # noqa: SIM115
    assert stored() == counted()
