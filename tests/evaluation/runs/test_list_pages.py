"""The long lists of the evaluation and golden-version pages (labeling.lists through
evaluation.runs.list_specs and golden_io.views): runs, targets, the side-by-side's query picker and the golden
versions are searched, filtered, sorted and paged, and every link keeps the state in the URL."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

import pytest
from django.contrib.auth.models import User
from django.test import Client

from evaluation.models import EvaluationRun, SearchTarget
from evaluation.runs import list_specs
from golden_io.models import GoldenVersion
from labeling.models import GoldenSet
from tests.support.evaluation import (
    Scene,
    logged_in,
)
from tests.support.runs import make_target, make_version

pytestmark = pytest.mark.django_db


def _links(html: str) -> list[str]:
    return [href.replace("&amp;", "&") for href in re.findall(r'<a href="(\?[^"]*)"', html)]


def _params(url: str) -> dict[str, list[str]]:
    return parse_qs(urlsplit(url).query)


def _run_ids(html: str) -> list[int]:
    return [int(n) for n in re.findall(r'<tr id="run-(\d+)"', html)]


@pytest.fixture
def many_runs(golden_set: GoldenSet, version: GoldenVersion, rita: User) -> list[EvaluationRun]:
    """30 finished runs on two targets: every third failed its gate, every fifth had overrides."""
    staging = make_target("http://127.0.0.1:9/search", golden_set, name="staging")
    canary = make_target("http://127.0.0.1:9/search", golden_set, name="canary")
    return [
        EvaluationRun.objects.create(
            golden_version=version,
            target=staging if i % 2 else canary,
            triggered_by=rita,
            status="succeeded",
            verdict="fail" if i % 3 == 0 else "pass",
            params={"rewrite": True} if i % 5 == 0 else {},
            errors=i,
        )
        for i in range(30)
    ]


def test_the_runs_list_filters_sorts_and_pages_keeping_the_filters_in_its_links(
    many_runs: list[EvaluationRun], rita: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(list_specs, "RUN_PAGE", 4)
    client = logged_in(rita)
    staging = SearchTarget.objects.get(name="staging")
    html = client.get(
        "/runs/", {"target": str(staging.pk), "verdict": "fail", "sort": "errors"}
    ).content.decode()
    wanted = sorted(
        (r for r in many_runs if r.target == staging and r.verdict == "fail"), key=lambda r: -r.errors
    )
    assert _run_ids(html) == [r.pk for r in wanted[:4]]
    assert f"1–4 of {len(wanted)} runs (of 30)" in html
    (next_page,) = {link for link in _links(html) if "rel" not in link and "page=2" in link}
    assert _params(next_page) == {
        "target": [str(staging.pk)],
        "verdict": ["fail"],
        "sort": ["errors"],
        "page": ["2"],
    }
    second = client.get("/runs/" + next_page.split("#")[0]).content.decode()
    assert _run_ids(second) == [r.pk for r in wanted[4:8]]
    assert f'<option value="{staging.pk}" selected>staging</option>' in second

    overridden = _run_ids(client.get("/runs/", {"overrides": "yes", "sort": "old"}).content.decode())
    assert overridden == [r.pk for r in many_runs if r.params][:4]
    searched = client.get("/runs/", {"q": "canary", "set": "help-center"}).content.decode()
    assert "15 runs" in searched.replace("1–4 of ", "")


def test_links_from_the_report_and_the_target_page_still_filter_the_runs_list(
    many_runs: list[EvaluationRun], rita: User
) -> None:
    staging = SearchTarget.objects.get(name="staging")
    html = logged_in(rita).get("/runs/", {"set": "help-center", "target": str(staging.pk)}).content.decode()
    assert "15 runs (of 30)" in html


def test_the_targets_list_searches_and_filters(golden_set: GoldenSet, rita: User) -> None:
    make_target("http://127.0.0.1:9/search", golden_set, name="staging", description="the staging cluster")
    make_target("http://127.0.0.1:9/solr/core", golden_set, name="solr-nightly", adapter="solr")
    client = logged_in(rita)
    html = client.get("/targets/", {"q": "cluster"}).content.decode()
    assert ">staging</a>" in html and ">solr-nightly</a>" not in html and "1 target (of 2)" in html
    html = client.get("/targets/", {"adapter": "solr"}).content.decode()
    assert ">staging</a>" not in html and ">solr-nightly</a>" in html
    assert '<option value="solr" selected>' in html


def test_the_side_by_side_picker_filters_by_change_and_keeps_both_runs(scene: Scene, rita: User) -> None:
    client = logged_in(rita)
    url = f"/runs/compare/?a={scene.baseline.pk}&b={scene.current.pk}"
    html = client.get(url + "&change=worse").content.decode()
    picked = re.findall(r"query=(q-\d+)", html)
    assert picked and "q-3" in picked and "q-2" not in picked
    form = html[html.index('id="choices"') :]
    form = form[form.index("<form") : form.index("</form>")]
    assert f'name="a" value="{scene.baseline.pk}"' in form and f'name="b" value="{scene.current.pk}"' in form
    html = client.get(url + "&q=query+3").content.decode()
    assert re.findall(r"query=(q-\d+)", html) == ["q-3"]


def test_the_golden_versions_list_searches_and_pages(golden_set: GoldenSet, rita: User) -> None:
    from tests.support.runs import golden_file

    for month in range(1, 10):
        make_version(golden_set, golden_file(version=f"2026-0{month}-01"))
    client = logged_in(rita)
    html = client.get(f"/sets/{golden_set.slug}/versions/", {"q": "2026-03"}).content.decode()
    assert re.findall(r'/versions/(2026-\d\d-01)/"', html) == ["2026-03-01"]
    html = client.get(f"/sets/{golden_set.slug}/versions/", {"sort": "name"}).content.decode()
    assert re.findall(r'/versions/(2026-\d\d-01)/"', html)[:2] == ["2026-01-01", "2026-02-01"]
    assert (
        client.get(f"/sets/{golden_set.slug}/versions/", {"exported": "yes"})
        .content.decode()
        .count("No version matches.")
        == 1
    )


def test_the_golden_set_lists_search(golden_set: GoldenSet, client: Client, rita: User) -> None:
    client.force_login(rita)
    for url in ("/sets/", "/versions/"):
        assert "help-center" in client.get(url, {"q": "help"}).content.decode()
        assert "No golden set matches." in client.get(url, {"q": "nothing-like-it"}).content.decode()
