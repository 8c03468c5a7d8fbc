"""Every figure opens onto its evidence (docs/sxs.md, docs/runs.md, docs/experiments.md: "Evidence"): a
study's query, a run's query against its baseline and an experiment configuration's query against the
baseline each open one page with the two lists side by side, each document's frozen label, the nDCG change
and the overlap; a study's adds its raters' answers, un-blinded. Links go both ways; only the set's
reviewers see any of it (404 for everyone else, raters included; anonymous users are sent to log in).

Scenes: tests/support/studies.py's two runs (A d1..d5, B d5..d1; labels d1 3, d2 2, d4 1, so d3 and d5 are
unjudged; B's nDCG 0.5 on odd queries, A's 0.6), tests/support/evaluation.py's scene (the baseline d1, d2,
d3 for every query, the current run d3, d9, d2 on q-1: Jaccard@10 0.5, RBO 0.54) and an experiment on the
loopback stub of tests/support/experiments.py.
"""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User
from django.test import Client

from evaluation.models import Experiment, ExperimentResult, StudyTask, SxsStudy
from evaluation.runs.services import baseline_promote, run_regate_rescored
from golden_io.models import GoldenVersion
from labeling.models import GoldenSet
from tests.evaluation.runs.test_services_rescore import relabeled
from tests.support.evaluation import Scene, html_text, logged_in, section_text
from tests.support.experiments import finished_experiment, tuned_answer
from tests.support.runs import RunFactory, golden_file, make_target, make_version
from tests.support.stub_server import StubServer
from tests.support.studies import one_query_answered

pytestmark = pytest.mark.django_db


def _labels(markup: str, side: str) -> list[tuple[str, str, str]]:
    """(rank, document, label) of one side's list as the page shows it."""
    start = markup.index(f'id="evidence-side-{side}"')
    end = markup.find("</table>", start)
    rows = re.findall(r'<tr data-doc="([^"]+)">(.*?)</tr>', markup[start:end], flags=re.S)
    found = []
    for doc, row in rows:
        cells = [html_text(c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row, flags=re.S)]
        found.append((cells[0], doc, cells[2]))
    return found


# --- a study's query ---------------------------------------------------------------------------------


@pytest.fixture
def study(golden_set: GoldenSet, rita: User, alice: User, bob: User) -> SxsStudy:
    return one_query_answered(golden_set, rita, alice, bob)


def test_the_study_results_link_each_query_to_its_evidence_and_back(study: SxsStudy, rita: User) -> None:
    client = logged_in(rita)
    markup = client.get(f"/studies/{study.pk}/").content.decode()
    url = f"/studies/{study.pk}/evidence/?query=q-1"
    assert markup.count(f'href="{url}"') == 2  # "Offline against people" and the overlap per query
    page = client.get(url)
    assert page.status_code == 200
    assert f'href="/studies/{study.pk}/#study-results"' in page.content.decode()
    assert f'href="/runs/{study.run_a_id}/"' in page.content.decode()
    assert f'href="/runs/{study.run_b_id}/"' in page.content.decode()


def test_a_study_query_shows_both_lists_with_their_labels_and_figures(study: SxsStudy, rita: User) -> None:
    page = logged_in(rita).get(f"/studies/{study.pk}/evidence/?query=q-1")
    markup = page.content.decode()
    assert _labels(markup, "a") == [
        ("1", "d1", "3"),
        ("2", "d2", "2"),
        ("3", "d3", "unjudged"),
        ("4", "d4", "1"),
        ("5", "d5", "unjudged"),
    ]
    assert [doc for _, doc, _ in _labels(markup, "b")] == ["d5", "d4", "d3", "d2", "d1"]
    lists = section_text(page, "evidence-lists")
    assert f"A (the baseline): {study.run_a.label}" in lists
    assert f"B (the candidate): {study.run_b.label}" in lists
    figures = section_text(page, "evidence-figures")
    assert "nDCG change −0.1000" in figures or "nDCG change -0.1000" in figures
    assert "Jaccard@5 1.0000 · RBO 0.7378" in figures and "p = 0.9" in figures


def test_a_study_query_shows_every_raters_answer_unblinded(study: SxsStudy, rita: User) -> None:
    page = logged_in(rita).get(f"/studies/{study.pk}/evidence/?query=q-1")
    markup = page.content.decode()
    tasks = {t.rater.username: t for t in StudyTask.objects.filter(item__query_id="q-1", study=study)}
    for name, shown, reasons in (("alice", 2, "something else (see the note)"), ("bob", -1, "relevance at")):
        task = tasks[name]
        row = re.search(rf'<tr data-rater="{name}">(.*?)</tr>', markup, flags=re.S)
        assert row is not None
        text = html_text(row.group(1))
        left, right = ("B", "A") if task.candidate_left else ("A", "B")
        assert f"{left} / {right}" in text
        for_b = -shown if task.candidate_left else shown
        assert f"{shown:+d}" in text and f"{for_b:+d}" in text
        assert reasons in text
    alice_row = html_text(re.search(r'<tr data-rater="alice">(.*?)</tr>', markup, flags=re.S).group(1))  # type: ignore[union-attr]
    assert "B hides the refund page" in alice_row
    junk = "B" if tasks["alice"].candidate_left else "A"  # alice flagged the left list
    assert re.search(rf"\b{junk}\b\s*</td><td class=\"note\">", markup) is not None
    # a query no rater answered yet says so
    unanswered = logged_in(rita).get(f"/studies/{study.pk}/evidence/?query=q-3")
    assert "not answered yet" in section_text(unanswered, "evidence-answers")


def test_an_identical_study_query_says_it_was_not_asked(study: SxsStudy, rita: User) -> None:
    page = logged_in(rita).get(f"/studies/{study.pk}/evidence/?query=q-2")
    assert "Identical : both lists hold the same top 5" in section_text(page, "evidence-figures")
    assert "Not asked: the two lists are identical in the top 5" in section_text(page, "evidence-answers")


def test_study_evidence_is_for_the_sets_reviewers_only(
    study: SxsStudy, alice: User, victor: User, charlie: User
) -> None:
    url = f"/studies/{study.pk}/evidence/?query=q-1"
    for user in (alice, victor, charlie):  # a rater of the study, a reviewer of another set, an outsider
        assert logged_in(user).get(url).status_code == 404, user.username
    anonymous = Client().get(url)
    assert anonymous.status_code == 302 and anonymous["Location"].startswith("/accounts/login/")


def test_a_study_query_that_is_not_there_is_a_worded_404(study: SxsStudy, rita: User) -> None:
    client = logged_in(rita)
    for query in ("?query=q-99", "", "?query="):
        response = client.get(f"/studies/{study.pk}/evidence/{query}")
        assert response.status_code == 404, query
    assert client.get(f"/studies/{study.pk}/evidence/?query=%00").status_code == 400  # refused, never a 500


# --- a run's query against its baseline ----------------------------------------------------------------


def test_a_runs_query_rows_link_to_its_evidence_against_the_baseline(scene: Scene, rita: User) -> None:
    client = logged_in(rita)
    markup = client.get(f"/runs/{scene.current.pk}/").content.decode()
    url = f"/runs/{scene.current.pk}/evidence/?query=q-1"
    assert f'href="{url}"' in markup
    page = client.get(url)
    text = page.content.decode()
    # Back to the report's list of every query, open on this query's row alone.
    back = f"/runs/{scene.current.pk}/?pq-q=q-1#per-query"
    assert f'href="{back}"' in text
    assert f'href="/runs/{scene.baseline.pk}/"' in text
    report = client.get(back).content.decode()
    assert re.search(r'<section class="card" id="per-query">\s*<details open>', report)
    assert re.findall(r'<tr data-query="([^"]+)"', report) == ["q-1"]
    assert _labels(text, "a") == [("1", "d1", "3"), ("2", "d2", "2"), ("3", "d3", "unjudged")]
    assert _labels(text, "b") == [("1", "d3", "unjudged"), ("2", "d9", "unjudged"), ("3", "d2", "2")]
    lists = section_text(page, "evidence-lists")
    assert (
        f"A (the baseline): {scene.baseline.label}" in lists
        and f"B (this run): {scene.current.label}" in lists
    )
    figures = section_text(page, "evidence-figures")
    assert "Jaccard@10 0.5000 · RBO 0.5400" in figures
    before = next(r["ndcg"] for r in scene.baseline.report["per_query"] if r["id"] == "q-1")
    after = next(r["ndcg"] for r in scene.current.report["per_query"] if r["id"] == "q-1")
    assert after < before and f"{after - before:.4f}".lstrip("-") in figures


def test_a_runs_errored_query_shows_why_it_has_no_list(scene: Scene, rita: User) -> None:
    page = logged_in(rita).get(f"/runs/{scene.current.pk}/evidence/?query=q-5")
    assert page.status_code == 200
    assert "No list:" in section_text(page, "evidence-lists")
    assert "undefined: a search failed" in section_text(page, "evidence-figures")


def test_a_run_without_a_baseline_has_no_evidence_page_and_no_links(scene: Scene, rita: User) -> None:
    client = logged_in(rita)
    assert (
        f"/runs/{scene.baseline.pk}/evidence/"
        not in client.get(f"/runs/{scene.baseline.pk}/").content.decode()
    )
    assert client.get(f"/runs/{scene.baseline.pk}/evidence/?query=q-1").status_code == 404


def test_run_evidence_is_for_the_sets_reviewers_only(
    scene: Scene, alice: User, victor: User, charlie: User, rita: User
) -> None:
    url = f"/runs/{scene.current.pk}/evidence/?query=q-1"
    for user in (alice, victor, charlie):
        assert logged_in(user).get(url).status_code == 404, user.username
    anonymous = Client().get(url)
    assert anonymous.status_code == 302 and anonymous["Location"].startswith("/accounts/login/")
    assert logged_in(rita).get(f"/runs/{scene.current.pk}/evidence/?query=nope").status_code == 404


# --- an experiment's configuration against the baseline ---------------------------------------------------


@pytest.fixture
def experiment(stub: StubServer, golden_set: GoldenSet, rita: User) -> Experiment:
    stub.default = tuned_answer
    version: GoldenVersion = make_version(golden_set, golden_file(12))
    target = make_target(f"{stub.url}/search", golden_set)
    return finished_experiment(version, target, rita, grid={"params": {"w": [1, 3]}}, top=2)


def _slot_of(experiment: Experiment, w: int) -> int:
    assert experiment.result is not None
    return next(i for i, c in enumerate(experiment.result["configs"], start=1) if c["grid"] == {"w": w})


def test_each_configuration_opens_its_queries_against_the_baseline(
    experiment: Experiment, rita: User
) -> None:
    client = logged_in(rita)
    slot = _slot_of(experiment, 3)
    queries_url = f"/experiments/{experiment.pk}/configs/{slot}/"
    assert f'href="{queries_url}"' in client.get(f"/experiments/{experiment.pk}/").content.decode()
    page = client.get(queries_url)
    markup = page.content.decode()
    assert f'href="/experiments/{experiment.pk}/#configurations"' in markup
    searched = set(
        ExperimentResult.objects.filter(experiment=experiment, slot=slot).values_list("query_id", flat=True)
    )
    shown = re.findall(r'<tr data-query="([^"]+)">', markup)
    assert set(shown) == searched and len(shown) == len(searched) > 0
    # w=3 answers d1, d2, d4 (the ideal), the baseline d3, d2, d1: every query gains, nothing identical
    row = html_text(re.search(r'<tr data-query="q-1">(.*?)</tr>', markup, flags=re.S).group(1))  # type: ignore[union-attr]
    assert "+" in row and "identical" not in row
    assert f'href="/experiments/{experiment.pk}/configs/{slot}/evidence/?query=q-1"' in markup
    # searched, filtered and sorted as the compare page's picker
    found = client.get(f"{queries_url}?q=query 1&sort=overlap").content.decode()
    assert re.findall(r'<tr data-query="([^"]+)">', found) == ["q-1", "q-10", "q-11", "q-12"]


def test_an_experiment_query_shows_the_configurations_list_beside_the_baselines(
    experiment: Experiment, rita: User
) -> None:
    slot = _slot_of(experiment, 3)
    page = logged_in(rita).get(f"/experiments/{experiment.pk}/configs/{slot}/evidence/?query=q-1")
    markup = page.content.decode()
    assert f'href="/experiments/{experiment.pk}/configs/{slot}/"' in markup
    assert _labels(markup, "a") == [("1", "d3", "unjudged"), ("2", "d2", "2"), ("3", "d1", "3")]
    assert _labels(markup, "b") == [("1", "d1", "3"), ("2", "d2", "2"), ("3", "d4", "1")]
    lists = section_text(page, "evidence-lists")
    assert f"B (configuration {slot}): configuration {slot} (w=3)" in lists
    figures = section_text(page, "evidence-figures")
    assert "Jaccard@10 0.5000" in figures  # {d1, d2} of {d1, d2, d3, d4}
    assert re.search(r"nDCG change \+0\.\d{4}", figures) is not None
    # w=1 returns the baseline's lists: the page says identical
    same = logged_in(rita).get(
        f"/experiments/{experiment.pk}/configs/{_slot_of(experiment, 1)}/evidence/?query=q-1"
    )
    assert "Identical" in section_text(same, "evidence-figures")


def test_experiment_evidence_is_for_the_sets_reviewers_only(
    experiment: Experiment, alice: User, victor: User, charlie: User, rita: User
) -> None:
    urls = [
        f"/experiments/{experiment.pk}/configs/1/",
        f"/experiments/{experiment.pk}/configs/1/evidence/?query=q-1",
    ]
    for url in urls:
        for user in (alice, victor, charlie):
            assert logged_in(user).get(url).status_code == 404, (url, user.username)
        anonymous = Client().get(url)
        assert anonymous.status_code == 302 and anonymous["Location"].startswith("/accounts/login/")
    client = logged_in(rita)
    for bad in ("configs/0/", "configs/99/", "configs/1/evidence/?query=nope", "configs/1/evidence/"):
        assert client.get(f"/experiments/{experiment.pk}/{bad}").status_code == 404, bad


def test_a_baseline_rescored_by_the_gate_shows_the_labels_it_was_rescored_on(
    finished: RunFactory, rita: User, golden_set: GoldenSet
) -> None:
    """The gate re-scored the baseline (version 2026-08-01) on the run's version (q-1: d1 1, d2 retired, d3
    3): both lists show the run's version's labels, as the gate compared them; before the re-score the
    baseline shows its own."""
    baseline_promote(run=finished(), by=rita, rationale="the launch floor")
    run = finished(golden_version=make_version(golden_set, relabeled()))
    client = logged_in(rita)
    own = client.get(f"/runs/{run.pk}/evidence/?query=q-1").content.decode()
    assert _labels(own, "a") == [("1", "d1", "3"), ("2", "d2", "2"), ("3", "d3", "unjudged")]
    run_regate_rescored(run=run, by=rita)
    rescored = client.get(f"/runs/{run.pk}/evidence/?query=q-1").content.decode()
    assert _labels(rescored, "a") == [("1", "d1", "1"), ("2", "d2", "unjudged"), ("3", "d3", "3")]
    assert _labels(rescored, "b") == _labels(rescored, "a")  # the stub answered d1, d2, d3 both times
