"""The cache in front of the pages (kernelindex.pagecache): 304 on a matching ETag, whole pages
for anonymous visitors, and every write that a page shows changing it at once; a signed-in
moderator is never served a cached page and never leaves one behind."""

from __future__ import annotations

import os
import uuid

import pytest
from django.contrib.auth.models import Group, User
from django.core.cache import caches
from django.test import Client

from attestations import moderation, submissions
from kernelindex import pagecache
from runs.models import Run
from tests.conftest import on_ci
from tests.factories import import_bundles, reference_bundle, sol_bundle, sol_group


@pytest.fixture
def runs(db) -> list[Run]:
    result = sol_group(3)
    return list(Run.objects.filter(public_id__in=result.run_ids).order_by("rank"))


@pytest.fixture
def mod(db) -> User:
    user = User.objects.create_user("mod", "mod@example.org", "mod-password-1", is_staff=True)
    user.groups.add(Group.objects.get(name="moderators"))
    return user


def test_it_answers_304_on_a_matching_etag_and_serves_the_page_from_the_cache(client, runs, django_assert_num_queries):
    url = runs[1].get_absolute_url()
    first = client.get(url)
    assert first.status_code == 200 and first["X-Page-Cache"] == "miss"
    etag = first["ETag"]
    assert etag.startswith('"ki-')
    control = first["Cache-Control"]
    assert "public" in control and "s-maxage=" in control and "stale-while-revalidate=" in control

    with django_assert_num_queries(0):  # the page cache is in memory in tests
        again = client.get(url, HTTP_IF_NONE_MATCH=etag)
    assert again.status_code == 304 and again["ETag"] == etag

    with django_assert_num_queries(0):
        hit = client.get(url)
    assert hit.status_code == 200 and hit["X-Page-Cache"] == "hit"
    assert hit.content == first.content
    assert client.get(url, HTTP_IF_NONE_MATCH='"ki-1-19700101"').status_code == 200


def test_an_import_changes_every_page_at_once(client, runs):
    home = client.get("/")
    etag = home["ETag"]
    assert client.get("/", HTTP_IF_NONE_MATCH=etag).status_code == 304
    new = import_bundles([sol_bundle(submission_id=777, username="newcomer | lab", sol_score=0.99, latency_ms=0.01)])
    fresh = client.get("/")
    assert fresh.status_code == 200 and fresh["X-Page-Cache"] == "miss"
    assert b"newcomer | lab" in fresh.content
    assert client.get("/", HTTP_IF_NONE_MATCH=etag).status_code == 200
    group = client.get(f"/groups/{runs[0].group.key}/")
    assert new.run_ids[0].encode() in group.content


def test_a_moderation_action_changes_the_pages_that_show_it_at_once(client, runs, mod):
    url = runs[1].get_absolute_url()
    assert client.get(url).status_code == 200
    assert client.get(url)["X-Page-Cache"] == "hit"
    moderation.run_hide(runs[1], actor=mod, reason="Duplicate of another submission.")
    gone = client.get(url)
    assert gone.status_code == 410
    assert b"Duplicate of another submission." in gone.content


def test_an_attestation_approval_shows_at_once(client, db, mod):
    result = import_bundles([reference_bundle()])
    run = Run.objects.get(public_id=result.run_ids[0])
    url = run.get_absolute_url()
    text = "Reproduced on our own B200 within two percent."
    attestation = submissions.attestation_create(run=run, kind="note", text=text)
    assert text.encode() not in client.get(url).content  # pending: not shown, and now cached
    assert client.get(url)["X-Page-Cache"] == "hit"
    moderation.attestation_approve(attestation=attestation, actor=mod, reason="fine")
    assert text.encode() in client.get(url).content


def test_a_signed_in_moderator_never_sees_a_cached_page_nor_leaves_one(client, runs, mod):
    url = runs[1].get_absolute_url()
    anonymous = client.get(url)
    assert client.get(url)["X-Page-Cache"] == "hit"

    moderator = Client()
    moderator.force_login(mod)
    seen = moderator.get(url)
    assert seen.status_code == 200
    assert "X-Page-Cache" not in seen and "ETag" not in seen
    assert "private" in seen["Cache-Control"] and "public" not in seen["Cache-Control"]
    # Even with the anonymous page's ETag, the moderator's request goes to the view.
    assert moderator.get(url, HTTP_IF_NONE_MATCH=anonymous["ETag"]).status_code == 200

    caches["pages"].clear()
    moderator.get(url)  # rendered for the moderator: must not be stored for anyone
    assert client.get(url)["X-Page-Cache"] == "miss"


def test_a_write_request_bumps_the_version_and_a_page_that_sets_a_cookie_is_never_stored(client, runs):
    before = pagecache.data_version()
    form = client.get(f"{runs[1].get_absolute_url()}attest/")
    assert form.status_code == 200 and form.cookies  # the CSRF cookie
    assert "X-Page-Cache" not in form and "ETag" not in form
    assert client.get(f"{runs[1].get_absolute_url()}attest/").cookies
    client.post("/search/")  # any successful write request through the site
    assert pagecache.data_version() > before


def test_the_database_page_cache_serves_hits_and_follows_the_version(client, runs, settings):
    settings.CACHES = {
        **settings.CACHES,
        "pages": {"BACKEND": "kernelindex.cache.AtomicDatabaseCache", "LOCATION": "kernelindex_pages"},
    }
    url = f"/groups/{runs[0].group.key}/"
    assert client.get(url)["X-Page-Cache"] == "miss"
    assert client.get(url)["X-Page-Cache"] == "hit"
    pagecache.bump_data_version()
    assert client.get(url)["X-Page-Cache"] == "miss"
    caches["pages"].clear()
    # A lost version key starts again from the clock: never a number an old page was stored under.
    assert pagecache.data_version() > 10**18


REDIS_URL = os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/13"


def test_the_redis_page_cache_serves_hits_and_follows_the_version(client, runs, settings):
    import redis

    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=1).ping()
    except redis.exceptions.ConnectionError:
        if on_ci():
            raise
        pytest.skip(f"no Redis at {REDIS_URL}")
    prefix = f"pages-test-{uuid.uuid4().hex}"
    settings.CACHES = {
        **settings.CACHES,
        "pages": {
            "BACKEND": "django_redis.cache.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": prefix,
            "OPTIONS": {"CLIENT_CLASS": "django_redis.client.DefaultClient"},
        },
    }
    try:
        url = f"/groups/{runs[0].group.key}/"
        assert client.get(url)["X-Page-Cache"] == "miss"
        assert client.get(url)["X-Page-Cache"] == "hit"
        moderation.run_hide(runs[0], actor=None, reason="Withdrawn by its submitter.")
        assert client.get(url)["X-Page-Cache"] == "miss"
        assert pagecache.data_version() > 10**18  # started from the clock
    finally:
        redis.Redis.from_url(REDIS_URL).delete(*redis.Redis.from_url(REDIS_URL).keys(f"{prefix}:*") or ["-"])


def test_a_json_twin_is_cached_and_answered_304_on_its_digest(client, runs, django_assert_num_queries):
    """The twin's own ETag (its run's digest) stays; the page cache stores the twin and answers a
    revalidation on that digest without the view, until a write bumps the version."""
    url = f"/runs/{runs[0].public_id}.json"
    first = client.get(url)
    assert first.status_code == 200 and first["ETag"] == f'"{runs[0].digest}"' and first["X-Page-Cache"] == "miss"
    with django_assert_num_queries(0):
        assert client.get(url)["X-Page-Cache"] == "hit"
        again = client.get(url, HTTP_IF_NONE_MATCH=first["ETag"])
    assert again.status_code == 304 and again["ETag"] == first["ETag"]
    import_bundles([sol_bundle(submission_id=778, username="later | lab", sol_score=0.5, latency_ms=0.03)])
    # After a write the entry is stale: the view answers (its own 304 on the unchanged digest).
    assert client.get(url, HTTP_IF_NONE_MATCH=first["ETag"]).status_code == 304
    assert client.get(url)["X-Page-Cache"] == "miss"


def test_api_lists_answer_304_on_the_data_version_until_a_write(client, runs):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    first = client.get("/api/v1/runs/")
    etag = first["ETag"]
    assert first.status_code == 200 and etag == pagecache.current_etag()
    with CaptureQueriesContext(connection) as captured:  # the throttle's cache may be the database
        assert client.get("/api/v1/runs/", HTTP_IF_NONE_MATCH=etag).status_code == 304
    assert not [q for q in captured.captured_queries if "runs_" in q["sql"]]
    assert client.get("/api/v1/groups/", HTTP_IF_NONE_MATCH=etag).status_code == 304
    import_bundles([sol_bundle(submission_id=779, username="api | lab", sol_score=0.4, latency_ms=0.04)])
    fresh = client.get("/api/v1/runs/", HTTP_IF_NONE_MATCH=etag)
    assert fresh.status_code == 200 and fresh["ETag"] != etag


def test_with_the_page_cache_off_a_page_is_rendered_and_still_answers_304(client, runs, settings):
    url = runs[0].get_absolute_url()
    stored = client.get(url)
    assert stored["X-Page-Cache"] == "miss" and client.get(url)["X-Page-Cache"] == "hit"
    settings.PAGE_CACHE_SECONDS = 0  # switched off: the page stored above is not served
    for _ in range(2):
        fresh = client.get(url)
        assert fresh.status_code == 200 and fresh["X-Page-Cache"] == "miss"
        assert fresh.content == stored.content
    assert client.get(url, HTTP_IF_NONE_MATCH=fresh["ETag"]).status_code == 304


def test_an_anonymous_api_list_is_served_from_the_cache_until_a_write(client, runs, mod):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from api.services import api_token_issue

    url = "/api/v1/runs/?ordering=rank"
    first = client.get(url)
    assert first.status_code == 200 and first["X-Page-Cache"] == "miss"
    with CaptureQueriesContext(connection) as captured:  # the throttle's cache may be the database
        hit = client.get(url)
    assert hit.status_code == 200 and hit["X-Page-Cache"] == "hit"
    assert hit.content == first.content and hit["ETag"] == first["ETag"]
    assert hit["Content-Type"] == first["Content-Type"] == "application/json"
    assert not [q for q in captured.captured_queries if "runs_" in q["sql"]]
    assert client.get(url + "&limit=1")["X-Page-Cache"] == "miss"  # another URL, another entry

    # A token holder is throttled by token and never served, nor leaves, a cached list.
    _, raw = api_token_issue(user=mod, name="ci", issued_by=mod)
    for _ in range(2):
        signed = client.get(url, HTTP_AUTHORIZATION=f"Bearer {raw}")
        assert signed.status_code == 200 and "X-Page-Cache" not in signed
        assert signed.json() == first.json()

    import_bundles([sol_bundle(submission_id=780, username="api cache | lab", sol_score=0.3, latency_ms=0.05)])
    fresh = client.get(url)
    assert fresh["X-Page-Cache"] == "miss" and fresh["ETag"] != first["ETag"]
    assert len(fresh.json()["results"]) == len(first.json()["results"]) + 1


def test_a_process_serves_a_stored_body_from_memory_only_at_the_version_it_was_stored_at(client, runs):
    """An API hit reads only the version from the shared cache; the body comes from the
    process's memory while the version is the one it was stored at, and never after a write."""
    url = "/api/v1/runs/?ordering=rank"
    first = client.get(url)
    key = next(iter(pagecache.recent.entries))
    caches["pages"].delete(key)  # the shared copy is gone (evicted, another worker's cache…)
    hit = client.get(url)
    assert hit["X-Page-Cache"] == "hit" and hit.content == first.content
    pagecache.bump_data_version()
    assert pagecache.stored_at(key, pagecache.current_etag()) is None
    assert client.get(url)["X-Page-Cache"] == "miss"


def test_the_memory_of_recent_bodies_is_bounded_in_bytes_least_recently_used_out():
    recent = pagecache._Recent(limit=800)
    for name in "abcd":
        recent.put(name, {"etag": "v1", "content": b"x" * 100})
    assert recent.get("a", "v1") is not None  # now the most recently used
    for name in "efgh":
        recent.put(name, {"etag": "v1", "content": b"x" * 100})
    recent.put("i", {"etag": "v1", "content": b"x" * 100})
    assert recent.size <= 800 and recent.get("b", "v1") is None and recent.get("a", "v1") is not None
    assert recent.get("a", "v2") is None  # stored at another version
    recent.put("huge", {"etag": "v1", "content": b"x" * 101})  # over an eighth of the limit
    assert recent.get("huge", "v1") is None
    recent.put("a", {"etag": "v2", "content": b"y" * 10})  # replaced, not added
    assert recent.get("a", "v2")["content"] == b"y" * 10 and recent.size == 7 * 100 + 10


def test_a_page_hit_comes_from_the_workers_memory_only_at_the_version_it_was_stored_at(client, runs):
    url = runs[0].get_absolute_url()
    first = client.get(url)
    assert first["X-Page-Cache"] == "miss"
    for key in list(pagecache.recent.entries):
        caches["pages"].delete(key)  # the shared copy is gone (evicted, another worker's cache…)
    hit = client.get(url)
    assert hit["X-Page-Cache"] == "hit" and hit.content == first.content and hit["ETag"] == first["ETag"]
    assert client.get(url, HTTP_IF_NONE_MATCH=first["ETag"]).status_code == 304
    moderation.run_hide(runs[0], actor=None, reason="Withdrawn by its submitter.")
    gone = client.get(url)
    assert gone["X-Page-Cache"] == "miss" and gone.status_code == 410
