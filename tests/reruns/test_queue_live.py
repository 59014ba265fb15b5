"""The rerun queue end to end against gunicorn (SQLite here; PostgreSQL on the PostgreSQL pass,
where claims take ``SELECT … FOR UPDATE SKIP LOCKED``): concurrent claims never share a request,
and real ``python -m reruns.worker`` processes run the real harness.

This machine has no CUDA device, so the harness does its real CPU-side steps (definition,
workload, solution, trial processes) and its trial processes fail where CUDA is needed: the
worker records that failed run as ``kernelindex_rerun`` evidence and fails the request with the
reason "no CUDA device" — never a timing.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from tests.attestations.conftest import LiveSite, _live_postgres
from tests.factories import REPO

SOL = REPO / "data" / "sol-execbench"
K10 = "010_attention_value_projection_with_transpose"
K62 = "062_kv_cache_update_with_rope_backward"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def site() -> Iterator[LiveSite]:
    site = LiveSite()
    drop = _live_postgres(site, suffix="queue_live")  # beside the session's attestation site
    try:
        site.manage("migrate", "--noinput", "-v", "0")
        site.manage("createcachetable")
        site.manage("import", str(SOL / "definitions"), str(SOL / "kernels"), str(SOL / "leaderboards"))
        site.tokens = site.shell(  # type: ignore[attr-defined]
            "from django.contrib.auth.models import Group, User; from api.services import api_token_issue; "
            "mod = User.objects.create_user('mod', is_staff=True); "
            "mod.groups.add(Group.objects.get(name='moderators')); "
            "machine = User.objects.create_user('rerun-machine'); "
            "m = api_token_issue(user=mod, name='moderator', issued_by=mod)[1]; "
            "r = api_token_issue(user=machine, name='rerun machine', may_record_reruns=True, issued_by=mod)[1]; "
            "print(m, r)"
        ).split()
        site.start()
        yield site
    finally:
        site.stop()
        if drop is not None:
            drop()


def post(site: LiveSite, path: str, token: str, body: Any) -> tuple[int, Any]:
    request = urllib.request.Request(
        site.url + path,
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            raw = response.read()
            return response.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def queue(site: LiveSite, *targets: tuple[str, str]) -> list[int]:
    moderator = site.tokens[0]  # type: ignore[attr-defined]
    ids = []
    for benchmark, target in targets:
        status, body = post(site, "/api/v1/reruns/", moderator, {"benchmark": benchmark, "target": target, "trials": 1})
        assert status == 201, body
        ids.append(body["id"])
    return ids


def state(site: LiveSite) -> list[dict[str, Any]]:
    return json.loads(
        site.shell(
            "import json; from api.models import RerunRequest; from runs import rerun_bundles; "
            "print(json.dumps([{'id': q.pk, 'state': q.state, 'worker': q.worker_name, 'attempts': q.attempts, "
            "'reason': q.failure_reason, 'run': q.result_run and q.result_run.public_id, "
            "'runStatus': q.result_run and q.result_run.status, 'latency': q.result_run and q.result_run.latency_ns, "
            "'evidence': q.result_run and q.result_run.evidence_level, "
            "'remeasured': [r.submitter for r in rerun_bundles.related_runs(q.result_run)] if q.result_run else [], "
            "'events': list(__import__('attestations.models', fromlist=['x']).ModerationEvent.objects.filter("
            "target_type='rerun_request', target_id=str(q.pk)).order_by('pk').values_list('action', flat=True))} "
            "for q in RerunRequest.objects.for_listing().order_by('pk')]))"
        )
    )


def reset(site: LiveSite) -> None:
    site.shell(
        "from api.models import RerunRequest; from attestations.models import ModerationEvent; "
        "ModerationEvent.objects.filter(target_type='rerun_request').delete(); "
        "RerunRequest.objects.update(result_run=None); RerunRequest.objects.all().delete(); print('ok')"
    )


def test_concurrent_claims_never_share_a_request(site: LiveSite) -> None:
    reset(site)
    ids = queue(site, (K10, "reference"), (K10, "scoring-baseline"), (K62, "reference"))
    rerun = site.tokens[1]  # type: ignore[attr-defined]
    results: list[tuple[int, Any]] = []
    start = threading.Barrier(8)

    def worker(n: int) -> None:
        start.wait()
        results.append(post(site, "/api/v1/reruns/claim/", rerun, {"worker": f"w{n}"}))

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    claimed = [body["id"] for status, body in results if status == 200]
    assert sorted(claimed) == sorted(ids)  # each request once
    assert sorted(status for status, _ in results) == [200, 200, 200, 204, 204, 204, 204, 204]
    rows = state(site)
    assert {row["state"] for row in rows} == {"claimed"} and {row["attempts"] for row in rows} == {1}
    assert all(row["events"] == ["rerun_request.requested", "rerun_request.claimed"] for row in rows)


def test_workers_run_the_harness_and_record_the_failure_without_cuda(site: LiveSite) -> None:
    reset(site)
    reference, baseline = queue(site, (K10, "reference"), (K10, "scoring-baseline"))
    rerun = site.tokens[1]  # type: ignore[attr-defined]
    # A worker that claimed the reference and vanished: its lease runs out, the next worker retries it.
    status, work = post(site, "/api/v1/reruns/claim/", rerun, {"worker": "vanished"})
    assert (status, work["id"]) == (200, reference)
    site.shell(
        "from datetime import timedelta; from django.utils import timezone; from api.models import RerunRequest; "
        f"RerunRequest.objects.filter(pk={reference}).update(lease_expires_at=timezone.now() - timedelta(seconds=1)); "
        "print('ok')"
    )
    workers = [
        subprocess.Popen(
            [sys.executable, "-m", "reruns.worker", "--api", site.url, "--token", rerun, "--name", name]
            + ["--exit-when-empty", "--poll", "0.5"],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for name in ("cpu-a", "cpu-b")
    ]
    logs = [process.communicate(timeout=300)[0] for process in workers]
    assert all(process.returncode == 1 for process in workers), logs  # each failed what it took
    rows = {row["id"]: row for row in state(site)}
    for request_id in (reference, baseline):
        row = rows[request_id]
        assert row["state"] == "failed" and row["worker"] in {"cpu-a", "cpu-b"}, (row, logs)
        assert row["reason"].startswith("no CUDA device: "), row["reason"]
        assert f"the harness recorded run {row['run']} as failed (RUNTIME_ERROR)" in row["reason"]
        # The failure is a real record: a kernelindex_rerun run with a failed status and no timing.
        assert (row["runStatus"], row["latency"], row["evidence"]) == ("failed", None, "kernelindex_rerun")
        assert row["events"][-1] == "rerun_request.failed"
    assert rows[reference]["attempts"] == 2
    assert rows[reference]["events"] == [
        "rerun_request.requested",
        "rerun_request.claimed",
        "rerun_request.lease_expired",
        "rerun_request.claimed",
        "rerun_request.failed",
    ]
    assert rows[baseline]["attempts"] == 1
    # The rerun links to the source rows it re-measured (runs.rerun_bundles.related_runs).
    assert set(rows[reference]["remeasured"]) == {"Reference Implementation"}
    assert set(rows[baseline]["remeasured"]) == {"Scoring Baseline"}
    # The run page shows it.
    with urllib.request.urlopen(f"{site.url}/runs/{rows[reference]['run']}/", timeout=30) as response:
        page = response.read().decode()
    assert "Reference Implementation" in page
