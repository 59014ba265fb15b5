"""Writes of the API app: issuing and revoking tokens, recording submitted manifests.

A submitted manifest goes the one way every run goes into the index: ``bundle_verify`` and
then ``ingest.engine.import_bundles``. What this module adds is the policy of DESIGN §3 for the
API: the evidence level comes from the token, never from the bundle's annotations.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from api.models import TOKEN_PREFIX, ApiToken, token_hash
from attestations.moderation import ModerationAction, event_record
from ingest.engine import import_bundles
from kernelindex import canonical
from runs import identity as run_identity_rules
from runs.manifests import ManifestError, VerifiedBundle, bundle_verify
from runs.models import Benchmark, EvidenceLevel, Run, RunRevision

RERUN_FAMILY = "kernelindex_rerun"


class SubmissionRefused(Exception):
    """A well-formed bundle this token may not record. ``code`` is machine-readable."""

    def __init__(self, code: str, message: str, *, field: str | None = None, status: int = 403) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.field = field
        self.status = status


@dataclass
class Submission:
    outcome: str  # "created", "updated" or "unchanged"
    run: Run


@transaction.atomic
def api_token_issue(
    *, user: Any, name: str, issued_by: Any, submitter_name: str = "", may_record_reruns: bool = False
) -> tuple[ApiToken, str]:
    """Create a token; returns it with the raw secret, which is never stored and never shown again."""
    raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken(
        user=user,
        name=name,
        submitter_name=submitter_name,
        may_record_reruns=may_record_reruns,
        key_prefix=raw[:12],
        key_hash=token_hash(raw),
        issued_by=issued_by,
    )
    token.full_clean()
    token.save()
    event_record(
        action=ModerationAction.API_TOKEN_ISSUED,
        actor=issued_by,
        target=("api_token", str(token.pk)),
        reason=f"issued to {user.get_username()}: {name}",
        payload={"may_record_reruns": may_record_reruns, "key_prefix": token.key_prefix},
    )
    return token, raw


@transaction.atomic
def api_token_revoke(*, token: ApiToken, actor: Any, reason: str) -> ApiToken:
    """Revoke a token for good; the row stays, with who revoked it and why."""
    if token.revoked_at is not None:
        return token
    token.revoked_at = timezone.now()
    token.revoked_reason = reason or "revoked by a moderator"
    token.save(update_fields=["revoked_at", "revoked_reason"])
    event_record(
        action=ModerationAction.API_TOKEN_REVOKED,
        actor=actor,
        target=("api_token", str(token.pk)),
        reason=token.revoked_reason,
        payload={"key_prefix": token.key_prefix},
    )
    return token


def _declared_submitter(bundle: VerifiedBundle) -> str:
    native = bundle.run_spec["sourceNative"]
    implementation = bundle.docs.get("implementation", {}).get("spec", {})
    return str(native.get("submitter") or implementation.get("submitter") or "")


def _evidence_level(bundle: VerifiedBundle, token: ApiToken) -> str:
    """DESIGN §3: kernelindex_rerun only for a rerun token AND a bundle of the rerun harness.

    A submission never joins a source's boards: other than KernelIndex's reruns it must name the
    source "submitted", so its comparison key (which includes the source) is its own.
    """
    comparability = bundle.docs["protocol"]["spec"].get("comparability")
    family = comparability.get("family", "") if isinstance(comparability, dict) else ""
    source = bundle.run_spec["sourceNative"]["source"]
    allowed = {"kernelindex"} if family == RERUN_FAMILY else run_identity_rules.SUBMITTABLE_SOURCES
    if source in run_identity_rules.KNOWN_SOURCES and source not in allowed:
        raise SubmissionRefused(
            "source_not_submittable",
            f"Runs of source {source!r} are recorded only by its importer; "
            f"a submission names the source {sorted(allowed)[0]!r}.",
            field="run.spec.sourceNative.source",
        )
    if family == RERUN_FAMILY:
        if not token.may_record_reruns:
            raise SubmissionRefused(
                "rerun_permission_required",
                "Only a token with the rerun permission can record runs of the KernelIndex rerun harness "
                "(protocol family kernelindex_rerun).",
                field="protocol.spec.comparability.family",
            )
        return EvidenceLevel.KERNELINDEX_RERUN
    submitter = _declared_submitter(bundle)
    if submitter and submitter != token.effective_submitter:
        raise SubmissionRefused(
            "submitter_mismatch",
            f"This token submits as {token.effective_submitter!r}; the bundle names the submitter {submitter!r}.",
            field="run.spec.sourceNative.submitter",
        )
    return EvidenceLevel.SUBMITTER_REPORTED


def manifest_submit(*, bundle: Any, token: ApiToken) -> Submission:
    """Verify a submitted bundle and record its run, attributed to the token's owner.

    Idempotent: the same bundle again leaves the run unchanged. A run the index already holds
    from another path (a source import, another submitter) is never overwritten from the API.
    Raises ManifestError (bad bundle, digest mismatch) or SubmissionRefused.
    """
    verified = bundle_verify(bundle)
    # The API never trusts KernelIndex annotations a client sends (evidence level, publication
    # date, provenance, source rank): drop them before the import sees them.
    verified = VerifiedBundle(docs=verified.docs, digests=verified.digests, declared=verified.declared)
    evidence = _evidence_level(verified, token)
    _check_benchmark(verified)
    identity = run_identity_rules.run_identity(verified)
    identity_json = canonical.dumps_str(identity)
    for attempt in range(2):
        try:
            with transaction.atomic():
                existing = Run.objects.select_for_update().filter(identity=identity_json).first()
                if existing is not None:
                    _check_owner(existing, token, evidence)
                result = import_bundles(
                    [verified],
                    evidence_level=evidence,
                    trust_annotations=False,
                    actor=token.user,
                    actor_label=f"api: {token.user.get_username()} (token {token.key_prefix}…)"[:300],
                    reason="submitted through the API",
                )
            break
        except IntegrityError:
            # Two identical submissions raced; the loser retries and finds the winner's run.
            if attempt:
                raise
    outcome = "created" if result.created else "updated" if result.updated else "unchanged"
    run = Run.objects.for_listing().defer(None).get(public_id=result.run_ids[0])
    return Submission(outcome=outcome, run=run)


def _check_benchmark(bundle: VerifiedBundle) -> None:
    """A submission creates benchmarks only under its own source: the workload may name another
    source's benchmark (a rerun of a SOL-ExecBench definition) only when the catalogue holds it."""
    slug, native_id = run_identity_rules.benchmark_target(bundle)
    own = bundle.run_spec["sourceNative"]["source"]
    if slug == own or Benchmark.objects.filter(source__slug=slug, native_id=native_id).exists():
        return
    raise SubmissionRefused(
        "benchmark_not_in_catalogue",
        f"The workload names benchmark {native_id!r} of {slug!r}, which is not in its catalogue; a submission "
        f"adds benchmarks only under its own source {own!r}.",
        field="workload.spec.benchmark.source",
    )


def _check_owner(run: Run, token: ApiToken, evidence: str) -> None:
    first = RunRevision.objects.filter(run=run, number=1).values_list("actor_id", flat=True).first()
    if run.evidence_level != evidence or first != token.user_id:
        raise SubmissionRefused(
            "run_exists",
            f"The index already holds run {run.public_id} with this identity (source, benchmark, hardware, "
            "harness, external id), recorded by another path; choose another externalId.",
            field="run.spec.sourceNative.externalId",
            status=409,
        )


__all__ = ["ManifestError", "SubmissionRefused", "api_token_issue", "api_token_revoke", "manifest_submit"]
