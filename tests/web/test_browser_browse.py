"""Finding your way in Debian's chromium with JavaScript off, at 1280 and 375 px:
home → Benchmarks (filter by GPU) → a KernelBench benchmark → its cross-GPU view → a run →
compare → download the CSV of the cross-GPU view; and GPUs → B200 → its best runs. Every page
must fit the screen (no horizontal page overflow) and pass the basic accessibility check.
Screenshots: test-artifacts/browse-<width>px-NN-<page>.png.
"""

from __future__ import annotations

import csv
import io

import pytest

from tests.web.conftest import ARTIFACTS
from tests.web.test_browser import A11Y_CHECK, browser  # noqa: F401 - the shared chromium fixture
from tests.web.test_charts_browser import axe_source

pytestmark = pytest.mark.browser

KB = "level1/19_ReLU"


@pytest.mark.parametrize("width", [1280, 375])
def test_a_visitor_finds_a_benchmark_across_gpus_and_a_gpus_best_runs(browser, site_url, width):  # noqa: F811
    from playwright.sync_api import expect

    ARTIFACTS.mkdir(exist_ok=True)
    context = browser.new_context(
        viewport={"width": width, "height": 900}, java_script_enabled=False, accept_downloads=True
    )
    page = context.new_page()
    step = 0
    visited: list[tuple[str, str]] = []

    def arrived(name: str) -> None:
        nonlocal step
        step += 1
        visited.append((name, page.url))
        page.screenshot(path=str(ARTIFACTS / f"browse-{width}px-{step:02d}-{name}.png"), full_page=True)
        page.screenshot(path=str(ARTIFACTS / f"browse-{width}px-{step:02d}-{name}-first-screen.png"))
        # JavaScript is off for the page; Playwright's own evaluation still measures it.
        scroll_width = page.evaluate("document.documentElement.scrollWidth")
        assert scroll_width <= width, f"{name}: page is {scroll_width}px wide at {width}px"
        assert page.evaluate(A11Y_CHECK) == [], name

    assert page.goto(site_url + "/").status == 200
    arrived("home")

    page.get_by_role("navigation", name="Site").get_by_role("link", name="Benchmarks").click()
    expect(page.locator("h1")).to_have_text("Benchmarks")
    arrived("benchmarks")

    page.locator("form.filters").get_by_label("GPU").select_option(label="NVIDIA H100 80GB HBM3")
    page.get_by_role("button", name="Apply").click()
    assert "gpu=h100-80gb-hbm3" in page.url
    expect(page.locator("table.index caption")).to_contain_text("Benchmarks (")
    arrived("benchmarks-h100")

    page.locator("form.filters").get_by_label("level or collection").select_option("level1")
    page.get_by_role("button", name="Apply").click()
    assert "collection=level1" in page.url and "gpu=h100-80gb-hbm3" in page.url
    page.get_by_role("link", name="ReLU", exact=True).click()
    expect(page.locator("h1")).to_contain_text("All results for")
    arrived("kernelbench-benchmark")

    page.get_by_role("link", name="Compare implementations across GPUs →").click()
    expect(page.locator("h1")).to_contain_text("across GPUs")
    expect(page.locator("main")).to_contain_text("Not one ranking.")
    expect(page.locator("table.matrix")).to_contain_text("eager PyTorch baseline")
    columns = page.locator("table.matrix thead th").count() - 1
    assert columns >= 1
    arrived("cross-gpu")
    matrix_url = page.url

    page.locator("table.matrix tbody td a").first.click()
    expect(page.locator("h1")).to_contain_text("Run ")
    expect(page.locator("main")).to_contain_text("in its comparison group")
    arrived("run")

    leader = page.get_by_role("link", name="Compare with #")
    if leader.count():
        leader.first.click()
    else:  # the only run of its group: the compare page says there is none to compare with
        page.goto(page.url + "compare/")
    expect(page.locator("h1")).to_contain_text("Compare run")
    arrived("compare")

    page.goto(matrix_url)
    with page.expect_download() as fetched:
        page.locator(".downloads").get_by_role("link", name="CSV").click()
    rows = list(csv.DictReader(io.StringIO(open(fetched.value.path(), encoding="utf-8").read())))
    assert fetched.value.suggested_filename == "cross-gpu.csv"
    assert len(rows) >= columns and {row["benchmark"] for row in rows} == {KB}
    assert "NVIDIA H100 80GB HBM3" in {row["gpu"] for row in rows}

    page.get_by_role("navigation", name="Site").get_by_role("link", name="GPUs").click()
    expect(page.locator("h1")).to_have_text("GPUs")
    arrived("gpus")

    page.get_by_role("link", name="NVIDIA B200").click()
    expect(page.locator("h1")).to_have_text("NVIDIA B200")
    expect(page.locator("#best")).to_have_text("Best runs per benchmark")
    expect(page.locator("table.runs")).to_contain_text("1 of 20")
    arrived("gpu-b200")

    page.locator("form.filters").get_by_label("source").select_option(label="NVIDIA SOL-ExecBench")
    page.get_by_role("button", name="Apply").click()
    assert "source=sol-execbench" in page.url
    arrived("gpu-b200-filtered")

    for url, name in (("/sources/", "sources"), ("/projects/", "projects"), ("/runs/?sort=-observed", "runs")):
        assert page.goto(site_url + url).status == 200
        arrived(name)
    context.close()

    # axe-core needs JavaScript: the same pages again, with it on, for the accessibility check.
    axe = axe_source()
    # The site's CSP forbids inline scripts; the test's own injection of axe bypasses it.
    checked = browser.new_context(viewport={"width": width, "height": 900}, bypass_csp=True)
    page = checked.new_page()
    problems = []
    for name, url in visited:
        page.goto(url)
        page.add_script_tag(content=axe)
        result = page.evaluate(
            "async () => (await axe.run(document)).violations.map(v => [v.id, v.impact, v.nodes.length])"
        )
        problems += [
            f"{name}: axe {impact} {rule} on {n} node(s)"
            for rule, impact, n in result
            if impact in ("serious", "critical")
        ]
    checked.close()
    assert problems == []
