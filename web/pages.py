"""What the pages show, composed from the run index (``runs.selectors``) and community data
(attestations, published flags, revision history): one function per page section, each with a
fixed number of queries."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Exists, OuterRef

from attestations.models import Attestation, IssueReport
from kernelindex.prepared import Prepared
from runs import rerun_bundles
from runs.models import ComparisonGroup, Project, Run, RunRevision, Visibility, Workload
from runs.selectors import (
    found_group,
    group_leader,
    group_queryset,
    has_leader,
    identity_labels,
    leader_rank,
    published_run,
    run_get,
    run_queryset,
)

# What a correctness comparator checks, for comparators the sources name but do not describe.
COMPARATOR_DESCRIPTIONS = {
    "sol_execbench_eval": "Correctness must pass on every case in the SOL evaluation stack.",
    "kernelindex_allclose": "Every case is compared with the definition's reference output within its tolerance.",
}


@dataclass
class CaseRow:
    index: int | str
    label: str
    axes: dict[str, Any]
    latency_ns: float | None = None
    baseline_ns: float | None = None
    sol_ns: float | None = None
    score: float | None = None  # the case's SOL score as the run publishes it (SOL-ExecBench traces)
    status: str = ""
    timer: str = ""  # how the case was timed, where the run says (KernelIndex reruns)
    detail: str = ""  # why the case failed, where the run says


def _time_ns(case: dict[str, Any], ns_keys: tuple[str, ...], ms_keys: tuple[str, ...]) -> float | None:
    """A per-case time from a workload or run case, whichever way its document names it."""
    for key in ns_keys:
        value = case.get(key)
        if value is None:  # most keys are absent: a case names its times one way
            continue
        if isinstance(value, dict):
            value = value.get("median", value.get("mean"))
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    for key in ms_keys:
        value = case.get(key)
        if value is not None and isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value) * 1e6
    return None


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


_LATENCY_KEYS = (("latencyNs", "medianNs", "meanNs"), ("latencyMs", "latency_ms"))


_BASELINE_KEYS = (
    ("baselineNs", "baselineLatencyNs", "scoringBaselineNs"),
    ("baselineMs", "baselineLatencyMs", "baseline_latency_ms"),
)


_SOL_KEYS = (("solNs", "speedOfLightNs", "solLatencyNs"), ("solMs", "sol_ms"))


def case_rows(run: Run | None, workload: Workload | None) -> list[CaseRow]:
    """The workload's cases joined with the run's per-case results (by id, else by index);
    without a run, the workload's cases alone."""
    run_cases = [c for c in run.spec.get("cases", []) if isinstance(c, dict)] if run is not None else []
    by_id = {str(c["id"]): c for c in run_cases if c.get("id") is not None}
    by_index = {c["index"]: c for c in run_cases if c.get("index") is not None}
    source = workload.cases if workload is not None else run_cases
    rows: list[CaseRow] = []
    for position, case in enumerate(source):
        if not isinstance(case, dict):
            continue
        index = case.get("index", position)
        result = by_id.get(str(case.get("id"))) or by_index.get(index) or {}
        axes = case.get("axes") if isinstance(case.get("axes"), dict) else {}
        rows.append(
            CaseRow(
                index=index,
                label=str(case.get("id") or index),
                axes=axes,
                latency_ns=_time_ns(result, *_LATENCY_KEYS),
                baseline_ns=_time_ns(case, *_BASELINE_KEYS) or _time_ns(result, *_BASELINE_KEYS),
                sol_ns=_time_ns(case, *_SOL_KEYS) or _time_ns(result, *_SOL_KEYS),
                score=_number(result.get("solScore", result.get("sol_score"))),
                status=str(result.get("status", "")),
                timer=str(result.get("timer") or ""),
                detail=str(result.get("detail") or "") if str(result.get("status", "")).upper() != "PASSED" else "",
            )
        )
    return rows


def case_count(run: Run) -> int | None:
    workload = run.shown_workload
    if workload is not None and workload.case_count:
        return workload.case_count
    if run.spec.get("cases"):
        return len(run.spec["cases"])
    return run.fast_1_total


@dataclass
class RunPage:
    run: Run
    leader_rank: int | None  # of the run a comparison link offers, when its group has one
    attestations: list[Any]
    flags: list[Any]
    cases: list[CaseRow]
    identity: dict[str, str]
    comparator: str
    comparator_description: str
    case_count: int | None
    correctness_policy: str = ""
    correctness_policy_items: list[tuple[str, str]] = field(default_factory=list)
    cases_passed: int = 0
    cases_reported: int = 0
    measurements: list[tuple[str, Any]] = field(default_factory=list)
    history: list[HistoryRow] = field(default_factory=list)  # latest revisions, newest first
    rerun: rerun_bundles.RerunFacts | None = None  # how KernelIndex measured it, for its own reruns
    # A source's reference row: KernelIndex's reruns of its code; a rerun: the rows it re-measured.
    related: list[Run] = field(default_factory=list)


def _policy_text(policy: Any) -> str:
    """A correctness policy written as one sentence; structured ones go through _policy_items."""
    return policy if isinstance(policy, str) else ""


def _policy_items(policy: Any) -> list[tuple[str, str]]:
    """A structured correctness policy as (field, text) rows; nested values as compact JSON."""
    if not isinstance(policy, dict):
        return []
    rows = []
    for key, value in policy.items():
        if isinstance(value, str):
            text = value
        elif isinstance(value, list) and all(isinstance(item, str) for item in value):
            text = ", ".join(value)
        elif isinstance(value, dict) and all(not isinstance(item, (dict, list)) for item in value.values()):
            # e.g. tolerance defaults: "max_atol 0.01, max_rtol 0.01, …, max_error_cap none"
            text = ", ".join(f"{name} {_scalar(item)}" for name, item in value.items())
        else:
            text = json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
        rows.append((str(key), text))
    return rows


def _scalar(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


HISTORY_LIMIT = 20

# The run page's own queries, compiled once (kernelindex.prepared): each cost more to compile than to run.
_run_attestations = Prepared(
    lambda run_id: Attestation.objects.published().filter(run_id=run_id).order_by("created_at", "pk"), run_id=int
)
_run_flags = Prepared(
    lambda run_id: IssueReport.objects.public_flags().filter(run_id=run_id).order_by("created_at"), run_id=int
)
_run_revisions = Prepared(
    lambda run_id: RunRevision.objects.filter(run_id=run_id).defer("document").order_by("-number")[:HISTORY_LIMIT],
    run_id=int,
)


# The run page's run, which also says whether it has published attestations and flags: most
# runs have neither, and asking costs its query far less than two more queries (an index probe
# each, against a round trip and a result each).
_run_with_notes = Prepared(
    lambda public_id: (
        run_queryset()
        .filter(public_id=public_id)
        .annotate(
            has_attestations=Exists(Attestation.objects.published().filter(run_id=OuterRef("pk"))),
            has_flags=Exists(IssueReport.objects.public_flags().filter(run_id=OuterRef("pk"))),
        )[:1]
    ),
    public_id=str,
)


def _published_attestations(run: Run) -> list[Any]:
    """Published attestations, oldest first (1 query); each gets the run already loaded, so
    showing its ratio to the run's latency costs no query per attestation."""
    attestations = _run_attestations(run_id=run.pk)
    for attestation in attestations:
        attestation.run = run
    return attestations


# API submissions record "api: <user> (token <prefix>…)"; pages name the user, not the token.
_TOKEN_NOTE = re.compile(r"\s*\(token [^)]*\)\s*$")


@dataclass
class HistoryRow:
    """One RunRevision as the pages show it: who changed the run, what and why."""

    number: int
    created_at: Any
    actor: str
    reason: str
    changed: list[str]  # names of the fields that changed; empty for the first revision
    digest: str
    run: Run | None = None  # on a project's page, which run


def _history_row(revision: RunRevision, *, with_run: bool = False) -> HistoryRow:
    changes = revision.changes if isinstance(revision.changes, dict) else {}
    return HistoryRow(
        number=revision.number,
        created_at=revision.created_at,
        actor=_TOKEN_NOTE.sub("", revision.actor_label) or "—",
        reason=revision.reason,
        # Sorted: PostgreSQL's jsonb does not keep the order the import wrote them in.
        changed=sorted(changes),
        digest=revision.digest,
        run=revision.run if with_run else None,
    )


def run_history(run: Run) -> list[HistoryRow]:
    """The run's latest HISTORY_LIMIT revisions, newest first (1 query; ``run.revision`` is
    their number, so the page can say how many are older without counting them)."""
    return [_history_row(revision) for revision in _run_revisions(run_id=run.pk)]


def project_history(project: Project) -> list[HistoryRow]:
    """The latest HISTORY_LIMIT revisions of the project's published runs, newest first, each
    with its run (1 query; the documents stay in the database)."""
    revisions = (
        RunRevision.objects.filter(run__implementation__project=project, run__visibility=Visibility.PUBLISHED)
        .select_related("run")
        .defer("document", "run__document")
        .order_by("-created_at", "-pk")[:HISTORY_LIMIT]
    )
    return [_history_row(revision, with_run=True) for revision in revisions]


def run_page(public_id: str) -> RunPage:
    """Everything the run page shows, in 2 queries: the run with its documents (and whether it
    has published attestations and flags), its latest revisions (whether its group has a #1 to
    compare with is its stored ranked count); plus 1 for its published attestations and 1 for its
    published flags where it has any, and 1 for a run that KernelIndex re-measured or that is such
    a rerun (``rerun_bundles.related_runs``: the other side of the link, which no join of the
    run's own row can reach). Other runs spend no query on them."""
    run = published_run(_run_with_notes(public_id=public_id), public_id)
    protocol_spec = run.protocol.spec
    correctness = protocol_spec.get("correctness") if isinstance(protocol_spec.get("correctness"), dict) else {}
    comparator = str(correctness.get("comparator", ""))
    run_cases = [c for c in run.spec.get("cases", []) if isinstance(c, dict)]
    latency = run.spec.get("timing", {}).get("latencyNs", {})
    return RunPage(
        run=run,
        leader_rank=leader_rank(run) if has_leader(run) else None,
        attestations=_published_attestations(run) if run.has_attestations else [],
        flags=_run_flags(run_id=run.pk) if run.has_flags else [],
        cases=case_rows(run, run.shown_workload),
        identity=identity_labels(run),
        comparator=comparator,
        comparator_description=str(correctness.get("description") or COMPARATOR_DESCRIPTIONS.get(comparator, "")),
        case_count=case_count(run),
        correctness_policy=_policy_text(correctness.get("policy")),
        correctness_policy_items=_policy_items(correctness.get("policy")),
        cases_passed=sum(1 for c in run_cases if str(c.get("status", "")).lower() == "passed"),
        cases_reported=len(run_cases),
        measurements=list(latency.items()) if isinstance(latency, dict) else [],
        history=run_history(run),
        rerun=rerun_bundles.rerun_facts(run),
        related=list(rerun_bundles.related_runs(run)),
    )


# The published flags of a comparison group's runs, oldest first, compiled once
# (kernelindex.prepared); the reports' private fields (the description, the reporter's email) are
# not loaded. Flags are moderators' notes: a group has a handful at most.
_group_flags = Prepared(
    lambda group_id: (
        IssueReport.objects.public_flags()
        .filter(run__group_id=group_id)
        .only("run", "category", "public_summary", "created_at", "handled_at")
        .order_by("created_at", "pk")
    ),
    group_id=int,
)


# A ranking page's group, which also says whether any of its runs has a published flag: most
# groups have none, and asking costs the group's query far less than the flags' own query.
_group_with_flags = Prepared(
    lambda key: (
        group_queryset()
        .filter(key=key)
        .annotate(has_flags=Exists(IssueReport.objects.public_flags().filter(run__group_id=OuterRef("pk"))))[:1]
    ),
    key=str,
)


def ranking_group(key: str) -> ComparisonGroup:
    """The comparison group of a ranking page, with ``has_flags`` (1 query); Http404 when none."""
    return found_group(_group_with_flags(key=key), key)


def attach_public_flags(rows: list[Run], group: ComparisonGroup) -> list[Run]:
    """Give each of ``rows`` (runs of ``group``) ``public_flags``: its flags published by
    moderators, oldest first. One query for the whole group, whatever the page (Django's
    prefetch_related for a page of 25 rows that had none cost more than loading the rows), and
    none for a group from ``ranking_group`` that has no published flag."""
    by_run: dict[int, list[IssueReport]] = {}
    for flag in _group_flags(group_id=group.pk) if getattr(group, "has_flags", True) else ():
        by_run.setdefault(flag.run_id, []).append(flag)
    for run in rows:
        run.public_flags = by_run.get(run.pk, [])
    return rows


_DIMENSIONS = (
    ("benchmark", "benchmark"),
    ("hardware", "GPU"),
    ("harness.version", "harness version"),
    ("harness.name", "harness"),
    ("family", "comparability family"),
    ("source", "source"),
)


def differing_dimensions(a: ComparisonGroup, b: ComparisonGroup) -> list[tuple[str, str, str]]:
    """(dimension, value of a, value of b) for every part of the comparison key that differs."""
    doc_a, doc_b = json.loads(a.key_document), json.loads(b.key_document)

    def part(doc: dict[str, Any], path: str) -> str:
        value: Any = doc
        for step in path.split("."):
            value = value.get(step, "") if isinstance(value, dict) else ""
        return str(value)

    return [
        (label, part(doc_a, path), part(doc_b, path))
        for path, label in _DIMENSIONS
        if part(doc_a, path) != part(doc_b, path)
    ]


@dataclass
class CaseComparison:
    label: str
    axes: dict[str, Any]
    a_ns: float | None
    b_ns: float | None

    @property
    def ratio(self) -> float | None:
        """How many times faster A is than B (B's latency / A's)."""
        if self.a_ns and self.b_ns:
            return self.b_ns / self.a_ns
        return None


def compare_cases(a: Run, b: Run) -> list[CaseComparison]:
    rows_a = case_rows(a, a.shown_workload)
    rows_b = {row.label: row for row in case_rows(b, b.shown_workload)}
    out = []
    for row in rows_a:
        other = rows_b.get(row.label)
        out.append(CaseComparison(row.label, row.axes, row.latency_ns, other.latency_ns if other else None))
    return out


def compare_get(public_id: str, other_id: str | None) -> tuple[Run, Run | None]:
    """The run and the one to compare it with: ``other_id``, else #1 of its group (or #2 when
    it is #1). 2 queries."""
    run = run_get(public_id)
    if other_id is None:
        return run, group_leader(run)
    if other_id == public_id:
        return run, run
    return run, run_get(other_id)
