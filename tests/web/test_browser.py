"""A visitor's walk through the site in Debian's chromium, against gunicorn (tests/web/conftest.py):
home → search "kv cache" → benchmark → ranking → run → compare with #1 → cite → JSON,
at desktop width with JavaScript off (every page works without it) and at 375 px with a
layout and accessibility check on every page. Screenshots go to test-artifacts/.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

from runs.identity import public_id_candidates, run_identity
from runs.manifests import bundle_verify
from tests.conftest import CHROMIUM, on_ci
from tests.factories import reference_bundle, sol_bundle
from tests.web.conftest import ARTIFACTS

pytestmark = pytest.mark.browser

LAUNCH_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

# Run inside the page: what a basic accessibility check looks at.
A11Y_CHECK = """() => {
  const problems = [];
  const h1 = document.querySelectorAll('h1').length;
  if (h1 !== 1) problems.push(`${h1} h1 elements`);
  for (const el of document.querySelectorAll('input:not([type=hidden]), select, textarea')) {
    const labelled = (el.id && document.querySelector(`label[for="${el.id}"]`)) || el.getAttribute('aria-label')
      || el.closest('label');
    if (!labelled) problems.push(`unlabelled ${el.tagName} ${el.name || el.id}`);
  }
  for (const table of document.querySelectorAll('table')) {
    if (!table.querySelector('caption')) problems.push('table without caption');
    for (const th of table.querySelectorAll('th')) if (!th.getAttribute('scope')) problems.push('th without scope');
  }
  for (const img of document.querySelectorAll('img')) if (!img.getAttribute('alt')) problems.push('img without alt');
  for (const svg of document.querySelectorAll('svg')) {
    if (!svg.querySelector('title')) problems.push('svg without title');
  }
  if (!document.documentElement.lang) problems.push('no lang');
  return problems;
}"""


def reference_public_id() -> str:
    identity = run_identity(bundle_verify(reference_bundle()))
    from kernelindex import canonical

    return next(iter(public_id_candidates(canonical.dumps_str(identity))))


@pytest.fixture(scope="module")
def walk_site(site_url: str, site_manage) -> str:
    """The served site, with three synthetic submitters ahead of the reference run in its group
    (as on the reference page, where it ranks 4th), so "Compare with #1" has a #1."""
    bundles = [
        sol_bundle(
            submission_id=990001 + i,
            username=f"synthetic leader {i} (browser test)",
            sol_score=0.995 - i * 0.001,
            latency_ms=0.0165 + i * 0.0005,
        )
        for i in range(3)
    ]
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as handle:
        handle.write("\n".join(json.dumps(b) for b in bundles) + "\n")
    site_manage("import", handle.name)
    Path(handle.name).unlink()
    return site_url


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists() and not on_ci():  # on CI a missing chromium fails instead
        pytest.skip(f"{CHROMIUM} not found: install Debian's chromium (apt-get install -y chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=LAUNCH_ARGS)
        yield chromium
        chromium.close()


def walk(browser, base: str, *, width: int, javascript: bool) -> None:
    from playwright.sync_api import expect

    ARTIFACTS.mkdir(exist_ok=True)
    context = browser.new_context(viewport={"width": width, "height": 900}, java_script_enabled=javascript)
    page = context.new_page()
    run_id = reference_public_id()
    step = 0

    def arrived(name: str) -> None:
        nonlocal step
        step += 1
        page.screenshot(path=str(ARTIFACTS / f"walk-{width}px-{step:02d}-{name}.png"), full_page=True)
        if javascript:
            scroll_width = page.evaluate("document.documentElement.scrollWidth")
            assert scroll_width <= width, f"{name}: page is {scroll_width}px wide at {width}px"
            assert page.evaluate(A11Y_CHECK) == [], name

    response = page.goto(base + "/")
    assert response.status == 200
    expect(page.locator("h1")).to_have_text("KernelIndex")
    arrived("home")

    page.get_by_label("Search benchmarks, submitters, projects and GPUs").fill("kv cache")
    page.locator("main form button[type=submit]").click()
    expect(page.locator("h1")).to_contain_text("kv cache")
    arrived("search")

    # The source's benchmark (KernelIndex's reruns of kernel 62 belong to it too, as its H200 board).
    page.locator("main li").filter(has_text="NVIDIA SOL-ExecBench").get_by_role(
        "link", name="KV cache update with RoPE backward"
    ).click()
    expect(page.locator("h1")).to_have_text("All results for KV cache update with RoPE backward")
    arrived("benchmark")

    page.get_by_role("link", name="Full ranking →").first.click()
    expect(page.locator("h1")).to_contain_text("Ranking: KV cache update with RoPE backward")
    expect(page.locator("table.ranking")).to_contain_text("synthetic leader 0 (browser test)")
    arrived("ranking")

    page.get_by_role("link", name=run_id, exact=True).click()
    expect(page.locator("h1")).to_have_text(f"Run {run_id}")
    expect(page.locator("main")).to_contain_text("Rank 4 of 4 in its comparison group · source-native comparison")
    expect(page.locator("main")).to_contain_text("SOL 0.9882 · 20.45× reference · 16/16 cases faster")
    manifest = page.locator("pre.manifest")
    expect(manifest).to_be_hidden()
    page.get_by_text("Show manifest").click()  # <details> opens without JavaScript
    expect(manifest).to_be_visible()
    arrived("run")

    page.get_by_role("link", name="Compare with #1 →").click()
    expect(page.locator("h1")).to_contain_text(f"Compare run {run_id} with")
    expect(page.locator("main")).to_contain_text("same comparison group")
    arrived("compare")

    page.get_by_role("link", name=f"← back to run {run_id}").click()
    page.get_by_role("link", name="Cite this record (permalink, digest, access date)").click()
    expect(page.locator("h1")).to_have_text(f"Cite run {run_id}")
    expect(page.locator("main")).to_contain_text(f"/runs/{run_id}/")
    expect(page.locator("main")).to_contain_text("@misc{kernelindex-" + run_id)
    arrived("cite")

    page.get_by_role("link", name=f"← back to run {run_id}").click()
    with page.expect_response(lambda r: r.url.endswith(f"/runs/{run_id}.json")) as answer:
        page.locator("footer").get_by_role("link", name="JSON", exact=True).click()
    bundle = answer.value.json()
    assert answer.value.status == 200
    assert answer.value.headers["etag"].startswith('"sha256:6fa4f85da9b80839c97c94c')
    assert bundle["run"]["spec"] == reference_bundle()["run"]["spec"]
    step += 1
    page.screenshot(path=str(ARTIFACTS / f"walk-{width}px-{step:02d}-json.png"))
    context.close()


def test_a_visitor_walks_from_home_to_the_json_without_javascript(browser, walk_site):
    walk(browser, walk_site, width=1280, javascript=False)


def test_the_same_walk_at_375_px_fits_the_screen_and_passes_the_accessibility_check(browser, walk_site):
    walk(browser, walk_site, width=375, javascript=True)


LIST_URLS = """
from runs.models import ComparisonGroup, Environment, Project, Run, Source
urls = [s.get_absolute_url() for s in Source.objects.all()]
urls += [Project.objects.order_by("name").first().get_absolute_url()]
urls += [e.get_absolute_url() for e in Environment.objects.all()[:3]]
urls += [g.get_absolute_url() + "?show=all" for g in ComparisonGroup.objects.order_by("-pk")[:3]]
urls += [r.get_absolute_url() for r in Run.objects.order_by("group__family", "pk").distinct()[:1]]
urls += [Run.objects.filter(group__family=f).first().get_absolute_url() for f in
         ("sol_execbench_trace", "kernelbench_timing", "sol_execbench_leaderboard")]
a = Run.objects.filter(group__family="sol_execbench_leaderboard", rank=1).first()
b = Run.objects.filter(group__family="sol_execbench_trace").first()
urls += [f"/runs/{a.public_id}/compare/{b.public_id}/", "/search/?q=nothing-matches-this", "/runs/0000beef/"]
print("\\n".join(urls))
"""


def test_every_other_page_fits_375_px_and_passes_the_accessibility_check(browser, walk_site, site_manage):
    urls = [line for line in site_manage("shell", "-c", LIST_URLS).stdout.split() if line.startswith("/")]
    assert len(urls) >= 10
    context = browser.new_context(viewport={"width": 375, "height": 900})
    page = context.new_page()
    for number, url in enumerate(urls, start=1):
        response = page.goto(walk_site + url)
        assert response.status in (200, 404), url
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 375, f"{url}: page is {width}px wide at 375px"
        assert page.evaluate(A11Y_CHECK) == [], url
        page.screenshot(path=str(ARTIFACTS / f"pages-375px-{number:02d}.png"), full_page=True)
    context.close()
