"""Every object's page path is what ``reverse()`` writes for its URL name.

The models build their paths with ``kernelindex.links.page_path`` (``reverse()`` was a fifth of
a list page's time); this pins the two together, under a script prefix too."""

from __future__ import annotations

import pytest
from django.urls import reverse, set_script_prefix

from kernelindex import links
from runs.models import Run
from tests.factories import sol_group
from web.browse import gpu_slug


@pytest.mark.django_db
@pytest.mark.parametrize("prefix", ["/", "/kernelindex/"])
def test_page_paths_equal_reverse(prefix: str) -> None:
    sol_group(3)
    set_script_prefix(prefix)
    try:
        for run in Run.objects.select_related(
            "benchmark__source", "group", "environment", "source", "implementation__project"
        ):
            assert run.get_absolute_url() == reverse("runs:run_detail", args=[run.public_id])
            assert run.get_json_url() == reverse("runs:run_json", args=[run.public_id])
            assert run.get_compare_url() == reverse("runs:run_compare", args=[run.public_id])
            assert run.get_cite_url() == reverse("runs:run_cite", args=[run.public_id])
            assert run.group.get_absolute_url() == reverse("runs:group_detail", args=[run.group.key])
            benchmark = run.benchmark
            assert benchmark.get_absolute_url() == reverse(
                "runs:benchmark_detail", args=[benchmark.source.slug, benchmark.native_id]
            )
            assert run.source.get_absolute_url() == reverse("runs:source_detail", args=[run.source.slug])
            assert run.environment.get_absolute_url() == reverse(
                "runs:environment_detail", args=[run.environment.digest]
            )
            project = run.implementation.project if run.implementation else None
            if project is not None:
                assert project.get_absolute_url() == reverse("runs:project_detail", args=[project.slug])
            slug = gpu_slug(run.environment.product)
            assert links.page_path("gpus", slug) == reverse("runs:gpu_detail", args=[slug])
        # KernelBench's native ids hold "/", others "+" and ".".
        native_id = "level1/1_Square_matrix+multiplication.v2"
        assert links.page_path("benchmarks", "kernelbench", native_id) == reverse(
            "runs:benchmark_detail", args=["kernelbench", native_id]
        )
        assert links.page_path("runs", "0123abcd").startswith(prefix)
    finally:
        set_script_prefix("/")


def test_a_segment_is_quoted_as_quote_would_whatever_it_holds() -> None:
    """The shortcut for segments that need no quoting gives quote()'s answer for every character."""
    from urllib.parse import quote

    characters = [chr(code) for code in range(0x250)] + ["é", "✓", "𝔸", "\ud7ff", " ", "%2e"]
    samples = characters + ["a" + c + "b" for c in characters] + ["sha256:0f/1a", "..", "a b", ""]
    for sample in samples:
        assert links._quoted(sample) == quote(sample, safe=links._PATH_SAFE), repr(sample)
        # A path is matched whole first: one segment to quote among others that need none.
        quoted = [quote(part, safe=links._PATH_SAFE) for part in ("runs", sample, "x")]
        assert links.page_path("runs", sample, "x", prefix="/") == "/" + "/".join(quoted) + "/", repr(sample)
