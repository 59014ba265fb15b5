"""Rules for rerun bundles, KernelIndex's own reruns: which bundles are reruns, what the run page says about
one, and which source rows a rerun re-measured.

A rerun is a run the KernelIndex rerun harness (``reruns/harness``) measured on KernelIndex's
GPU: source ``kernelindex``, protocol harness "KernelIndex rerun harness", comparability family
``kernelindex_rerun``. Its workload names the benchmark it re-measures (e.g. SOL-ExecBench's
``062_…``), so the run belongs to that source's benchmark while its source stays KernelIndex.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db.models import QuerySet

from kernelindex.prepared import Prepared
from runs.models import EvidenceLevel, Run

RERUN_SOURCE = "kernelindex"
RERUN_FAMILY = "kernelindex_rerun"
RERUN_HARNESS = "KernelIndex rerun harness"

# Which source rows a rerun re-measures: per source, the submitter name of a source's reference
# row → the implementation revision the rerun harness gives the same code (``--solution``).
# SOL-ExecBench's "Reference Implementation" is the definition's reference; its "Scoring
# Baseline" is the kernel file's ``baseline`` (harness ``baseline:KERNEL_JSON``).
REMEASURED_ROWS: dict[str, dict[str, str]] = {
    "sol-execbench": {
        "Reference Implementation": "reference",
        "Scoring Baseline": "scoring-baseline",
    },
}


def is_rerun_protocol(protocol_spec: dict[str, Any]) -> bool:
    """The protocol is the KernelIndex rerun harness's (harness name and comparability family)."""
    harness = protocol_spec.get("harness")
    comparability = protocol_spec.get("comparability")
    return (
        isinstance(harness, dict)
        and harness.get("name") == RERUN_HARNESS
        and isinstance(comparability, dict)
        and comparability.get("family") == RERUN_FAMILY
    )


def is_rerun_bundle(docs: dict[str, dict[str, Any]]) -> bool:
    """A bundle written by the rerun harness: KernelIndex's source and the harness's protocol.
    (Whether it *becomes* ``kernelindex_rerun`` evidence depends on who records it:
    ``runs.identity.evidence_level_for``.)"""
    native = docs["run"]["spec"].get("sourceNative") or {}
    return native.get("source") == RERUN_SOURCE and is_rerun_protocol(docs["protocol"]["spec"])


def is_rerun(run: Run) -> bool:
    return run.evidence_level == EvidenceLevel.KERNELINDEX_RERUN


# -- the run page ------------------------------------------------------------------------------


@dataclass
class TimerFacts:
    """One of a rerun's timers (harness 0.2.0 records two: kernel time and CUDA-event time)."""

    key: str  # "kernelTime" or "eventTime", as the bundle names it
    label: str
    primary: bool
    latency: float | None  # ns, geomean of per-case medians
    trial_latencies: list[float]
    spread: float | None
    measures: str  # what it measures, from the protocol

    @property
    def spread_percent(self) -> str:
        return "" if self.spread is None else f"{self.spread * 100:.2f} %"


TIMER_LABELS = {"kernelTime": "kernel time", "eventTime": "CUDA-event time"}


def _timer_facts(timing: dict[str, Any], measurement: dict[str, Any]) -> list[TimerFacts]:
    timers = timing.get("timers") if isinstance(timing.get("timers"), dict) else {}
    texts = measurement.get("timers") if isinstance(measurement.get("timers"), dict) else {}
    primary = timing.get("primaryTimer")
    rows = []
    for key, timer in timers.items():
        if not isinstance(timer, dict):
            continue
        latency = timer.get("latencyNs") if isinstance(timer.get("latencyNs"), dict) else {}
        spread = timer.get("spread") if isinstance(timer.get("spread"), dict) else {}
        trials = timer.get("trialLatenciesNs") if isinstance(timer.get("trialLatenciesNs"), list) else []
        rows.append(
            TimerFacts(
                key=str(key),
                label=TIMER_LABELS.get(str(key), str(key)),
                primary=key == primary,
                latency=_number(latency.get("median")),
                trial_latencies=[value for t in trials if (value := _number(t)) is not None],
                spread=_number(spread.get("maxOverMinMinusOne")),
                measures=str(texts.get(key, "")),
            )
        )
    return sorted(rows, key=lambda row: not row.primary)


@dataclass
class RerunFacts:
    """What a rerun's page says about how KernelIndex measured it, read from its documents."""

    product: str
    harness: str
    trial_count: int = 0  # trials, each a separate process
    trial_latencies: list[float] = field(default_factory=list)  # each trial's latency, ns (passed runs)
    spread: float | None = None  # max/min − 1 of the per-trial latencies
    timers: list[tuple[str, int]] = field(default_factory=list)  # (timer, cases) most used first
    cases_timed: int = 0
    cases_total: int = 0
    timer_facts: list[TimerFacts] = field(default_factory=list)  # both timers, primary first
    primary_timer_rule: str = ""

    @property
    def spread_percent(self) -> str:
        return "" if self.spread is None else f"{self.spread * 100:.2f} %"


def rerun_facts(run: Run) -> RerunFacts | None:
    """How a rerun was measured (no query: everything is in the run's documents)."""
    if not is_rerun(run):
        return None
    timing = run.spec.get("timing") if isinstance(run.spec.get("timing"), dict) else {}
    trials = [t for t in timing.get("trials", []) if isinstance(t, dict)] if isinstance(timing, dict) else []
    spread = timing.get("spread") if isinstance(timing.get("spread"), dict) else {}
    cases = [c for c in run.spec.get("cases", []) if isinstance(c, dict)]
    counts: dict[str, int] = {}
    for case in cases:
        # With two timers, the event timer says how the call was replayed (cuda_graph or cuda_events).
        timers = case.get("timers") if isinstance(case.get("timers"), dict) else {}
        event = timers.get("eventTime") if isinstance(timers.get("eventTime"), dict) else {}
        timer = event.get("timer") or case.get("timer")
        if isinstance(timer, str) and timer:
            counts[timer] = counts.get(timer, 0) + 1
    measurement = run.protocol.spec.get("measurement")
    measurement = measurement if isinstance(measurement, dict) else {}
    return RerunFacts(
        product=run.environment.product,
        harness=run.protocol.harness_label,
        trial_count=len(trials),
        trial_latencies=[value for t in trials if (value := _number(t.get("latencyNs"))) is not None],
        spread=_number(spread.get("maxOverMinMinusOne")),
        timers=sorted(counts.items(), key=lambda item: (-item[1], item[0])),
        cases_timed=sum(counts.values()),
        cases_total=len(cases),
        timer_facts=_timer_facts(timing, measurement),
        primary_timer_rule=str(measurement.get("primaryTimerRule", "")),
    )


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


# -- source rows ↔ reruns ----------------------------------------------------------------------


def _remeasured_revision(run: Run) -> str | None:
    """The rerun revision that re-measures this source row, if KernelIndex re-measures it."""
    if not run.is_reference:
        return None
    return REMEASURED_ROWS.get(run.source.slug, {}).get(run.submitter)


def _source_rows_of(run: Run) -> dict[str, list[str]]:
    """Source slug → submitter names of the source rows this rerun re-measures."""
    revision = run.implementation.revision if run.implementation is not None else ""
    found: dict[str, list[str]] = {}
    for slug, rows in REMEASURED_ROWS.items():
        names = [name for name, rerun_revision in rows.items() if rerun_revision == revision]
        if names:
            found[slug] = names
    return found


def has_related(run: Run) -> bool:
    """Whether ``related_runs`` has anything to look for (else the page spends no query)."""
    if is_rerun(run):
        return bool(_source_rows_of(run))
    return _remeasured_revision(run) is not None


def related_runs(run: Run) -> QuerySet[Run] | list[Run]:
    """For a source's reference row: KernelIndex's reruns of the same code on the same
    benchmark. For a rerun: the source rows it re-measured. Published runs only; 1 query, or
    none when the run has no counterpart in ``REMEASURED_ROWS``."""
    if not has_related(run):
        return []
    if is_rerun(run):
        sources = _source_rows_of(run)
        pairs = [(slug, name) for slug, names in sources.items() for name in names]
        if len(pairs) == 1:  # every revision of REMEASURED_ROWS as it is: one source, one row name
            ((slug, name),) = pairs
            return _source_rows(benchmark_id=run.benchmark_id, slug=slug, submitter=name)
        published = Run.objects.visible().for_listing().filter(benchmark_id=run.benchmark_id)
        rows = None
        for slug, names in sources.items():
            match = published.filter(source__slug=slug, is_reference=True, submitter__in=names)
            rows = match if rows is None else rows | match
        assert rows is not None  # has_related checked there is at least one
        return rows.order_by(*_SOURCE_ROWS_ORDER)
    return _reruns_of(benchmark_id=run.benchmark_id, revision=_remeasured_revision(run))


_SOURCE_ROWS_ORDER = ("group__hardware_product", "-group__harness_version", "submitter", "public_id")

# A rerun's source rows, when it re-measures one row name of one source: compiled once
# (kernelindex.prepared); compiling the nine-table join cost a rerun's page more than its other
# five queries together.
_source_rows = Prepared(
    lambda benchmark_id, slug, submitter: (
        Run.objects.visible()
        .for_listing()
        .filter(benchmark_id=benchmark_id, source__slug=slug, is_reference=True, submitter=submitter)
        .order_by(*_SOURCE_ROWS_ORDER)
    ),
    benchmark_id=int,
    slug=str,
    submitter=str,
)


# A reference row's reruns: one shape whatever the row, compiled once (kernelindex.prepared).
_reruns_of = Prepared(
    lambda benchmark_id, revision: (
        Run.objects.visible()
        .for_listing()
        .filter(
            benchmark_id=benchmark_id,
            source__slug=RERUN_SOURCE,
            evidence_level=EvidenceLevel.KERNELINDEX_RERUN,
            implementation__revision=revision,
        )
        .order_by("group__hardware_product", "-group__harness_version", "-observed_at", "public_id")
    ),
    benchmark_id=int,
    revision=str,
)
