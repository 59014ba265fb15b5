"""Moderation state (visibility, quarantine, public reason) survives export → import.

It travels as ``kernelindex.dev/…`` annotations in run.metadata (outside the digest), written
only when not the default, and is read back only by an operator's ``manage.py import`` of an
export, only for the runs that import creates. The API never takes it.
"""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import transaction

from api.services import api_token_issue, manifest_submit
from attestations import moderation
from ingest import engine
from runs.manifests import A_PUBLIC_REASON, A_QUARANTINED, A_VISIBILITY, ManifestError, bundle_verify
from runs.models import Run, Visibility
from tests.factories import import_bundles, reference_bundle, sol_bundle
from tests.ingest.conftest import BOARD, DATA_PATHS, import_paths

MODERATION_KEYS = (A_VISIBILITY, A_QUARANTINED, A_PUBLIC_REASON)
STATE = ("visibility", "quarantined", "public_reason")


def export_text() -> str:
    out = io.StringIO()
    call_command("export", stdout=out)
    return out.getvalue()


def annotations(line: str) -> dict[str, Any]:
    return json.loads(line)["run"]["metadata"]["annotations"]


def state() -> dict[str, tuple[Any, ...]]:
    """Every run's moderation state and computed rank, by public id."""
    return {row[0]: row[1:] for row in Run.objects.values_list("public_id", *STATE, "rank")}


@pytest.fixture
def moderator(django_user_model: Any) -> Any:
    return django_user_model.objects.create_user("mod", password="unused-password-h8")


def moderate_kernel_10(moderator: Any) -> dict[str, Run]:
    """Quarantine #1, hide #3 and retract #5 of the kernel-10 board (real data)."""
    board = Run.objects.get(source_rank=1).group  # the one leaderboard under data/
    ranked = {run.rank: run for run in Run.objects.filter(group=board, rank__in=[1, 3, 5])}
    assert sorted(ranked) == [1, 3, 5]
    moderation.run_quarantine(run=ranked[1], actor=moderator, reason="Two reporters: correctness concern.")
    moderation.run_hide(run=ranked[3], actor=moderator, reason="Published by mistake.")
    moderation.run_retract(run=ranked[5], actor=moderator, reason="Withdrawn by the submitter.")
    return {"quarantined": ranked[1], "hidden": ranked[3], "retracted": ranked[5]}


def test_moderation_state_round_trips_through_export_and_ranks_respect_it(
    db: Any, moderator: Any, tmp_path: Path
) -> None:
    with transaction.atomic():
        import_paths(*DATA_PATHS)
        untouched = export_text()
        moderated = moderate_kernel_10(moderator)
        before = state()
        first = export_text()
        ids = {name: run.public_id for name, run in moderated.items()}
        transaction.set_rollback(True)
    assert Run.objects.count() == 0
    # The moderation took #1 out of the ranking: the old #2 is #1 now.
    assert before[ids["quarantined"]] == (Visibility.PUBLISHED, True, "Two reporters: correctness concern.", None)
    assert before[ids["hidden"]][:3] == (Visibility.HIDDEN, False, "Published by mistake.")
    assert before[ids["retracted"]][:3] == (Visibility.RETRACTED, False, "Withdrawn by the submitter.")
    # Only the three moderated lines changed; every other line is byte for byte what it was
    # (so the golden sha256 of the unmoderated export still holds).
    old_lines, new_lines = untouched.splitlines(), first.splitlines()
    changed = [new for old, new in zip(old_lines, new_lines, strict=True) if old != new]
    assert len(changed) == 3
    assert sorted(annotations(line).get(A_VISIBILITY, "published") for line in changed) == [
        "hidden",
        "published",
        "retracted",
    ]
    assert sum(annotations(line).get(A_QUARANTINED) is True for line in changed) == 1
    assert all(not set(MODERATION_KEYS) & set(annotations(line)) for line in new_lines if line not in changed)

    path = tmp_path / "export.jsonl"
    path.write_text(first, encoding="utf-8")
    import_paths(path)
    # Ranks recomputed on import (new groups: ranked as they are written) equal the ranks the
    # moderated index had.
    assert state() == before
    assert export_text() == first


def test_runs_created_in_an_existing_group_take_the_imported_state_and_are_ranked_by_it(
    db: Any, moderator: Any, tmp_path: Path
) -> None:
    with transaction.atomic():
        import_paths(*DATA_PATHS)
        moderated = moderate_kernel_10(moderator)
        before = state()
        first = export_text()
        moderated_lines = [line for line in first.splitlines() if set(MODERATION_KEYS) & set(annotations(line))]
        transaction.set_rollback(True)
    assert len(moderated_lines) == 3 and len(moderated) == 3
    rest = tmp_path / "rest.jsonl"
    rest.write_text("".join(line + "\n" for line in first.splitlines() if line not in moderated_lines))
    import_paths(rest)
    # Then the moderated runs join their (now occupied) group: recompute_groups ranks it.
    everything = tmp_path / "everything.jsonl"
    everything.write_text(first, encoding="utf-8")
    import_paths(everything)
    assert state() == before
    assert export_text() == first


def test_reimporting_an_old_export_never_undoes_a_later_moderation(db: Any, moderator: Any, tmp_path: Path) -> None:
    import_paths(*DATA_PATHS)
    path = tmp_path / "export.jsonl"
    path.write_text(export_text(), encoding="utf-8")  # everything published
    moderated = moderate_kernel_10(moderator)
    after = state()
    import_paths(path)
    import_paths(*DATA_PATHS)  # what scripts/serve runs on every start
    assert state() == after
    # And the other way round: an export of a hidden run does not hide it again once restored.
    hidden = moderated["hidden"]
    path.write_text(export_text(), encoding="utf-8")
    moderation.run_restore(run=hidden, actor=moderator, reason="Published by mistake was itself a mistake.")
    restored = state()
    import_paths(path)
    assert state() == restored
    assert restored[hidden.public_id][:3] == (Visibility.PUBLISHED, False, "")


def _bundle_with(**values: Any) -> dict[str, Any]:
    bundle = copy.deepcopy(reference_bundle())
    bundle["run"].setdefault("metadata", {})["annotations"] = {
        {"visibility": A_VISIBILITY, "quarantined": A_QUARANTINED, "reason": A_PUBLIC_REASON}[key]: value
        for key, value in values.items()
    }
    return bundle


def test_untrusted_imports_never_take_moderation_state(db: Any) -> None:
    # Source importers and the API call bundles_import with trust_annotations=False (the API
    # also drops every annotation a client sends before that).
    bundle = bundle_verify(_bundle_with(visibility="hidden", quarantined=True, reason="from the bundle"))
    assert bundle.annotations[A_VISIBILITY] == "hidden"
    engine.import_bundles([bundle], evidence_level="submitter_reported", trust_annotations=False)
    run = Run.objects.get()
    assert (run.visibility, run.quarantined, run.public_reason, run.rank) == (Visibility.PUBLISHED, False, "", 1)


def test_the_api_never_takes_moderation_state(db: Any, django_user_model: Any) -> None:
    alice = django_user_model.objects.create_user("alice-h8", password="unused-password-h8a")
    token, _raw = api_token_issue(user=alice, name="ci", submitter_name="alice | team", issued_by=alice)
    # What a submitter sends (its own "submitted" source), with export-style moderation annotations.
    bundle = sol_bundle(submission_id=900801, username="alice | team", sol_score=0.98, latency_ms=0.0186)
    bundle["run"]["spec"]["sourceNative"]["source"] = "submitted"
    bundle["run"]["metadata"]["annotations"] = {
        A_VISIBILITY: "retracted",
        A_QUARANTINED: True,
        A_PUBLIC_REASON: "from the client",
    }
    submission = manifest_submit(bundle=bundle, token=token)
    run = Run.objects.get(pk=submission.run.pk)
    assert (run.visibility, run.quarantined, run.public_reason) == (Visibility.PUBLISHED, False, "")


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"visibility": "gone"}, "kernelindex.dev/visibility is 'gone'"),
        ({"quarantined": "yes"}, "kernelindex.dev/quarantined must be true or false"),
        ({"reason": 42}, "kernelindex.dev/public-reason must be a string"),
    ],
)
def test_bad_moderation_annotations_are_a_clear_error_and_nothing_is_written(
    db: Any, tmp_path: Path, values: dict[str, Any], message: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(_bundle_with(**values)))
    with pytest.raises((CommandError, ManifestError)) as error:
        call_command("import", str(path), str(BOARD), stdout=io.StringIO())
    assert message in str(error.value) and "bad.json" in str(error.value)
    assert not Run.objects.exists()


def test_the_json_twin_leaves_the_moderation_state_out_so_its_etag_stays_the_digest(
    client: Any, db: Any, moderator: Any
) -> None:
    import_bundles([reference_bundle()])
    run = Run.objects.get()
    body = client.get(f"/runs/{run.public_id}.json").content
    moderation.run_quarantine(run=run, actor=moderator, reason="Under review.")
    response = client.get(f"/runs/{run.public_id}.json")
    assert response["ETag"] == f'"{run.digest}"' and response.content == body
    # The page says why; the export carries it.
    assert "Under review." in client.get(f"/runs/{run.public_id}/").content.decode()
    assert annotations(export_text())[A_QUARANTINED] is True
