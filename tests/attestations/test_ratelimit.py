"""Who the client is, and the per-client limits on anonymous posts (in-process; the parallel
test against gunicorn is in test_live.py)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser
from django.core.cache import cache
from django.test import RequestFactory
from django.urls import reverse

from attestations.models import Attestation, IssueReport
from kernelindex import ratelimit
from kernelindex.cache import AtomicDatabaseCache
from kernelindex.clients import client_ip, client_key
from tests.attestations.conftest import note_data, report_data

# Limits count per clock minute: do not start a burst in the last seconds of one.
pytestmark = pytest.mark.usefixtures("minute_room")


def request(remote: str = "203.0.113.7", forwarded: str | None = None, user=None):
    extra = {"REMOTE_ADDR": remote}
    if forwarded is not None:
        extra["HTTP_X_FORWARDED_FOR"] = forwarded
    req = RequestFactory().post("/", **extra)
    req.user = user or AnonymousUser()
    return req


def test_the_client_is_remote_addr_without_trusted_proxies(settings):
    settings.TRUSTED_PROXY_COUNT = 0
    assert client_ip(request("203.0.113.7", "1.1.1.1")) == "203.0.113.7"
    assert client_key(request("203.0.113.7", "1.1.1.1")) == client_key(request("203.0.113.7", "2.2.2.2"))
    assert client_key(request("203.0.113.7")) != client_key(request("203.0.113.8"))


def test_only_entries_written_by_trusted_proxies_count(settings):
    settings.TRUSTED_PROXY_COUNT = 1
    # nginx appends the address it saw; whatever the client wrote before it is ignored.
    assert client_ip(request("10.0.0.2", "198.51.100.4")) == "198.51.100.4"
    assert client_ip(request("10.0.0.2", "6.6.6.6, 198.51.100.4")) == "198.51.100.4"
    assert client_key(request("10.0.0.2", "6.6.6.6, 198.51.100.4")) == client_key(
        request("10.0.0.2", "7.7.7.7, 8.8.8.8, 198.51.100.4")
    )
    settings.TRUSTED_PROXY_COUNT = 2
    assert client_ip(request("10.0.0.3", "6.6.6.6, 198.51.100.4, 10.0.0.2")) == "198.51.100.4"
    # Fewer entries than trusted hops: the request skipped a proxy; only the socket is known.
    assert client_ip(request("10.0.0.3", "198.51.100.4")) == "10.0.0.3"


def test_ipv6_clients_are_keyed_by_their_64(settings):
    settings.TRUSTED_PROXY_COUNT = 0
    assert client_key(request("2001:db8:1:2::1")) == client_key(request("2001:db8:1:2:ffff::9"))
    assert client_key(request("2001:db8:1:2::1")) != client_key(request("2001:db8:1:3::1"))
    assert client_key(request("::ffff:203.0.113.7")) == client_key(request("203.0.113.7"))


def test_keys_are_opaque():
    key = client_key(request("203.0.113.7"))
    assert "203.0.113.7" not in key and key.startswith("c:") and len(key) == 34


@pytest.mark.django_db
def test_the_minute_limit_cuts_at_five_and_says_when_to_retry(settings):
    settings.RATE_LIMIT_PER_MINUTE = 5
    results = [ratelimit.check(request(), ratelimit.SUBMISSIONS) for _ in range(7)]
    assert [allowed for allowed, _ in results] == [True] * 5 + [False] * 2
    assert all(1 <= retry <= 61 for _, retry in results[5:])
    # Another client has its own budget.
    assert ratelimit.check(request("203.0.113.99"), ratelimit.SUBMISSIONS) == (True, 0)


@pytest.mark.django_db
def test_the_day_limit_holds_across_minutes(settings):
    settings.RATE_LIMIT_PER_MINUTE = 100
    settings.RATE_LIMIT_PER_DAY = 3
    day_start = 86400 * 20000
    outcomes = [ratelimit.hit("c:x", "s", now=day_start + minute * 60)[0] for minute in range(5)]
    assert outcomes == [True, True, True, False, False]
    allowed, retry = ratelimit.hit("c:x", "s", now=day_start + 3600)
    assert not allowed and retry == 86400 - 3600 + 1
    assert ratelimit.hit("c:x", "s", now=day_start + 86400)[0]  # the next day


# Issue 10 changed this on purpose: signed-in users used to bypass the limits (80 of 80 posts
# accepted); now they are limited per account, and only staff are not.
@pytest.mark.django_db
def test_signed_in_users_are_limited_per_account_and_staff_are_not(settings, alice, mod):
    settings.RATE_LIMIT_PER_MINUTE = 2
    assert [ratelimit.check(request(user=alice))[0] for _ in range(4)] == [True, True, False, False]
    # One account wherever it posts from; another client on the same address is not affected.
    assert not ratelimit.check(request("198.51.100.99", user=alice))[0]
    assert ratelimit.check(request())[0]
    assert mod.is_staff
    assert all(ratelimit.check(request(user=mod))[0] for _ in range(5))


@pytest.mark.django_db
def test_the_database_cache_counts_atomically_and_expires():
    from django.core.cache import caches

    assert isinstance(caches["default"], AtomicDatabaseCache)
    assert cache.add("counter", 0, timeout=60)
    assert not cache.add("counter", 0, timeout=60)  # add never resets a running count
    assert [cache.incr("counter") for _ in range(3)] == [1, 2, 3]
    assert cache.decr("counter") == 2
    with pytest.raises(ValueError):
        cache.incr("missing")
    cache.add("gone", 5, timeout=-1)
    with pytest.raises(ValueError):
        cache.incr("gone")


@pytest.mark.parametrize("kind", ["attest", "report"])
def test_over_the_limit_a_post_gets_429_with_retry_after_and_nothing_is_stored(client, run, settings, kind):
    settings.RATE_LIMIT_PER_MINUTE = 5
    url = reverse(f"attestations:{kind}", args=[run.public_id])
    data = note_data() if kind == "attest" else report_data()
    statuses = [client.post(url, data, REMOTE_ADDR="198.51.100.20").status_code for _ in range(5)]
    assert statuses == [302] * 5
    refused = client.post(url, data, REMOTE_ADDR="198.51.100.20")
    assert refused.status_code == 429
    assert 1 <= int(refused["Retry-After"]) <= 61
    html = refused.content.decode()
    assert "Too many submissions for now" in html and "try again in" in html
    assert Attestation.objects.count() + IssueReport.objects.count() == 5


def test_the_two_forms_share_one_budget(client, run, settings):
    settings.RATE_LIMIT_PER_MINUTE = 4
    for _ in range(2):
        client.post(reverse("attestations:attest", args=[run.public_id]), note_data(), REMOTE_ADDR="198.51.100.21")
        client.post(reverse("attestations:report", args=[run.public_id]), report_data(), REMOTE_ADDR="198.51.100.21")
    response = client.post(
        reverse("attestations:attest", args=[run.public_id]), note_data(), REMOTE_ADDR="198.51.100.21"
    )
    assert response.status_code == 429


@pytest.mark.parametrize("proxies", [0, 1])
def test_a_forged_x_forwarded_for_does_not_reset_the_limit(client, run, settings, proxies):
    settings.RATE_LIMIT_PER_MINUTE = 5
    settings.TRUSTED_PROXY_COUNT = proxies
    url = reverse("attestations:attest", args=[run.public_id])
    statuses = []
    for index in range(10):
        # With a trusted proxy, the proxy appends the real client (198.51.100.30) last.
        forged = f"10.9.{index}.1" if proxies == 0 else f"10.9.{index}.1, 198.51.100.30"
        response = client.post(url, note_data(), REMOTE_ADDR="198.51.100.30", HTTP_X_FORWARDED_FOR=forged)
        statuses.append(response.status_code)
    assert statuses == [302] * 5 + [429] * 5
    assert Attestation.objects.count() == 5


def test_signed_in_users_are_limited_on_both_forms(alice_client, run, settings):
    # Issue 10: 80 of 80 posts by a signed-in user used to be accepted.
    settings.RATE_LIMIT_PER_MINUTE = 5
    attest = reverse("attestations:attest", args=[run.public_id])
    report = reverse("attestations:report", args=[run.public_id])
    statuses = [alice_client.post(attest, note_data()).status_code for _ in range(3)]
    statuses += [alice_client.post(report, report_data()).status_code for _ in range(3)]
    statuses += [alice_client.post(attest, note_data()).status_code for _ in range(74)]
    assert statuses == [302] * 5 + [429] * 75
    assert Attestation.objects.count() + IssueReport.objects.count() == 5


def test_moderators_are_not_limited(mod_client, run, settings):
    settings.RATE_LIMIT_PER_MINUTE = 2
    url = reverse("attestations:attest", args=[run.public_id])
    assert [mod_client.post(url, note_data()).status_code for _ in range(4)] == [302] * 4
