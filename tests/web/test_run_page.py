"""The run page against the reference page text, JSON twin, tombstones, citation."""

from __future__ import annotations

import copy
import html
import json
import re

import pytest
from django.conf import settings

from kernelindex import canonical
from runs.models import Run, Visibility
from tests.factories import REPO, import_bundles, reference_bundle, sol_bundle
from tests.web.pages import squash, visible_text

REFERENCE_PAGE = REPO / "data" / "reference" / "run-page-01a0352b.txt"
REFERENCE_KEY_SHORT = "sha256:afb19fba8875cb05…"


def import_reference_with_leaders() -> Run:
    """The reference bundle, published on the date its page states, in a group where three
    synthetic submitters score higher, so it ranks 4th as on the reference page."""
    bundle = reference_bundle()
    bundle["run"]["metadata"]["annotations"] = {"kernelindex.dev/published-at": "2026-08-24T00:00:00.000Z"}
    import_bundles([bundle], trust_annotations=True)
    import_bundles(
        [
            sol_bundle(
                submission_id=900001 + i,
                username=f"synthetic leader {i}",
                sol_score=0.995 - i * 0.001,
                latency_ms=0.016,
            )
            for i in range(3)
        ]
    )
    return Run.objects.get(external_id="27772", benchmark__native_id="062_kv_cache_update_with_rope_backward")


def reference_lines(run: Run) -> list[str]:
    """Every visible line of the reference page outside its manifest block, with the two
    values that depend on the index rather than the run substituted: the public id (ours is
    derived from the run's identity), the comparison key (ours hashes DESIGN §4's key
    document) and the rank, which says of how many (issue 12: "Rank N of M")."""
    text = REFERENCE_PAGE.read_text(encoding="utf-8")
    start = text.index("\n{\n")
    end = text.index("\n}\n", start) + 3
    outside = text[:start] + "\n" + text[end:]
    ours_key = canonical.short(run.group.key, 16)
    ranked = run.group.ranked_count
    return [
        line.replace("01a0352b", run.public_id)
        .replace(REFERENCE_KEY_SHORT, ours_key)
        .replace(f"Rank {run.rank} in its", f"Rank {run.rank} of {ranked} in its")
        for line in outside.splitlines()
        if line.strip()
    ]


@pytest.mark.django_db
def test_it_shows_every_field_of_the_reference_page(client):
    run = import_reference_with_leaders()
    assert run.rank == 4
    response = client.get(f"/runs/{run.public_id}/")
    assert response.status_code == 200
    page = squash(visible_text(response.content.decode()))
    lines = reference_lines(run)
    assert len(lines) >= 40
    missing = [line for line in lines if squash(line) not in page]
    assert missing == []
    # The fields one by one, as the reference page words them.
    for field in (
        "18.6µsmean",
        "Rank 4 of 4 in its comparison group · source-native comparison · observed 2026-07-24",
        "Compare with #1 →",
        "SOL 0.9882 · 20.45× reference · 16/16 cases faster",
        "implementationTH3CHARLie | TileGym",
        "projectTH3CHARLie | TileGym",
        "revisionsubmission-27772",
        "workloadsuite of 16 cases · mean latency",
        "sourceNVIDIA SOL-ExecBench",
        "external idsubmission/27772",
        "sha256:6fa4f85da9b80839c97c94c…",
        "Marked passed by the source; the correctness policy was not published.",
        "definition comparatorsol_execbench_eval",
        "descriptionCorrectness must pass on every case in the SOL evaluation stack.",
        "latency · mean18.6 µs",
        "harnessSOL-ExecBench evaluation stack v1.1",
        "timerharness_reported",
        "primaryStatisticmean",
        "correctnessReferencedefinition reference implementation",
        "comparabilityFamilysol_execbench_leaderboard",
        "gpuNVIDIA B200 (sm_100)",
        "No artifacts published with this run.",
        "No attestations yet.",
        "Community attestations. They never change the evidence level; only a KernelIndex-controlled rerun does.",
        "Add a reproduction or note",
        "Show manifest",
        "Cite this record (permalink, digest, access date)",
        "Report an issue with this run",
        "Published 2026-08-24 · NVIDIA SOL-ExecBench",
        "All results for KV cache update with RoPE backward →",
    ):
        assert squash(field) in page, field
    assert "evidence: source reported" in visible_text(response.content.decode())


@pytest.mark.django_db
def test_it_shows_the_manifest_exactly_and_links_everything(client):
    run = import_reference_with_leaders()
    body = client.get(f"/runs/{run.public_id}/").content.decode()
    shown = re.search(r'<pre class="manifest"[^>]*><code>(.*?)</code></pre>', body, re.S)
    assert shown is not None
    assert json.loads(html.unescape(shown.group(1))) == reference_bundle()
    assert "<details>" in body and "<summary>Show manifest</summary>" in body
    for href in (
        f"/runs/{run.public_id}/attest/",
        f"/runs/{run.public_id}/report/",
        f"/runs/{run.public_id}/cite/",
        f"/runs/{run.public_id}/compare/",
        f"/runs/{run.public_id}.json",
        f"/groups/{run.group.key}/",
        "/benchmarks/sol-execbench/062_kv_cache_update_with_rope_backward/",
    ):
        assert f'href="{href}"' in body, href
    # Long digests: shortened, full value in a title and a read-only field.
    assert f'title="{run.digest}"' in body
    assert f'readonly value="{run.digest}"' in body
    assert body.count("<h1") == 1


@pytest.mark.django_db
def test_it_serves_the_full_bundle_with_an_etag_and_answers_304(client):
    run = import_reference_with_leaders()
    response = client.get(f"/runs/{run.public_id}.json")
    assert response.status_code == 200
    assert response["ETag"] == f'"{run.digest}"'
    assert response["Content-Type"] == "application/json"
    bundle = json.loads(response.content)
    assert canonical.digest_of(bundle["run"]) == run.digest
    assert bundle["run"]["spec"] == reference_bundle()["run"]["spec"]
    assert bundle["run"]["metadata"]["annotations"]["kernelindex.dev/evidence-level"] == "source_reported"

    again = client.get(f"/runs/{run.public_id}.json", HTTP_IF_NONE_MATCH=f'"{run.digest}"')
    assert again.status_code == 304
    assert again.content == b""
    assert again["ETag"] == f'"{run.digest}"'
    weak = client.get(f"/runs/{run.public_id}.json", HTTP_IF_NONE_MATCH=f'"sha256:0", W/"{run.digest}"')
    assert weak.status_code == 304
    stale = client.get(f"/runs/{run.public_id}.json", HTTP_IF_NONE_MATCH='"sha256:00"')
    assert stale.status_code == 200


@pytest.mark.django_db
@pytest.mark.parametrize("visibility", [Visibility.HIDDEN, Visibility.RETRACTED])
def test_it_answers_410_with_a_tombstone(client, visibility):
    run = import_reference_with_leaders()
    Run.objects.filter(pk=run.pk).update(visibility=visibility, public_reason="Duplicate of an earlier <b>import</b>.")
    for url in (f"/runs/{run.public_id}/", f"/runs/{run.public_id}/cite/", f"/runs/{run.public_id}/compare/"):
        response = client.get(url)
        assert response.status_code == 410, url
        body = response.content.decode()
        text = visible_text(body)
        assert run.title in text
        assert run.digest in text
        assert "Duplicate of an earlier <b>import</b>." in text  # escaped, shown as text
        assert "<b>import</b>" not in body
        assert "TH3CHARLie" in text and str(visibility.label) in text
    gone = client.get(f"/runs/{run.public_id}.json")
    assert gone.status_code == 410
    assert gone.json()["digest"] == run.digest
    assert gone.json()["reason"] == "Duplicate of an earlier <b>import</b>."


@pytest.mark.django_db
def test_it_answers_404_in_the_site_layout(client):
    import_reference_with_leaders()
    for url in ("/runs/0000beef/", "/runs/0000beef.json", "/groups/sha256:" + "0" * 64 + "/", "/no/such/page/"):
        response = client.get(url)
        assert response.status_code == 404, url
    body = client.get("/runs/0000beef/").content.decode()
    assert "Not found" in body and 'href="/static/kernelindex/site.css"' in body.replace("'", '"')
    assert 'class="site"' in body


@pytest.mark.django_db
def test_it_cites_with_permalink_digest_and_access_date(client):
    run = import_reference_with_leaders()
    permalink = f"{settings.SITE_URL}/runs/{run.public_id}/"
    body = client.get(f"/runs/{run.public_id}/cite/").content.decode()
    text = visible_text(body)
    assert permalink in text and run.digest in text and "access date" in text
    plain = client.get(f"/runs/{run.public_id}/cite/?format=txt").content.decode()
    assert permalink in plain and run.digest in plain and "accessed 20" in plain
    bib = client.get(f"/runs/{run.public_id}/cite/?format=bib").content.decode()
    assert bib.startswith(f"@misc{{kernelindex-{run.public_id},")
    assert f"url = {{{permalink}}}" in bib and run.digest in bib and "Accessed 20" in bib
    assert "TH3CHARLie | TileGym" in bib  # names with | are kept whole
    csl = json.loads(client.get(f"/runs/{run.public_id}/cite/?format=csl").content)
    assert csl[0]["URL"] == permalink
    assert run.digest in csl[0]["note"]
    assert len(csl[0]["accessed"]["date-parts"][0]) == 3


@pytest.mark.django_db
def test_it_compares_with_number_one_and_says_when_runs_are_not_comparable(client):
    run = import_reference_with_leaders()
    leader = Run.objects.get(group=run.group, rank=1)
    body = visible_text(client.get(f"/runs/{run.public_id}/compare/").content.decode())
    assert f"Compare run {run.public_id} with {leader.public_id}" in body
    assert "same comparison group" in body and "not comparable" not in body

    # Another GPU, another stack version, another kernel: each names what differs.
    cases = {
        "GPU": sol_bundle(submission_id=27772, username="x", sol_score=0.9, latency_ms=0.02, gpu="NVIDIA H100"),
        "harness version": sol_bundle(submission_id=27772, username="x", sol_score=0.9, latency_ms=0.02, stack="v1.0"),
        "benchmark": sol_bundle(
            submission_id=27772,
            username="x",
            sol_score=0.9,
            latency_ms=0.02,
            kernel="010_attention_value_projection_with_transpose",
        ),
    }
    for dimension, bundle in cases.items():
        other_id = import_bundles([copy.deepcopy(bundle)]).run_ids[0]
        text = visible_text(client.get(f"/runs/{run.public_id}/compare/{other_id}/").content.decode())
        assert "These runs are not comparable." in text, dimension
        assert f"the {dimension} differs" in text, dimension


@pytest.mark.django_db
def test_it_shows_published_attestations_flags_and_quarantine(client):
    from attestations.models import Attestation, AttestationKind, AttestationState, IssueReport, ReportState

    run = import_reference_with_leaders()
    common = {"run": run, "document": "{}", "author_name": "alice <script>"}
    Attestation.objects.create(
        kind=AttestationKind.NOTE,
        state=AttestationState.PUBLISHED,
        digest="sha256:" + "1" * 64,
        reference="A-TEST-1",
        text="Seen it.",
        **common,
    )
    Attestation.objects.create(
        kind=AttestationKind.NOTE,
        state=AttestationState.PENDING,
        digest="sha256:" + "2" * 64,
        reference="A-TEST-2",
        text="Pending note",
        **common,
    )
    IssueReport.objects.create(
        reference="R-TEST-1",
        run=run,
        category="correctness",
        description="private",
        state=ReportState.FLAGGED,
        public_summary="Under review.",
    )
    Run.objects.filter(pk=run.pk).update(quarantined=True, public_reason="Two correctness reports.")
    body = client.get(f"/runs/{run.public_id}/").content.decode()
    text = visible_text(body)
    assert "Seen it." in text and "alice <script>" in text and "<script>" not in body
    assert "Pending note" not in text and "private" not in text
    assert "Under review." in text and "Quarantined." in text and "Two correctness reports." in text
    assert "No attestations yet." not in text


@pytest.mark.django_db
def test_number_one_compares_with_number_two_and_a_lone_run_says_so(client):
    run = import_reference_with_leaders()
    leader = Run.objects.get(group=run.group, rank=1)
    second = Run.objects.get(group=run.group, rank=2)
    body = visible_text(client.get(f"/runs/{leader.public_id}/").content.decode())
    assert "Compare with #2 →" in body
    text = visible_text(client.get(f"/runs/{leader.public_id}/compare/").content.decode())
    assert f"Compare run {leader.public_id} with {second.public_id}" in text
    lone = import_bundles(
        [sol_bundle(submission_id=5, username="alone", sol_score=0.7, latency_ms=0.03, gpu="NVIDIA H200")]
    ).run_ids[0]
    assert "Compare with" not in visible_text(client.get(f"/runs/{lone}/").content.decode())
    text = visible_text(client.get(f"/runs/{lone}/compare/").content.decode())
    assert "No other ranked run in this comparison group" in text


@pytest.mark.django_db
def test_every_run_offers_a_comparison_exactly_when_its_group_has_the_run_to_compare_with(client):
    """The link comes from the group's stored ranked count, not a query: it must agree with the
    ranks stored, for ranked runs, unranked ones (a failed run, a reference row) and a lone run."""
    import_reference_with_leaders()
    import_bundles(
        [
            sol_bundle(submission_id=6, username="failing", status="failed", sol_score=0.2, latency_ms=0.03),
            sol_bundle(submission_id=7, username="SOL Bound", sol_score=1.0, latency_ms=0.01, reference=True),
            sol_bundle(submission_id=8, username="alone", sol_score=0.7, latency_ms=0.03, gpu="NVIDIA H200"),
        ]
    )
    runs = list(Run.objects.select_related("group"))
    assert {run.rank for run in runs} >= {None, 1, 2} and len({run.group_id for run in runs}) > 1
    for run in runs:
        wanted = 2 if run.rank == 1 else 1
        exists = Run.objects.filter(group=run.group, rank=wanted).exists()
        body = visible_text(client.get(f"/runs/{run.public_id}/").content.decode())
        assert (f"Compare with #{wanted} →" in body) == exists, run.public_id
        assert ("Compare with" in body) == exists


def test_the_server_error_page_renders_in_the_site_layout_without_a_request():
    from django.template.loader import render_to_string

    body = render_to_string("500.html")
    assert "Something went wrong on our side" in body and body.count("<h1") == 1


def test_a_structured_correctness_policy_is_shown_field_by_field():
    from web.pages import _policy_items, _policy_text

    policy = {
        "rule": "allclose",
        "statuses": ["PASSED", "TIMEOUT"],
        "defaults": {"max_atol": 0.01, "max_error_cap": None},
        "nested": {"a": {"b": 1}},
    }
    assert _policy_items(policy) == [
        ("rule", "allclose"),
        ("statuses", "PASSED, TIMEOUT"),
        ("defaults", "max_atol 0.01, max_error_cap none"),  # flat objects read as words
        ("nested", '{"a": {"b": 1}}'),  # deeper ones as compact JSON, never a Python repr
    ]
    assert _policy_text(policy) == "" and _policy_text("each case within tolerance") == "each case within tolerance"
