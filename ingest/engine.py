"""The import engine. Every run enters the index through ``import_bundles``.

Imports are atomic (one transaction for a whole call) and idempotent: a run is found again by
its identity (the source's own identity of the run); an unchanged run is left alone, a changed
one gets a new RunRevision recording who changed it and why, never a duplicate row.

The work is done in batches with a fixed number of queries per batch (lookups with ``__in``,
``bulk_create``/``bulk_update``), so importing 100,000 runs does not cost 100,000 round trips.
On PostgreSQL each batch's new runs are written (``COPY``, on a thread) while the next batch is
built, so the server and this process work at the same time rather than in turns.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import connection, transaction

from ingest.rows import allocate_keys, format_rows, nothing, prepare_rows
from ingest.session import ImportSession
from kernelindex.pagecache import bump_data_version
from runs import counts, ranking
from runs.bulk import client_bound, index_reads_only
from runs.identity import identity_text, public_id_candidates
from runs.manifests import ManifestError, VerifiedBundle
from runs.models import ELIGIBLE, EvidenceLevel, Run, RunRevision, Visibility
from runs.summaries import SUMMARIES


@dataclass
class ImportResult:
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    run_ids: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return f"{self.created} created, {self.updated} updated, {self.unchanged} unchanged"


_UPDATABLE = (
    "digest",
    "document",
    *SUMMARIES,
    "name",
    "title",
    "labels",
    "source",
    "benchmark",
    "group",
    "protocol",
    "environment",
    "workload",
    "implementation",
    "protocol_digest",
    "environment_digest",
    "workload_digest",
    "implementation_digest",
    "external_id",
    "submitter",
    "status",
    "status_detail",
    "evidence_level",
    "is_reference",
    "primary_statistic",
    "latency_ns",
    "sol_score",
    "avg_speedup",
    "fast_1_count",
    "fast_1_total",
    "source_rank",
    "observed_at",
    "provenance_url",
    "retrieved_at",
    "data_quality_note",
    "revision",
)


def import_bundles(
    bundles: Iterable[VerifiedBundle],
    *,
    evidence_level: str = EvidenceLevel.SOURCE_REPORTED,
    trust_annotations: bool = False,
    actor: Any = None,
    actor_label: str = "import",
    reason: str = "imported",
    describe: Callable[[VerifiedBundle], tuple[str, str]] | None = None,
    batch_size: int = 2000,
) -> ImportResult:
    """Import verified bundles atomically. Unchanged runs are left alone; changed ones get a
    revision; ranks of every touched comparison group are recomputed once at the end.

    ``trust_annotations`` (operators' ``manage.py import`` only) takes the evidence level,
    publication date and provenance from ``kernelindex.dev/…`` annotations, so an export
    re-imports as it was. The API never trusts them. The moderation state an export carries
    (visibility, quarantine, public reason) is given to the runs the import creates; a run
    already in the index keeps its own, which only the moderation services change (each
    with a ModerationEvent): re-importing data/ or an old export must not undo a hide.

    ``describe`` gives each bundle's own (actor label, reason) for its revision, so one call can
    import the bundles of many files (``manage.py import`` does: one batch per 2,000 runs, not
    per file) and every revision still names the file it came from.
    """
    result = ImportResult()
    bundles = list(bundles)
    identities = [identity_text(bundle) for bundle in bundles]
    # Each batch's new runs are written while the next batch is built (``_Background``), unless
    # a run comes twice: then the later row replaces the earlier one before anything is written.
    overlapped = connection.vendor == "postgresql" and len(set(identities)) == len(identities)
    with client_bound(), transaction.atomic():
        session = ImportSession(
            evidence_level=evidence_level,
            trust_annotations=trust_annotations,
            actor=actor,
            actor_label=actor_label,
            reason=reason,
            describe=describe,
        )
        background = _Background()
        ranked: set[int] = set()
        if overlapped:
            # Each COPY checks its rows' references as it ends, on the thread, instead of all of
            # them at the commit, when nothing else is left to do (3 s of 25 at 100,000 runs).
            _set_constraints("IMMEDIATE")
        try:
            with connection.execute_wrapper(background.waiting):
                write: Callable[[], None] | None = None
                for start in range(0, len(bundles), batch_size):
                    write_changes = _import_batch(
                        session,
                        bundles[start : start + batch_size],
                        identities[start : start + batch_size],
                        result,
                        lookups_done=(lambda write=write: background.start(write)) if write else None,
                        keys=overlapped,
                    )
                    if overlapped:
                        written, fresh, write = _prepare_pending(session, hold_last_group=True)
                        # A group ranked with an earlier batch's runs that has more in this one is
                        # ranked again at the end, with all of them.
                        ranked = (ranked - written) | fresh
                    write_changes()
                if write is not None:
                    background.start(write)
                background.wait()
                # What is left: every new run (one pass), or the last batch's last group, held back.
                written, fresh, write = _prepare_pending(session)
                ranked = (ranked - written) | fresh
                write()
        finally:
            background.wait(quietly=True)  # never roll back under a COPY still running
        if overlapped:
            # As Django declares them. (After an error, the rollback of this atomic block, a
            # savepoint when nested, restores them.)
            _set_constraints("DEFERRED")
        ranking.recompute_groups(session.touched_groups - ranked)
        counts.refresh(ranked)  # recompute_groups refreshed the others
        counts.refresh_left(session.left_environments, session.left_implementations)
        if result.created or result.updated:  # what the pages show changed
            bump_data_version()
    return result


def _set_constraints(mode: str) -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"SET CONSTRAINTS ALL {mode}")


class _Background:
    """The COPY of one batch's new runs, run on a thread while the engine builds the next batch
    (its lookups first, then pure Python: ``run_fields`` and the rows), so PostgreSQL writes
    while this process computes instead of the two taking turns.

    The thread uses only psycopg's connection, never Django's (``ingest.rows.format_rows``):
    one connection, one transaction. Any query the importing thread makes meanwhile waits for
    the COPY first (``waiting``, a Django execute wrapper), so the connection is used by one at
    a time.
    """

    def __init__(self) -> None:
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    def start(self, write: Callable[[], None]) -> None:
        self.wait()

        def run() -> None:
            try:
                write()
            except BaseException as error:  # noqa: BLE001 - raised again by wait() on the importing thread
                self._error = error

        self._thread = threading.Thread(target=run, name="kernelindex-import-copy", daemon=True)
        self._thread.start()

    def wait(self, *, quietly: bool = False) -> None:
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        error, self._error = self._error, None
        if error is not None and not quietly:
            raise error

    def waiting(self, execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any) -> Any:
        self.wait()
        return execute(sql, params, many, context)


def _import_batch(
    session: ImportSession,
    bundles: list[VerifiedBundle],
    identities: list[str],
    result: ImportResult,
    lookups_done: Callable[[], None] | None = None,
    keys: bool = False,
) -> Callable[[], None]:
    """One batch: its lookups (queries; with ``keys``, the new runs' and revisions' primary keys
    too), then ``lookups_done()`` (the previous batch's COPY starts), then its rows, computed in
    Python while that COPY runs. Returns the writing of the runs it changed, for the caller to
    call when its own Python work is done too."""
    session.prefetch(bundles)
    docs = session.documents(bundles)
    wanted = list(dict.fromkeys(identities))
    # By their unique keys, never by reading the table: inside the import's transaction the
    # planner still has the statistics of before it, and chose to read the runs it had already
    # written, for each batch (3.0 s of a 100,000-run import's server time, 0.2 after).
    with connection.cursor() as cursor, index_reads_only(cursor):
        existing = {run.identity: run for run in Run.objects.filter(identity__any=wanted)}
        candidates = [next(iter(public_id_candidates(identity))) for identity in wanted if identity not in existing]
        stored = Run.objects.filter(public_id__any=candidates).values_list("public_id", flat=True)
        taken = session.pending_public_ids | set(stored)
    if keys:
        new_runs = len(candidates)  # every identity not stored is a new run (no run comes twice here)
        run_keys, revision_keys = iter(allocate_keys(Run, new_runs)), iter(allocate_keys(RunRevision, new_runs))
    if lookups_done is not None:
        lookups_done()
    rows: dict[str, tuple[VerifiedBundle, dict[str, Any]]] = {}
    for bundle, identity in zip(bundles, identities, strict=True):
        # The same run twice in one import: the later row wins, as a re-import would.
        rows[identity] = (bundle, session.run_fields(bundle, docs))
    changed_runs: list[Run] = []
    revisions: list[RunRevision] = []
    for identity, (_bundle, fields) in rows.items():
        published_hint = fields.pop("published_at_hint")
        # Moderation state from a trusted export applies to runs this import creates only.
        moderation = fields.pop("moderation_hint")
        run = existing.get(identity)
        if run is None and identity in session.pending:
            # Already created earlier in this import (not written yet): the later row wins.
            earlier = session.pending[identity][0]
            row = _new_row(fields, identity, earlier["public_id"], earlier["published_at"])
            row.update(moderation)
            session.pending[identity] = (row, session.describe(_bundle))
            result.run_ids.append(earlier["public_id"])
            session.touched_groups.add(fields["group"].pk)
            continue
        if run is None:
            public_id = _free_public_id(identity, taken)
            taken.add(public_id)
            row = _new_row(fields, identity, public_id, published_hint or session.now)
            row.update(moderation)
            if keys:
                row.update(id=next(run_keys), **{_REVISION_KEY: next(revision_keys)})
            session.pending[identity] = (row, session.describe(_bundle))
            session.pending_public_ids.add(public_id)
            result.created += 1
            result.run_ids.append(public_id)
            session.touched_groups.add(fields["group"].pk)
            continue
        # An existing run: unchanged, or a new revision.
        fields["revision"] = run.revision
        changes = {}
        for name, value in fields.items():
            if name in SUMMARIES:  # parts of the document: a change to them is one to it
                continue
            column = _FOREIGN_KEYS.get(name)
            if column is None:
                old, new = getattr(run, name), value
            else:
                old, new = getattr(run, column), None if value is None else value.pk
            if old != new:
                changes[name] = [_jsonable(old), _jsonable(new)]
        if not changes:
            result.unchanged += 1
            result.run_ids.append(run.public_id)
            session.touched_groups.add(run.group_id)
            continue
        previous_digest = run.digest
        # A run that moves to another group leaves a gap in its old group's ranks and figures,
        # one that changes environment or implementation in the old one's and its project's.
        session.touched_groups.add(run.group_id)
        if "environment" in changes:
            session.left_environments.add(run.environment_id)
        if "implementation" in changes:
            session.left_implementations.add(run.implementation_id)
        label, why = session.describe(_bundle)
        for name, value in fields.items():
            setattr(run, name, value)
        run.revision += 1
        changed_runs.append(run)
        revisions.append(
            RunRevision(
                run=run,
                number=run.revision,
                digest=run.digest,
                document=run.document,
                previous_digest=previous_digest if previous_digest != run.digest else "",
                actor=session.actor,
                actor_label=label,
                reason=why,
                changes={k: v for k, v in changes.items() if k != "document"},
            )
        )
        result.updated += 1
        result.run_ids.append(run.public_id)
        session.touched_groups.add(fields["group"].pk)

    def write_changes() -> None:
        if changed_runs:
            Run.objects.bulk_update(changed_runs, list(_UPDATABLE), batch_size=500)
        if revisions:
            RunRevision.objects.bulk_create(revisions, batch_size=1000)

    return write_changes


# A new run's row carries its first revision's primary key under this name when the keys are
# drawn with the batch's lookups (``_import_batch(keys=True)``); it is no column of the run.
_REVISION_KEY = "first_revision_id"


def _new_row(fields: dict[str, Any], identity: str, public_id: str, published_at: datetime) -> dict[str, Any]:
    """A new run's columns for ``insert_rows`` (foreign keys as ids)."""
    row = dict(fields)
    for name, column in _FOREIGN_KEYS.items():
        value = row.pop(name)
        row[column] = None if value is None else value.pk
    row.update(identity=identity, public_id=public_id, published_at=published_at, revision=1)
    return row


def _prepare_pending(
    session: ImportSession, *, hold_last_group: bool = False
) -> tuple[set[int], set[int], Callable[[], None]]:
    """The runs this import creates (all of them at its end, or one batch's), with their
    revisions: their keys and ranks now, their COPY as the function returned (run it, or hand it
    to ``_Background``). Also returns the groups of these runs, and those ranked here.

    Runs of a comparison group that had no runs before are written with their rank already
    computed (``ranking.compute_ranks``, the one ranking rule; eligibility from the one
    ``ELIGIBLE`` rule, asked of the database once per combination of its fields), so a large
    first import does not insert 100,000 rows and then update each one's rank. Returns those
    groups; the others are ranked by ``ranking.recompute_groups`` as usual.
    """
    if not session.pending:
        return set(), set(), nothing
    pending = list(session.pending.values())
    if hold_last_group:
        # The last group of a batch may go on in the next one (a board's rows come together):
        # its runs wait for it, so it is ranked once, with all of them.
        last = pending[-1][0]["group_id"]
        held = {identity: entry for identity, entry in session.pending.items() if entry[0]["group_id"] == last}
        pending = [entry for entry in pending if entry[0]["group_id"] != last]
    group_ids = {row["group_id"] for row, _ in pending}
    # A group this import created has no runs but its own: ranked here, unless some are written.
    fresh = (group_ids & session.new_groups) - session.written_groups
    session.written_groups |= group_ids
    groups = {group.pk: group for group in session.groups.values() if group.pk in fresh}
    eligible: dict[tuple[Any, ...], bool] = {}
    by_group: dict[int, list[ranking.RankRow]] = {}
    for index, (row, _) in enumerate(pending):
        group = groups.get(row["group_id"])
        if group is None:
            continue
        against = {
            "status": row["status"],
            "visibility": row.get("visibility", Visibility.PUBLISHED),
            "quarantined": row.get("quarantined", False),
            "is_reference": row["is_reference"],
        }
        key = tuple(against.values())
        if key not in eligible:
            eligible[key] = ELIGIBLE.check(against)
        by_group.setdefault(group.pk, []).append(
            ranking.RankRow(
                pk=index,
                group_id=group.pk,
                submitter=row["submitter"],
                implementation_id=row["implementation_id"],
                metric=row[group.ranking_metric],
                observed_at=row["observed_at"],
                public_id=row["public_id"],
                eligible=eligible[key],
            )
        )
    ranked_counts: dict[int, int] = {}
    for group_id, rank_rows in by_group.items():
        group = groups[group_id]
        rule = ranking.RankingRule(group.ranking_metric, group.ranking_direction, group.best_per)
        for index, rank in ranking.compute_ranks(rank_rows, rule).items():
            pending[index][0]["rank"] = rank
            ranked_counts[group_id] = ranked_counts.get(group_id, 0) + (rank is not None)
    run_rows = [row for row, _ in pending]
    drawn = bool(run_rows) and _REVISION_KEY in run_rows[0]  # keys drawn with the lookups: no query
    if drawn:
        pks = [row["id"] for row in run_rows]
        write_runs = format_rows(Run, run_rows, pks)
    else:
        pks, write_runs = prepare_rows(Run, run_rows)
    actor_id = session.actor.pk if session.actor is not None else None
    revision_rows = [
        {
            "run_id": pk,
            "number": 1,
            "digest": row["digest"],
            "document": row["document"],
            "previous_digest": "",
            "actor_id": actor_id,
            "actor_label": label,
            "reason": why,
            "changes": {},
        }
        for pk, (row, (label, why)) in zip(pks, pending, strict=True)
    ]
    if drawn:
        write_revisions = format_rows(RunRevision, revision_rows, [row[_REVISION_KEY] for row in run_rows])
    else:
        _, write_revisions = prepare_rows(RunRevision, revision_rows)
    # The one query, last: everything above is this process's work, done while the COPY runs.
    ranking.store_ranked_counts(list(groups.values()), ranked_counts)
    session.pending.clear()
    if hold_last_group:
        session.pending.update(held)

    def write() -> None:
        write_runs()
        write_revisions()

    return group_ids, fresh, write


# The run's foreign keys and their columns.
_FOREIGN_KEYS = {
    name: f"{name}_id"
    for name in ("source", "benchmark", "group", "protocol", "environment", "workload", "implementation")
}


def _free_public_id(identity: str, taken: set[str]) -> str:
    """``taken`` already holds every stored id among the 8-character candidates of this batch;
    only a collision (extending the id) costs a query."""
    for index, candidate in enumerate(public_id_candidates(identity)):
        if candidate in taken:
            continue
        if index > 0 and Run.objects.filter(public_id=candidate).exists():
            continue
        return candidate
    raise ManifestError(f"no free public id for {identity}")  # needs a full sha256 collision


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, (str, int, float, bool, dict, list)) or value is None:
        return value
    return str(value)
