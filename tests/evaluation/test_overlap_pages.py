"""Overlap beside the comparisons of two runs (docs/metrics.md, "Overlap"; docs/runs.md): the compare page
(the mean over the queries with its interval, each query's figures, a query's own line) and the run's
report against its baseline, and the study page (the lists raters saw; never the raters' own page), with the
formula and p stated and a link to the docs' section.

The scene (tests/support/evaluation.py): the baseline returned d1, d2, d3 for every query; the current run
returned d3, d9, d2 for q-1 (Jaccard@10 2/4 = 0.5; RBO, eq. 32 with agreements 0, 0, 2/3 at p = 0.9:
0.1/0.9 * 0.729 * 2/3 + 2/3 * 0.729 = 0.54), d1, d2, d3 for q-2, q-4 and q-6 (identical), d9, d8, d7 for q-3
(nothing shared: 0, 0), and errored on q-5 (no list: left out). Means over 5 queries: Jaccard 0.7, RBO
0.708."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User

from evaluation.studies.services import StudySpec, study_create
from labeling.models import GoldenSet
from tests.support.evaluation import Scene, html_text, logged_in, page_text, section_text
from tests.support.studies import two_runs

pytestmark = pytest.mark.django_db


def _row(markup: str, query: str) -> str:
    found = re.search(rf'<tr data-query="{query}">(.*?)</tr>', markup, flags=re.S)
    assert found is not None, query
    return found.group(1)


def _says_the_scenes_means(text: str, against: str) -> None:
    assert f"Overlap with {against} over 5 queries both runs answered: Jaccard@10 0.7000 [" in text
    assert "RBO 0.7080 [" in text and "3 identical" in text and "p = 0.9" in text


def test_the_compare_page_shows_the_mean_overlap_with_its_interval_and_the_formula(
    scene: Scene, rita: User
) -> None:
    page = logged_in(rita).get(f"/runs/compare/?a={scene.baseline.pk}&b={scene.current.pk}")
    text = section_text(page, "choices")
    _says_the_scenes_means(text, "run A")
    assert "Jaccard@10 and RBO (extrapolated, eq. 32 of Webber et al. 2010, p = 0.9)" in text
    assert "p = 0.9 putting 86% of its weight on the first 10 places" in text
    assert 'href="/docs/metrics/#overlap"' in page.content.decode()
    low, high = re.search(r"RBO 0\.7080 \[(\d\.\d{4}), (\d\.\d{4})\]", text).groups()  # type: ignore[union-attr]
    assert 0.0 <= float(low) <= 0.708 <= float(high) <= 1.0


def _cells(row: str) -> dict[str, str]:
    """A row's overlap cells: name -> its text, and the reason shown on hover where it has one."""
    found = {}
    for name, body in re.findall(r'data-overlap="(\w+)">(.*?)</td>', row, flags=re.S):
        why = re.search(r'title="([^"]*)"', body)
        found[name] = html_text(body).strip() + (f" ({why.group(1)})" if why else "")
    return found


def test_each_query_of_the_picker_shows_its_overlap_and_says_identical(scene: Scene, rita: User) -> None:
    markup = (
        logged_in(rita).get(f"/runs/compare/?a={scene.baseline.pk}&b={scene.current.pk}").content.decode()
    )
    assert _cells(_row(markup, "q-1")) == {"jaccard": "0.5000", "rbo": "0.5400"}
    assert _cells(_row(markup, "q-2")) == {"identical": "identical"}
    assert _cells(_row(markup, "q-3")) == {"jaccard": "0.0000", "rbo": "0.0000"}
    why = "— (no list on one side (an error, or not in both))"
    assert _cells(_row(markup, "q-5")) == {"jaccard": why, "rbo": why}


def test_the_picker_sorts_by_least_overlap(scene: Scene, rita: User) -> None:
    markup = (
        logged_in(rita)
        .get(f"/runs/compare/?a={scene.baseline.pk}&b={scene.current.pk}&sort=overlap")
        .content.decode()
    )
    order = re.findall(r'<tr data-query="([^"]+)">', markup)
    assert order[:2] == ["q-3", "q-1"] and order[-1] == "q-5"  # no overlap (errored) last


def test_one_querys_page_says_its_overlap_or_that_the_lists_are_identical(scene: Scene, rita: User) -> None:
    client = logged_in(rita)
    moved = client.get(f"/runs/compare/?a={scene.baseline.pk}&b={scene.current.pk}&query=q-1")
    line = section_text(moved, "query-overlap")
    assert "Overlap: Jaccard@10 0.5000 · RBO 0.5400" in line and "p = 0.9" in line
    same = client.get(f"/runs/compare/?a={scene.baseline.pk}&b={scene.current.pk}&query=q-2")
    assert "Identical : both runs returned the same top 10 in the same order" in section_text(
        same, "query-overlap"
    )
    errored = client.get(f"/runs/compare/?a={scene.baseline.pk}&b={scene.current.pk}&query=q-5")
    assert "Overlap: Jaccard@10 — · RBO —" in section_text(errored, "query-overlap")


def test_the_run_report_shows_its_overlap_with_the_baseline_and_links_each_querys(
    scene: Scene, rita: User
) -> None:
    page = logged_in(rita).get(f"/runs/{scene.current.pk}/")
    _says_the_scenes_means(section_text(page, "baseline-overlap"), "the baseline")
    link = f'href="/runs/compare/?a={scene.baseline.pk}&amp;b={scene.current.pk}&amp;sort=overlap#choices"'
    assert link in page.content.decode()
    # the figures are the gate's, as stored with the run
    assert scene.current.gate is not None and scene.current.gate["overlap"]["rbo"]["mean"] == pytest.approx(
        0.708
    )


def test_a_gate_stored_before_overlap_is_shown_from_the_two_reports(scene: Scene, rita: User) -> None:
    gate = dict(scene.current.gate or {})
    del gate["overlap"]
    type(scene.current).objects.filter(pk=scene.current.pk).update(gate=gate)
    text = section_text(logged_in(rita).get(f"/runs/{scene.current.pk}/"), "baseline-overlap")
    assert "Jaccard@10 0.7000 [" in text and "RBO 0.7080 [" in text


def test_a_run_without_a_baseline_shows_no_overlap(scene: Scene, rita: User) -> None:
    page = logged_in(rita).get(f"/runs/{scene.baseline.pk}/")
    assert 'id="baseline-overlap"' not in page.content.decode()
    assert "Overlap with" not in page_text(page)


# --- side-by-side studies ------------------------------------------------------------------------------
# two_runs (tests/support/studies.py): run A answers d1..d5 for every query, run B d5..d1, but q-2 as A.
# A study shows the top 5: every query's two lists hold the same five documents (Jaccard@5 1), reversed but
# for q-2 (identical). RBO of a reversed five, eq. 32 with agreements 0, 0, 1/3, 3/4, 1 at p = 0.9:
# 0.1/0.9 * (0.729/3 + 0.6561 * 3/4 + 0.59049) + 0.59049 = 0.737775; the mean over 6: 0.781479.


def test_the_study_page_shows_the_overlap_of_the_lists_raters_saw(
    golden_set: GoldenSet, rita: User, alice: User
) -> None:
    run_a, run_b = two_runs(golden_set, 6, same=("q-2",))
    study = study_create(
        spec=StudySpec(run_a=run_a, run_b=run_b, raters=[alice], seed=3, answers_per_query=1), by=rita
    )
    page = logged_in(rita).get(f"/studies/{study.pk}/")
    text = section_text(page, "study-overlap")
    assert (
        "Overlap with run A (the baseline) over 6 queries chosen, on the top results the raters saw" in text
    )
    assert "Jaccard@5 1.0000 [1.0000, 1.0000] · RBO 0.7815 [" in text and "1 identical" in text
    assert "p = 0.9" in text and 'href="/docs/metrics/#overlap"' in page.content.decode()
    markup = page.content.decode()
    assert _cells(_row(markup, "q-1")) == {"jaccard": "1.0000", "rbo": "0.7378"}
    assert _cells(_row(markup, "q-2")) == {"identical": "identical"}  # not asked, counted apart
    # raters never see it: their page names no figure
    task = study.tasks.first()
    assert task is not None
    rater_page = page_text(logged_in(alice).get(f"/sxs/{task.token}/"))
    assert "Jaccard" not in rater_page and "RBO" not in rater_page and "overlap" not in rater_page.lower()
