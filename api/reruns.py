"""The rerun queue: moderators request reruns, rerun machines claim, run and finish them.

A request names what to re-measure (a benchmark's reference, scoring baseline, torch.compile of
its reference, or a run's published solution). A worker (``python -m reruns.worker``) claims the
oldest claimable request with its rerun token, receives the definition files and the solution
(``rerun_work``), runs the harness, posts the bundle to ``/api/v1/manifests/`` and finishes the
request with the run it recorded, or with the reason it could not.

Claims are atomic: on PostgreSQL the oldest row is locked with ``SELECT … FOR UPDATE SKIP
LOCKED``, so concurrent workers each take a different row; elsewhere (SQLite) a conditional
``UPDATE … WHERE pk = … AND attempts = <seen>`` takes it, and a worker that updated no row lost
the race and looks again. A claim not finished before its lease returns to the queue at the
next claim, which counts another attempt; after ``max_attempts`` expired leases the request
fails. Every request and every state change writes one ModerationEvent.
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from api.models import ApiToken, RerunRequest, RerunState, RerunTarget
from attestations.moderation import ModerationAction, event_record, require_reason
from kernelindex import canonical
from runs.models import Benchmark, EvidenceLevel, Run, RunRevision

DEFAULT_LEASE_SECONDS = 3600
MAX_TRIALS, MAX_ITERATIONS, MAX_WARMUP_SECONDS = 10, 1000, 60.0


class RerunRefused(Exception):
    """A rerun request, claim or finish that cannot be done; ``code`` is machine-readable."""

    def __init__(self, code: str, message: str, *, field: str | None = None, status: int = 400) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.field = field
        self.status = status


def is_moderator(user: Any) -> bool:
    """Staff who may request reruns: the ``moderators`` group has ``api.add_rerunrequest``."""
    return bool(user and user.is_authenticated and user.is_active and user.is_staff) and user.has_perm(
        "api.add_rerunrequest"
    )


def lease_duration() -> timedelta:
    return timedelta(seconds=int(getattr(settings, "RERUN_LEASE_SECONDS", DEFAULT_LEASE_SECONDS)))


# -- where the code to rerun comes from ----------------------------------------------------------


def _source_dirs() -> list[Path]:
    """Folders holding SOL-ExecBench's ``definitions/<collection>/<name>/`` and ``kernels/``."""
    configured = getattr(settings, "RERUN_SOURCE_DIRS", None)
    return [Path(p) for p in configured] if configured else [Path(settings.BASE_DIR) / "data" / "sol-execbench"]


def definition_folder(benchmark: Benchmark) -> Path:
    """The benchmark's SOL-ExecBench definition folder (definition.json + workload.jsonl), found
    by the definition's name: a submitted run of kernel 10 names SOL-ExecBench's 010_… too."""
    name = benchmark.native_id
    if name and "/" not in name and not name.startswith("."):
        for root in _source_dirs():
            for candidate in sorted((root / "definitions").glob(f"*/{name}")):
                files = candidate / "definition.json", candidate / "workload.jsonl"
                if all(f.is_file() for f in files) and json.loads(files[0].read_text("utf-8")).get("name") == name:
                    return candidate
    raise RerunRefused(
        "no_definition",
        f"No SOL-ExecBench definition folder named {name!r} is available to rerun (definitions under "
        "RERUN_SOURCE_DIRS).",
        field="benchmark",
    )


def scoring_baseline(benchmark: Benchmark) -> dict[str, Any]:
    """The scoring baseline SOL-ExecBench published for the benchmark (its kernel file's
    ``response.data.baseline``), as the part of the kernel file the harness reads."""
    for root in _source_dirs():
        for path in sorted((root / "kernels").glob("kernel-*.json")):
            data = json.loads(path.read_text(encoding="utf-8")).get("response", {}).get("data", {})
            if data.get("name") == benchmark.native_id and isinstance(data.get("baseline"), str):
                return {"response": {"data": {"name": data["name"], "baseline": data["baseline"]}}}
    raise RerunRefused(
        "no_scoring_baseline",
        f"SOL-ExecBench published no scoring baseline source for {benchmark.native_id!r}.",
        field="target",
    )


def _code_digest(sources: list[dict[str, str]]) -> str:
    """The harness's code digest: one file's bytes, or the JCS of the files sorted by path."""
    if len(sources) == 1:
        return "sha256:" + canonical.sha256_hex(sources[0]["content"].encode("utf-8"))
    ordered = sorted(({"path": s["path"], "content": s["content"]} for s in sources), key=lambda s: s["path"])
    return "sha256:" + canonical.sha256_hex(canonical.dumps(ordered))


def published_solution(run: Run) -> dict[str, Any]:
    """A run's solution as a SOL-ExecBench solution file, from its implementation document:
    ``spec.sources`` ([{path, content}]) whose digest is the declared ``codeDigest``, with
    ``spec.entryPoint`` (FILE::FUNCTION, default the first file's ``run``) and ``spec.language``."""
    spec = canonical.loads(run.implementation.document)["spec"] if run.implementation_id else {}
    sources = spec.get("sources")
    valid = (
        isinstance(sources, list)
        and sources
        and all(
            isinstance(s, dict) and isinstance(s.get("path"), str) and isinstance(s.get("content"), str)
            for s in sources
        )
    )
    if not valid:
        raise RerunRefused(
            "no_published_solution",
            f"Run {run.public_id} has no published solution: its implementation document carries no "
            "spec.sources ([{path, content}]).",
            field="run",
        )
    digest = _code_digest(sources)
    if spec.get("codeDigest") not in (None, digest):
        raise RerunRefused(
            "solution_digest_mismatch",
            f"Run {run.public_id}'s published sources hash to {digest}, not its declared codeDigest "
            f"{spec.get('codeDigest')}.",
            field="run",
        )
    return {
        "name": run.implementation.revision or f"run-{run.public_id}",
        "definition": run.benchmark.native_id,
        "author": run.implementation.submitter or run.submitter or "unknown",
        "spec": {
            "language": str(spec.get("language") or "pytorch"),
            "entry_point": str(spec.get("entryPoint") or f"{sources[0]['path']}::run"),
            "destination_passing_style": bool(spec.get("destinationPassingStyle", False)),
        },
        "sources": [{"path": s["path"], "content": s["content"]} for s in sources],
    }


def _expected_revision(request: RerunRequest) -> str:
    if request.target == RerunTarget.RUN_SOLUTION:
        return request.target_run.implementation.revision or f"run-{request.target_run.public_id}"
    return request.target


def rerun_work(request: RerunRequest) -> dict[str, Any]:
    """Everything a worker needs to run the request, with no access to the index's files."""
    folder = definition_folder(request.benchmark)
    solution: dict[str, Any]
    if request.target == RerunTarget.SCORING_BASELINE:
        solution = {"kind": "baseline", "kernel": scoring_baseline(request.benchmark)}
    elif request.target == RerunTarget.RUN_SOLUTION:
        solution = {"kind": "file", "file": published_solution(request.target_run)}
    else:
        solution = {"kind": "builtin", "spec": request.target}
    return {
        "id": request.pk,
        "benchmark": {"source": request.benchmark.source.slug, "nativeId": request.benchmark.native_id},
        "target": request.target,
        "targetRun": request.target_run.public_id if request.target_run_id else None,
        "expectedRevision": _expected_revision(request),
        "definition": {
            "folder": folder.name,
            "files": {
                name: (folder / name).read_text(encoding="utf-8") for name in ("definition.json", "workload.jsonl")
            },
        },
        "solution": solution,
        "settings": {
            "trials": request.trials,
            "iterations": request.iterations,
            "warmupSeconds": request.warmup_seconds,
        },
        "attempt": request.attempts,
        "leaseExpiresAt": request.lease_expires_at.isoformat() if request.lease_expires_at else None,
    }


# -- requesting ----------------------------------------------------------------------------------


def _target_id(request: RerunRequest) -> tuple[str, str]:
    return ("rerun_request", str(request.pk))


def rerun_request_check(
    *, benchmark: Benchmark, target: str, target_run: Run | None, trials: Any, iterations: Any, warmup_seconds: Any
) -> None:
    """Refuse a request no worker could run: bad settings, no definition folder, no published
    scoring baseline or solution. (The admin's form and ``rerun_request_create`` both ask.)"""
    if target not in RerunTarget.values:
        raise RerunRefused("invalid", f"target must be one of {', '.join(RerunTarget.values)}.", field="target")
    if (target == RerunTarget.RUN_SOLUTION) != (target_run is not None):
        raise RerunRefused(
            "invalid",
            "A run is named exactly when the target is run-solution.",
            field="run" if target_run else "target",
        )
    if target_run is not None and target_run.benchmark_id != benchmark.pk:
        raise RerunRefused("invalid", f"Run {target_run.public_id} is not a run of this benchmark.", field="run")
    for name, value, low, high, whole in (
        ("trials", trials, 1, MAX_TRIALS, True),
        ("iterations", iterations, 1, MAX_ITERATIONS, True),
        ("warmupSeconds", warmup_seconds, 0, MAX_WARMUP_SECONDS, False),
    ):
        kinds = (int,) if whole else (int, float)
        if isinstance(value, bool) or not isinstance(value, kinds) or not low <= value <= high:
            kind = "whole number" if whole else "number"
            raise RerunRefused("invalid", f"{name} must be a {kind} from {low} to {high}.", field=name)
    definition_folder(benchmark)
    if target == RerunTarget.SCORING_BASELINE:
        scoring_baseline(benchmark)
    if target_run is not None:
        published_solution(target_run)


@transaction.atomic
def rerun_request_create(
    *,
    benchmark: Benchmark,
    target: str,
    requested_by: Any,
    target_run: Run | None = None,
    reason: str = "",
    trials: int = 3,
    iterations: int = 50,
    warmup_seconds: float = 3.0,
    actor_label: str = "",
) -> RerunRequest:
    """Queue a rerun (one ModerationEvent). Refuses what no worker could run
    (``rerun_request_check``) and a second open request for the same thing (409)."""
    rerun_request_check(
        benchmark=benchmark,
        target=target,
        target_run=target_run,
        trials=trials,
        iterations=iterations,
        warmup_seconds=warmup_seconds,
    )
    reason = require_reason(reason, "request a rerun", required=False)
    # One open request per thing to rerun: the lock on the benchmark serialises two requests.
    Benchmark.objects.select_for_update().filter(pk=benchmark.pk).first()
    duplicate = RerunRequest.objects.open().filter(benchmark=benchmark, target=target, target_run=target_run).first()
    if duplicate is not None:
        raise RerunRefused(
            "rerun_already_queued",
            f"Rerun request #{duplicate.pk} for this is already {duplicate.state}.",
            field="target",
            status=409,
        )
    request = RerunRequest(
        benchmark=benchmark,
        target=target,
        target_run=target_run,
        requested_by=requested_by,
        reason=reason,
        trials=trials,
        iterations=iterations,
        warmup_seconds=float(warmup_seconds),
    )
    # Fields only: the foreign keys are the rows just read, and the database checks the constraints.
    request.full_clean(exclude=["benchmark", "requested_by", "target_run"], validate_constraints=False)
    request.save()
    event_record(
        action=ModerationAction.RERUN_REQUESTED,
        actor=requested_by,
        actor_label=actor_label,
        target=_target_id(request),
        reason=reason,
        payload={
            "benchmark": benchmark.native_id,
            "target": target,
            "run": target_run.public_id if target_run else None,
            "trials": trials,
            "iterations": iterations,
            "warmupSeconds": float(warmup_seconds),
        },
    )
    return request


# -- claiming ------------------------------------------------------------------------------------


def _worker_label(token: ApiToken, worker_name: str) -> str:
    return f"worker {worker_name} (token {token.key_prefix}…)"[:300]


def _claimed(request: RerunRequest, *, token: ApiToken, worker_name: str, expired: dict[str, Any] | None) -> None:
    """The events of a claim that took ``request`` (already saved in its new state)."""
    label = _worker_label(token, worker_name)
    if expired is not None:
        event_record(
            action=ModerationAction.RERUN_LEASE_EXPIRED,
            actor=token.user,
            actor_label=label,
            target=_target_id(request),
            reason=f"the lease of worker {expired['worker']} expired at {expired['lease']}; back to the queue",
            payload={"attempts": expired["attempts"]},
        )
    event_record(
        action=ModerationAction.RERUN_CLAIMED,
        actor=token.user,
        actor_label=label,
        target=_target_id(request),
        payload={"worker": worker_name, "attempt": request.attempts, "leaseExpiresAt": str(request.lease_expires_at)},
    )


def _exhausted(request: RerunRequest, *, token: ApiToken, worker_name: str) -> None:
    event_record(
        action=ModerationAction.RERUN_FAILED,
        actor=token.user,
        actor_label=_worker_label(token, worker_name),
        target=_target_id(request),
        reason=request.failure_reason,
        payload={"attempts": request.attempts},
    )


def _expiry(row: RerunRequest) -> dict[str, Any] | None:
    if row.state != RerunState.CLAIMED:
        return None
    return {"worker": row.worker_name, "lease": row.lease_expires_at.isoformat(), "attempts": row.attempts}


def _exhausted_reason(row: RerunRequest) -> str:
    return (
        f"no worker finished it: the lease expired on each of its {row.attempts} attempt(s) "
        f"(last worker {row.worker_name})"
    )


def rerun_request_claim(*, token: ApiToken, worker_name: str) -> RerunRequest | None:
    """Give the oldest claimable request to this worker, or None when there is nothing to do."""
    if connection.features.has_select_for_update_skip_locked:
        claim = _claim_locked
    else:
        claim = _claim_conditional
    for _ in range(50):  # each round either claims, finds nothing, or retires one request
        outcome = claim(token=token, worker_name=worker_name)
        if outcome != "again":
            return outcome  # type: ignore[return-value]
    return None


def _claim_locked(*, token: ApiToken, worker_name: str) -> RerunRequest | None | str:
    now = timezone.now()
    with transaction.atomic():
        row = RerunRequest.objects.claimable(now).select_for_update(skip_locked=True).first()
        if row is None:
            return None
        expired = _expiry(row)
        if expired is not None and row.attempts >= row.max_attempts:
            row.state, row.finished_at, row.failure_reason = RerunState.FAILED, now, _exhausted_reason(row)
            row.save(update_fields=["state", "finished_at", "failure_reason"])
            _exhausted(row, token=token, worker_name=worker_name)
            return "again"
        row.state = RerunState.CLAIMED
        row.attempts += 1
        row.worker_name, row.claimed_with, row.claimed_at = worker_name, token, now
        row.lease_expires_at = now + lease_duration()
        row.save(update_fields=["state", "attempts", "worker_name", "claimed_with", "claimed_at", "lease_expires_at"])
        _claimed(row, token=token, worker_name=worker_name, expired=expired)
        return row


def _claim_conditional(*, token: ApiToken, worker_name: str) -> RerunRequest | None | str:
    now = timezone.now()
    row = RerunRequest.objects.claimable(now).first()
    if row is None:
        return None
    expired = _expiry(row)
    # The row as we saw it: claimable still and not claimed since (a claim bumps attempts).
    seen = RerunRequest.objects.filter(pk=row.pk, attempts=row.attempts).filter(
        Q(state=RerunState.QUEUED) | Q(state=RerunState.CLAIMED, lease_expires_at__lt=now)
    )
    with transaction.atomic():
        if expired is not None and row.attempts >= row.max_attempts:
            if seen.update(state=RerunState.FAILED, finished_at=now, failure_reason=_exhausted_reason(row)):
                row.refresh_from_db()
                _exhausted(row, token=token, worker_name=worker_name)
            return "again"
        taken = seen.update(
            state=RerunState.CLAIMED,
            attempts=F("attempts") + 1,
            worker_name=worker_name,
            claimed_with=token,
            claimed_at=now,
            lease_expires_at=now + lease_duration(),
        )
        if not taken:
            return "again"  # another worker took it between our read and our update
        row.refresh_from_db()
        _claimed(row, token=token, worker_name=worker_name, expired=expired)
        return row


# -- finishing -----------------------------------------------------------------------------------


def _result_run(request: RerunRequest, token: ApiToken, public_id: Any) -> Run:
    """The run a worker says it recorded for the request: a kernelindex_rerun of the request's
    benchmark and code that this token's owner recorded after the request was made."""
    if not isinstance(public_id, str) or not public_id:
        raise RerunRefused("invalid", "run must be the public id of the run the worker recorded.", field="run")
    run = Run.objects.select_related("implementation").filter(public_id=public_id).first()
    if run is None:
        raise RerunRefused("invalid", f"No run {public_id}.", field="run")
    first = RunRevision.objects.filter(run=run, number=1).values("actor_id", "created_at").first()
    revision = run.implementation.revision if run.implementation_id else ""
    problems = []
    if run.evidence_level != EvidenceLevel.KERNELINDEX_RERUN:
        problems.append("it is not a kernelindex_rerun")
    if run.benchmark_id != request.benchmark_id:
        problems.append("it is a run of another benchmark")
    if revision != _expected_revision(request):
        problems.append(f"its implementation is {revision!r}, not {_expected_revision(request)!r}")
    if first is None or first["actor_id"] != token.user_id or first["created_at"] < request.requested_at:
        problems.append("this token's owner did not record it after the request was made")
    if problems:
        raise RerunRefused(
            "run_does_not_match",
            f"Run {public_id} is not a result of request #{request.pk}: " + "; ".join(problems) + ".",
            field="run",
        )
    return run


@transaction.atomic
def rerun_request_finish(
    *, request_id: int, token: ApiToken, outcome: str, run_public_id: Any = None, reason: Any = ""
) -> RerunRequest:
    """Mark a claimed request done (with the run the worker recorded) or failed (with the reason;
    a run, when the worker recorded the failure as one). Only the token holding the claim may."""
    request = RerunRequest.objects.select_for_update().filter(pk=request_id).first()
    if request is None:
        raise RerunRefused("not_found", f"No rerun request #{request_id}.", status=404)
    if request.state != RerunState.CLAIMED or request.claimed_with_id != token.pk:
        raise RerunRefused(
            "not_claimed",
            f"Rerun request #{request.pk} is {request.state}"
            + ("" if request.state != RerunState.CLAIMED else " by another worker")
            + "; only the worker holding its claim can finish it.",
            status=409,
        )
    if outcome not in (RerunState.DONE, RerunState.FAILED):
        raise RerunRefused("invalid", "state must be 'done' or 'failed'.", field="state")
    if not isinstance(reason, str):
        raise RerunRefused("invalid", "reason must be a string.", field="reason")
    run = None
    if outcome == RerunState.DONE or run_public_id is not None:
        run = _result_run(request, token, run_public_id)
    if outcome == RerunState.FAILED:
        if not reason.strip():
            raise RerunRefused("invalid", "A failed rerun needs the reason.", field="reason")
        request.failure_reason = reason.strip()[:4000]
    request.state, request.result_run, request.finished_at = outcome, run, timezone.now()
    request.save(update_fields=["state", "result_run", "finished_at", "failure_reason"])
    event_record(
        action=ModerationAction.RERUN_DONE if outcome == RerunState.DONE else ModerationAction.RERUN_FAILED,
        actor=token.user,
        actor_label=_worker_label(token, request.worker_name),
        target=_target_id(request),
        reason=request.failure_reason,
        payload={"run": run.public_id if run else None, "attempt": request.attempts, "worker": request.worker_name},
    )
    return request
