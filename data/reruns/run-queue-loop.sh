#!/usr/bin/env bash
# The whole rerun-request loop on one host: the web app on SQLite, a moderator and a rerun
# token, three requests queued through the API, two pull workers, then the queue and the runs.
# Usage (from the repository root): OUT=/some/dir PY=python3 bash data/reruns/run-queue-loop.sh
set -u
PY=${PY:-python3}
OUT=${OUT:-/tmp/loop-out}
PORT=${PORT:-8765}
mkdir -p "$OUT/bundles"
export DATABASE_URL="sqlite:///$(mktemp -d)/site.sqlite3" DEBUG=1 PYTHONUNBUFFERED=1
export API_THROTTLE_TOKEN=6000/min
API="http://127.0.0.1:$PORT"
T0=$(date +%s)
$PY manage.py migrate --noinput -v 0 && $PY manage.py createcachetable || exit 1
$PY manage.py import data/sol-execbench data/reruns data/reference > "$OUT/import.log" 2>&1 || { tail -20 "$OUT/import.log"; exit 1; }
$PY manage.py shell -c '
from django.contrib.auth.models import Group, User
from api.services import api_token_issue
mod = User.objects.create_user("moderator", is_staff=True); mod.groups.add(Group.objects.get(name="moderators"))
machine = User.objects.create_user("rerun-h200")
_, m = api_token_issue(user=mod, name="moderator token", issued_by=mod)
_, r = api_token_issue(user=machine, name="H200 rerun machine", may_record_reruns=True, issued_by=mod)
open("/tmp/loop-tokens", "w").write(m + " " + r)
' || exit 1
read MOD RERUN < /tmp/loop-tokens
$PY -m gunicorn kernelindex.wsgi -b 127.0.0.1:$PORT -w 3 --timeout 300 > "$OUT/gunicorn.log" 2>&1 &
GPID=$!
for i in $(seq 60); do curl -sf -o /dev/null "$API/api/v1/" && break; sleep 0.5; done
SETTINGS='"trials": 1, "iterations": 20, "warmupSeconds": 1'
for body in \
  "{\"benchmark\": \"010_attention_value_projection_with_transpose\", \"target\": \"reference\", $SETTINGS, \"reason\": \"queue loop on the H200\"}" \
  "{\"benchmark\": \"010_attention_value_projection_with_transpose\", \"target\": \"scoring-baseline\", $SETTINGS, \"reason\": \"queue loop on the H200\"}" \
  "{\"benchmark\": \"062_kv_cache_update_with_rope_backward\", \"target\": \"torch-compile-eager-numerics\", $SETTINGS, \"reason\": \"queue loop on the H200\"}"; do
  curl -s -X POST "$API/api/v1/reruns/" -H "Authorization: Bearer $MOD" -H 'Content-Type: application/json' -d "$body" | tee -a "$OUT/requests.log"; echo | tee -a "$OUT/requests.log"
done
echo "queued at +$(( $(date +%s) - T0 )) s"
timeout ${WORKER_LIMIT:-600} $PY -m reruns.worker --api "$API" --token "$RERUN" --name h200-a --exit-when-empty --poll 2 --keep "$OUT/bundles" > "$OUT/worker-a.log" 2>&1 &
A=$!
sleep 1
timeout ${WORKER_LIMIT:-600} $PY -m reruns.worker --api "$API" --token "$RERUN" --name h200-b --exit-when-empty --poll 2 --keep "$OUT/bundles" > "$OUT/worker-b.log" 2>&1 &
B=$!
wait $A; echo "worker a exit $?"; wait $B; echo "worker b exit $?"
echo "workers done at +$(( $(date +%s) - T0 )) s"
kill $GPID; wait $GPID 2>/dev/null
$PY manage.py shell -c '
from api.models import RerunRequest
from attestations.models import ModerationEvent
from runs import rerun_bundles
for q in RerunRequest.objects.for_listing().order_by("pk"):
    run = q.result_run
    print(f"#{q.pk} {q.benchmark.native_id[:3]} {q.target:30} {q.state:7} worker={q.worker_name} attempts={q.attempts} "
          f"claimed={q.claimed_at:%H:%M:%S} finished={q.finished_at:%H:%M:%S} run={run and run.public_id} "
          f"{run and run.status} {run and run.status_detail} latency_us={run and run.latency_ns and round(run.latency_ns / 1e3, 3)} "
          f"evidence={run and run.evidence_level} env={run and run.environment.product} reason={q.failure_reason!r}")
    if run is not None:
        print("   re-measured:", [(r.public_id, r.source.slug, r.submitter) for r in rerun_bundles.related_runs(run)])
for e in ModerationEvent.objects.filter(target_type="rerun_request").order_by("pk"):
    print(f"event {e.created_at:%H:%M:%S} {e.action:28} {e.target_id} {e.actor_label} {e.reason[:120]!r}")
' 2>&1 | tee "$OUT/queue.txt"
cat "$OUT/worker-a.log" "$OUT/worker-b.log" | grep -v "^\[rerun" | tail -20
