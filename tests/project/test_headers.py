"""Every HTML page carries the content security policy and the permissions policy; the policy
allows no inline script or style, and signed-in users' pages are never stored by a cache.

The walk covers every named route in the URLconf (``get_resolver()``): each is filled in with
real ids from imported runs, an attestation and a report, and requested as a superuser (so the
admin's pages render too) and anonymously.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from django.contrib.admin.sites import site as admin_site
from django.contrib.auth.models import User
from django.test import Client
from django.urls import NoReverseMatch, URLPattern, URLResolver, get_resolver, reverse

from runs.models import Project, Run
from tests.attestations.conftest import report_data, reproduction_data
from tests.factories import import_bundles, reference_bundle, sol_group

STRICT_DIRECTIVES = {
    "default-src": "'self'",
    "script-src": "'self'",
    "style-src": "'self'",
    "object-src": "'none'",
    "base-uri": "'none'",
    "frame-ancestors": "'none'",
    "form-action": "'self'",
}


def policy(header: str) -> dict[str, str]:
    directives = {}
    for part in header.split(";"):
        name, _, value = part.strip().partition(" ")
        directives[name] = value.strip()
    return directives


def named_routes(resolver: URLResolver | None = None, namespace: str = "") -> Iterator[tuple[str, URLPattern]]:
    """(full name, pattern) of every named route, namespaces included."""
    resolver = resolver or get_resolver()
    for entry in resolver.url_patterns:
        if isinstance(entry, URLResolver):
            inner = f"{namespace}{entry.namespace}:" if entry.namespace else namespace
            yield from named_routes(entry, inner)
        elif entry.name:
            yield f"{namespace}{entry.name}", entry


@pytest.fixture
def site(db, client: Client) -> dict[str, str]:
    """Imported runs (the reference bundle and a comparison group), an attestation and a report
    posted through the forms: the ids every route needs."""
    import_bundles([reference_bundle()])
    group = sol_group(2)
    run = Run.objects.select_related("group", "benchmark__source").get(public_id=group.run_ids[0])
    other = Run.objects.filter(group=run.group).exclude(pk=run.pk).first()
    project = Project.objects.first()
    poster = Client(REMOTE_ADDR="203.0.113.70")
    attest = poster.post(f"/runs/{run.public_id}/attest/", reproduction_data())
    report = poster.post(f"/runs/{run.public_id}/report/", report_data())
    assert attest.status_code == report.status_code == 302, "the forms must accept the sample posts"
    return {
        "public_id": run.public_id,
        "other_id": other.public_id,
        "key": run.group.key,
        "source": run.benchmark.source.slug,
        "native_id": run.benchmark.native_id,
        "digest": run.environment.digest,
        "project_slug": project.slug if project else "",
        "attest_received": attest["Location"],
        "report_received": report["Location"],
        # An invalid reset link still renders its page.
        "uidb64": "MQ",
        "token": "set-password",
    }


def fill(name: str, pattern: URLPattern, ids: dict[str, str]) -> str | None:
    """The route's URL with real ids, or None when it needs an id we have no object for."""
    groups = set(pattern.pattern.regex.groupindex) | set(getattr(pattern.pattern, "converters", {}))
    if name == "attestations:attest_received":
        return ids["attest_received"]
    if name == "attestations:report_received":
        return ids["report_received"]
    if name == "runs:project_detail":
        return reverse(name, kwargs={"slug": ids["project_slug"]}) if ids["project_slug"] else None
    if name == "runs:source_detail":
        return reverse(name, kwargs={"slug": ids["source"]})
    model_admin = getattr(pattern.callback, "model_admin", None)
    kwargs: dict[str, str] = {}
    for group in groups:
        if group in {"object_id", "id"} and model_admin is not None:
            obj = model_admin.model._default_manager.first()
            if obj is None:
                return None
            kwargs[group] = str(obj.pk)
        elif group == "app_label":
            continue
        elif group in ids:
            kwargs[group] = ids[group]
        elif group in {"id", "pk"} and name.startswith("api:"):
            kwargs[group] = ids["public_id"]
        else:
            return None
    try:
        return reverse(name, kwargs=kwargs) if kwargs else reverse(name)
    except NoReverseMatch:
        return None


def admin_app_urls() -> list[str]:
    return sorted({reverse("admin:app_list", kwargs={"app_label": m._meta.app_label}) for m in admin_site._registry})


@pytest.mark.django_db
def test_every_html_route_has_the_security_headers(site: dict[str, str]) -> None:
    root = User.objects.create_superuser("root", "root@example.org", "root-password-1")
    signed_in = Client()
    signed_in.force_login(root)
    anonymous = Client()
    urls, unfilled = set(admin_app_urls()), []
    for name, pattern in named_routes():
        url = fill(name, pattern, site)
        if url is None:
            unfilled.append(name)
        else:
            urls.add(url)
    html_pages = []
    for url in sorted(urls):
        for client in (signed_in, anonymous):
            response = client.get(url)
            assert response.status_code < 500, f"{url}: {response.status_code}"
            assert response.get("Permissions-Policy"), f"{url} has no Permissions-Policy"
            if response.get("Content-Type", "").startswith("text/html"):
                html_pages.append(url)
                header = response.get("Content-Security-Policy")
                assert header, f"{url} has no Content-Security-Policy"
                directives = policy(header)
                for directive in ("default-src", "script-src", "object-src", "base-uri", "frame-ancestors"):
                    assert directives[directive] == STRICT_DIRECTIVES[directive], f"{url}: {header}"
    # Names no object can fill (e.g. an admin route of a model with no row) must stay few.
    assert len(unfilled) <= len(urls) // 4, unfilled
    assert len(set(html_pages)) >= 40, sorted(set(html_pages))
    for required in ("/", f"/runs/{site['public_id']}/", "/accounts/login/", "/admin/", "/search/"):
        assert required in html_pages


def test_the_site_policy_is_the_strict_one(client: Client, db) -> None:
    header = client.get("/accounts/login/")["Content-Security-Policy"]
    assert policy(header) | STRICT_DIRECTIVES == policy(header)
    assert "unsafe-inline" not in header and "unsafe-eval" not in header


INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)[^>]*>", re.IGNORECASE)
INLINE_STYLE = re.compile(r"<style\b|\sstyle=|\son[a-z]+=", re.IGNORECASE)


@pytest.mark.django_db
def test_our_pages_have_no_inline_script_or_style(site: dict[str, str], client: Client) -> None:
    alice = User.objects.create_user("alice", "alice@example.org", "alice-password-1")
    client.force_login(alice)
    for url in (
        "/",
        "/search/?q=b200",
        f"/runs/{site['public_id']}/",
        f"/runs/{site['public_id']}/attest/",
        f"/runs/{site['public_id']}/report/",
        f"/runs/{site['public_id']}/compare/{site['other_id']}/",
        f"/groups/{site['key']}/",
        f"/benchmarks/{site['source']}/{site['native_id']}/",
        f"/runs/{site['public_id']}/cite/",
        site["attest_received"],
        "/accounts/password_change/",
        "/does-not-exist/",
    ):
        html = client.get(url).content.decode()
        assert not INLINE_SCRIPT.search(html), url
        assert not INLINE_STYLE.search(html), url


def test_permissions_policy_is_on_json_and_static_responses(client: Client, db) -> None:
    assert client.get("/api/v1/").get("Permissions-Policy")
    assert client.get("/api/schema/").get("Permissions-Policy")


def test_swagger_ui_split_view_needs_no_inline_script_or_style(client: Client, db) -> None:
    """With drf-spectacular's split view the docs page loads only files from this origin: the
    set-up script is its own request (see api/urls.py)."""
    page = client.get("/api/docs/")
    html = page.content.decode()
    assert page.status_code == 200
    assert not INLINE_SCRIPT.search(html) and not INLINE_STYLE.search(html)
    srcs = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert srcs and all(src.startswith("/") for src in srcs), srcs
    script = client.get(srcs[-1])
    assert script.status_code == 200 and script["Content-Type"].startswith("application/javascript")
    directives = policy(page["Content-Security-Policy"])
    assert directives["script-src"] == "'self'" and directives["style-src"] == "'self'"
    assert directives["img-src"] == "'self' data:"


def test_redoc_loads_nothing_from_another_origin(client: Client, db) -> None:
    page = client.get("/api/redoc/")
    html = page.content.decode()
    assert page.status_code == 200
    assert not INLINE_SCRIPT.search(html) and "googleapis" not in html
    assert policy(page["Content-Security-Policy"])["script-src"] == "'self'"


# -- Cache-Control: no-store for signed-in users ----------------------------------------------


@pytest.fixture
def alice_client(db) -> Client:
    alice = User.objects.create_user("alice", "alice@example.org", "alice-password-1")
    client = Client(REMOTE_ADDR="203.0.113.8")
    client.force_login(alice)
    return client


@pytest.fixture
def run_id(db) -> str:
    return import_bundles([reference_bundle()]).run_ids[0]


@pytest.mark.parametrize(
    "path",
    [
        "/accounts/password_change/",
        "/accounts/password_change/done/",
        "/runs/{run}/",
        "/runs/{run}/attest/",
        "/runs/{run}/report/",
        "/",
    ],
)
def test_signed_in_pages_are_not_stored(path: str, alice_client: Client, run_id: str) -> None:
    response = alice_client.get(path.format(run=run_id))
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    assert "private" in response["Cache-Control"]


def test_the_admin_password_change_form_is_not_stored(db) -> None:
    mod = User.objects.create_user("mod", "mod@example.org", "mod-password-1", is_staff=True)
    client = Client()
    client.force_login(mod)
    response = client.get("/admin/password_change/")
    assert response.status_code == 200 and "no-store" in response["Cache-Control"]


def test_anonymous_pages_are_left_to_the_views(client: Client, run_id: str) -> None:
    response = client.get(f"/runs/{run_id}/")
    assert "no-store" not in response.get("Cache-Control", "")
    assert "Cookie" not in response.get("Vary", "")
