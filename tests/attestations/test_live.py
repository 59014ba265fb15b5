"""Rate limits under real concurrency: gunicorn with 4 worker processes on one SQLite file,
20 threads posting at once from one client."""

from __future__ import annotations

import http.cookiejar
import re
import threading
import urllib.error
import urllib.parse
import urllib.request

import pytest

from tests.attestations.conftest import LiveSite, wait_for_minute_room

pytestmark = pytest.mark.slow


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):  # noqa: ANN002, ANN003
        return None


def csrf_session(site: LiveSite) -> tuple[str, str]:
    """(csrftoken cookie, form token) from the attestation page, shared by every thread."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    with opener.open(f"{site.url}/runs/{site.run_id}/attest/") as response:
        html = response.read().decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html).group(1)
    cookie = next(c.value for c in jar if c.name == "csrftoken")
    return cookie, token


def post_note(site: LiveSite, cookie: str, token: str, index: int, forwarded: str | None = None) -> int:
    body = urllib.parse.urlencode(
        {"csrfmiddlewaretoken": token, "kind": "note", "text": f"parallel note {index}"}
    ).encode()
    request = urllib.request.Request(f"{site.url}/runs/{site.run_id}/attest/", data=body, method="POST")
    request.add_header("Cookie", f"csrftoken={cookie}")
    request.add_header("Content-Type", "application/x-www-form-urlencoded")
    if forwarded:
        request.add_header("X-Forwarded-For", forwarded)
    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(request, timeout=60) as response:
            return response.status
    except urllib.error.HTTPError as error:
        if error.code == 429:
            assert 1 <= int(error.headers["Retry-After"]) <= 61
        return error.code


def stored(site: LiveSite) -> int:
    return int(site.shell("from attestations.models import Attestation; print(Attestation.objects.count())"))


def parallel_posts(site: LiveSite, n: int, forged: bool) -> list[int]:
    cookie, token = csrf_session(site)
    barrier = threading.Barrier(n)
    statuses: list[int] = [0] * n

    def worker(index: int) -> None:
        barrier.wait()
        statuses[index] = post_note(site, cookie, token, index, f"10.{index}.0.1" if forged else None)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return statuses


@pytest.mark.parametrize("forged", [False, True], ids=["plain", "forged-x-forwarded-for"])
def test_twenty_parallel_posts_are_cut_at_the_limit(fresh_site, forged):
    wait_for_minute_room(20)
    statuses = parallel_posts(fresh_site, 20, forged)
    assert sorted(statuses) == [302] * 5 + [429] * 15, statuses
    assert stored(fresh_site) == 5


def test_a_forged_x_forwarded_for_does_not_reset_the_limit_one_by_one(fresh_site):
    wait_for_minute_room(20)
    cookie, token = csrf_session(fresh_site)
    statuses = [post_note(fresh_site, cookie, token, i, f"192.0.2.{i}, 10.0.0.{i}") for i in range(8)]
    assert statuses == [302] * 5 + [429] * 3
    assert stored(fresh_site) == 5
