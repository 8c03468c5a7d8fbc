"""Run pages: who gets a 404, the run list and its polled rows, the progress fragment, the trigger form,
the report (verdict and what tripped it, metrics against the baseline with intervals, slices, tiers, top
losers, errors, near-duplicates, unjudged documents and their queueing, durable keys), promotion,
cancel, the side-by-side view and the report download."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from evaluation.models import Baseline, EvaluationRun, SearchTarget
from evaluation.runs.services import run_create
from golden_io.models import GoldenVersion
from labeling.models import Candidate, GoldenSet
from tests import factories
from tests.support.evaluation import (
    Scene,
    logged_in,
    messages_text,
    page_text,
    section_text,
)
from tests.support.runs import RunFactory, eager_celery
from tests.support.stub_server import StubServer, hits_reply

pytestmark = pytest.mark.django_db


def _run_pages(scene: Scene) -> list[str]:
    run = scene.current.pk
    return [
        "/runs/",
        "/runs/new/",
        f"/runs/{run}/",
        f"/runs/{run}/row/",
        f"/runs/{run}/progress/",
        f"/runs/{run}/report.json",
        f"/runs/compare/?a={scene.baseline.pk}&b={run}",
        f"/runs/compare/?a={scene.baseline.pk}&b={run}&query=q-1",
        "/targets/",
        f"/targets/{scene.target.pk}/",
        f"/targets/{scene.target.pk}/edit/",
        f"/targets/{scene.target.pk}/trend/",
        "/sets/help-center/budgets/",
        "/sets/help-center/baselines/",
        "/tokens/",
    ]


@pytest.mark.parametrize("who", ["alice", "charlie", "victor"])
def test_raters_outsiders_and_other_sets_reviewers_get_404_everywhere(
    who: str, scene: Scene, alice: User, charlie: User, victor: User, other_set: GoldenSet
) -> None:
    client = logged_in({"alice": alice, "charlie": charlie, "victor": victor}[who])
    pages = _run_pages(scene)
    if who == "victor":  # a reviewer has the list pages, empty of this set's things, and a tokens page
        pages = [p for p in pages if p not in ("/runs/", "/runs/new/", "/targets/", "/tokens/")]
    for path in pages:
        assert client.get(path).status_code == 404, path
    posts = [f"/runs/{scene.current.pk}/{action}/" for action in ("cancel", "promote", "unjudged")]
    for path in posts:
        assert client.post(path, {"rationale": "x"}).status_code == 404, path
    assert not Baseline.objects.filter(run=scene.current).exists()


def test_a_reviewer_of_another_set_sees_none_of_this_sets_runs_or_targets(
    scene: Scene, victor: User, other_set: GoldenSet
) -> None:
    client = logged_in(victor)
    assert f"run {scene.current.pk} " not in page_text(client.get("/runs/"))
    assert scene.target.name not in page_text(client.get("/targets/"))


def test_every_page_answers_the_sets_reviewer_and_an_admin(scene: Scene, rita: User, ada: User) -> None:
    for user in (rita, ada):
        client = logged_in(user)
        for path in _run_pages(scene):
            assert client.get(path).status_code == 200, (user.username, path)


def test_having_started_a_run_opens_nothing_to_who_does_not_review_its_set(
    finished: Any, charlie: User, victor: User, version: GoldenVersion
) -> None:
    # A run's ranks and grades are its set's (evaluation.runs.access): who started it sees it only while they
    # review the set.
    for user in (charlie, victor):
        run = finished(triggered_by=user)
        client = logged_in(user)
        assert client.get(f"/runs/{run.pk}/").status_code == 404
        assert client.get(f"/runs/{run.pk}/report.json").status_code == 404
    assert logged_in(charlie).get("/runs/").status_code == 404  # no role, no list
    assert f"run {run.pk} " not in page_text(logged_in(victor).get("/runs/"))


# --- list and progress ----------------------------------------------------------------------------


def test_the_list_shows_each_run_and_polls_only_the_active_ones(
    scene: Scene, version: GoldenVersion, target: SearchTarget, rita: User
) -> None:
    queued = run_create(golden_version=version, target=target, triggered_by=rita)
    page = logged_in(rita).get("/runs/")
    html = page.content.decode()

    row = re.search(rf'<tr id="run-{queued.pk}"[^>]*>', html)
    assert row is not None and f'hx-get="/runs/{queued.pk}/row/"' in row.group(0)
    done_row = re.search(rf'<tr id="run-{scene.current.pk}"[^>]*>', html)
    assert done_row is not None and "hx-get" not in done_row.group(0)
    text = page_text(page)
    assert "help-center@2026-08-01" in text and "rewrite=true" in text
    # Each run named by its label: the target and what it sent beyond the defaults (docs/runs.md).
    assert re.search(rf"run {scene.current.pk} staging \(rewrite=true\) .*? succeeded .*? 6/6 1 fail", text)


def test_the_list_filters_by_status(
    scene: Scene, version: GoldenVersion, target: SearchTarget, rita: User
) -> None:
    queued = run_create(golden_version=version, target=target, triggered_by=rita)
    text = page_text(logged_in(rita).get("/runs/?status=queued"))
    assert f"run {queued.pk} staging " in text and f"run {scene.current.pk} " not in text


def test_a_polled_row_shows_fresh_progress(version: GoldenVersion, target: SearchTarget, rita: User) -> None:
    run = run_create(golden_version=version, target=target, triggered_by=rita)
    EvaluationRun.objects.filter(pk=run.pk).update(status="running", total=6, done=4, errors=1)
    row = logged_in(rita).get(f"/runs/{run.pk}/row/").content.decode()
    assert '<progress max="6" value="4">' in row and 'data-status="running"' in row
    assert 'hx-trigger="every 200ms"' in row  # a young run: see the next test


def test_a_young_run_is_polled_five_times_a_second_and_an_older_one_once(
    version: GoldenVersion, target: SearchTarget, rita: User
) -> None:
    run = run_create(golden_version=version, target=target, triggered_by=rita)
    client = logged_in(rita)
    # The run's page, its progress fragment, its row of the run list and the list itself.
    urls = (f"/runs/{run.pk}/", f"/runs/{run.pk}/progress/", f"/runs/{run.pk}/row/", "/runs/")
    for url in urls:
        assert 'hx-trigger="every 200ms"' in client.get(url).content.decode(), url
    EvaluationRun.objects.filter(pk=run.pk).update(
        status="running", created=timezone.now() - timedelta(minutes=1)
    )
    for url in urls:
        text = client.get(url).content.decode()
        assert 'hx-trigger="every 1000ms"' in text and "200ms" not in text, url


def test_the_progress_fragment_reloads_the_page_once_the_run_is_final(
    version: GoldenVersion, target: SearchTarget, rita: User
) -> None:
    run = run_create(golden_version=version, target=target, triggered_by=rita)
    client = logged_in(rita)
    polling = client.get(f"/runs/{run.pk}/progress/", HTTP_HX_REQUEST="true")
    assert "HX-Refresh" not in polling and 'hx-trigger="every 200ms"' in polling.content.decode()
    EvaluationRun.objects.filter(pk=run.pk).update(status="succeeded", total=6, done=6, verdict="pass")
    final = client.get(f"/runs/{run.pk}/progress/", HTTP_HX_REQUEST="true")
    assert final["HX-Refresh"] == "true"
    assert "hx-trigger" not in final.content.decode() and "verdict pass" in page_text(final)


# --- trigger form -----------------------------------------------------------------------------------


def test_the_form_starts_a_run_with_param_overrides(
    version: GoldenVersion, target: SearchTarget, rita: User, django_capture_on_commit_callbacks: Any
) -> None:
    client = logged_in(rita)
    form = client.get("/runs/new/").content.decode()
    assert re.search(rf'<option value="{version.pk}" selected>help-center@2026-08-01</option>', form)
    with eager_celery(), django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            "/runs/new/",
            {
                "golden_version": version.pk,
                "target": target.pk,
                "params": 'rewrite=true\nmode="fast"\ndepth=3',
            },
        )
    run = EvaluationRun.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/runs/{run.pk}/"
    assert run.params == {"rewrite": True, "mode": "fast", "depth": 3}
    assert (run.trigger, run.triggered_by, run.status) == ("web", rita, "succeeded")


@pytest.mark.parametrize(
    ("params", "says"),
    [
        ("rewrite", "params line 1: expected KEY=VALUE, got 'rewrite'"),
        ("a=1\na=2", "params line 2: a is given twice"),
        ('{"rewrite": tru}', "params: invalid JSON at line 1 column 13"),
        ("[1, 2]", "params line 1: expected KEY=VALUE"),
        # A RecursionError and a ValueError (Python's digit limit) before: each a 500.
        ("rewrite=true\nk=" + "[" * 100_000, "params line 2: k: nested deeper than 64 levels"),
        ("k=" + "1" * 5000, "params line 1: k: a number is too long to read"),
        ('{"k": ' + "[" * 100_000, "params: nested deeper than 64 levels"),
        ('{"k": ' + "1" * 5000 + "}", "params: a number is too long to read"),
    ],
)
def test_the_form_names_bad_params_by_line(
    params: str, says: str, version: GoldenVersion, target: SearchTarget, rita: User
) -> None:
    response = logged_in(rita).post(
        "/runs/new/", {"golden_version": version.pk, "target": target.pk, "params": params}
    )
    assert response.status_code == 422
    assert says in page_text(response)
    assert not EvaluationRun.objects.exists()


def test_the_form_shows_the_services_refusal(version: GoldenVersion, rita: User, stub: Any) -> None:
    from evaluation.runs.services import target_create

    unlisted = target_create(name="unlisted", url=f"{stub.url}/search", owner=rita)
    response = logged_in(rita).post("/runs/new/", {"golden_version": version.pk, "target": unlisted.pk})
    assert response.status_code == 422
    assert "target unlisted is not set up for golden set help-center" in page_text(response)


# --- the report -------------------------------------------------------------------------------------


def test_the_report_shows_the_verdict_and_exactly_what_tripped_it(scene: Scene, rita: User) -> None:
    page = logged_in(rita).get(f"/runs/{scene.current.pk}/")
    verdict = section_text(page, "verdict-card")
    assert "fail" in verdict.split("Gated", 1)[0]
    assert f"Gated against the baseline: run {scene.baseline.pk} staging with" in verdict
    failures = re.findall(r'<li data-scope="([^"]*)" data-metric="([^"]*)">', page.content.decode())
    assert ("all", "error_rate") in failures and ("core", "ndcg") in failures
    assert (
        "errors · all: current error rate 0.1667 over all 6 queries" in verdict and "failed: q-5" in verdict
    )


def test_the_report_puts_each_core_metric_against_the_baseline_with_its_interval(
    scene: Scene, rita: User
) -> None:
    page = logged_in(rita).get(f"/runs/{scene.current.pk}/")
    rows = {
        m: re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", row)).split()
        for m, row in re.findall(
            r'<tr data-metric="(\w+)"[^>]*>(.*?)</tr>', page.content.decode(), flags=re.S
        )
    }
    assert scene.current.report is not None and scene.current.gate is not None
    own = scene.current.report["tiers"]["core"]
    # This run's own mean and traffic-weighted mean, then the gate's change over the pairs both runs
    # counted: n, baseline -> current over those pairs, the change, its interval, the p-value.
    paired = scene.current.gate["comparison"]["core"]["ndcg"]
    ndcg = rows["ndcg"]
    assert ndcg[1:8] == [
        f"{own['ndcg']['value']:.4f}",
        f"{own['weighted']['ndcg']['value']:.4f}",
        str(paired["n"]),
        f"{paired['baseline']:.4f}",
        "→",
        f"{paired['current']:.4f}",
        f"{paired['delta']:+.4f}",
    ]
    assert paired["current"] - paired["baseline"] == pytest.approx(paired["delta"])
    assert re.fullmatch(r"\[-\d\.\d{4},", ndcg[8]) and ndcg[-1] == "fail"
    assert ndcg[10] == f"{paired['p_value']:.3f}"
    # A metric without a weighted twin says so, and nothing on the page reads NaN.
    judged = scene.current.gate["comparison"]["core"]["judged_at_k"]
    assert rows["judged_at_k"][:4] == [
        "judged@k",
        f"{own['judged_at_k']['value']:.4f}",
        "—",
        str(judged["n"]),
    ]
    assert rows["judged_at_k"][-4:] == ["not", "gated", "not", "gated"]  # no budget, no status
    assert "nan" not in page_text(page).lower().split()


def test_the_report_slices_by_stratum_locale_and_filters_and_marks_the_tripped_stratum(
    scene: Scene, rita: User
) -> None:
    from evaluation.runs.services import budgets_set

    budgets_set(golden_set=scene.golden_set, data={"strata": {"billing": {}, "docs": {}}}, by=rita)
    rerun = Client()
    rerun.force_login(rita)
    # The scene's run was gated with the defaults (no strata); show a run gated with strata budgets.
    from evaluation.runs.services import run_finalize_process

    EvaluationRun.objects.filter(pk=scene.current.pk).update(status="running")
    run_finalize_process(run_id=scene.current.pk)
    page = rerun.get(f"/runs/{scene.current.pk}/")
    html = page.content.decode()
    assert re.search(r'<tr data-slice="billing" class="tripped">', html)
    assert '<tr data-slice="docs">' in html
    slices = section_text(page, "slices")
    assert (
        "Locale" in slices and "en-US" in slices and "with filters" in slices and "without filters" in slices
    )
    tiers = section_text(page, "tiers")
    assert "core 6" in tiers


def test_the_report_lists_top_losers_with_rank_changes_and_side_by_side_links(
    scene: Scene, rita: User
) -> None:
    page = logged_in(rita).get(f"/runs/{scene.current.pk}/")
    losers = section_text(page, "top-losers")
    assert losers.index("q-3") < losers.index("q-1")
    assert "d1 grade 3 1 → — out of top k" in losers
    assert "d2 grade 2 2 → 3 down 1" in losers
    assert (
        f'href="/runs/compare/?a={scene.baseline.pk}&amp;b={scene.current.pk}&amp;query=q-3"'
        in page.content.decode()
    )


def test_the_report_lists_errors_near_duplicates_unjudged_documents_and_keys(
    scene: Scene, rita: User
) -> None:
    page = logged_in(rita).get(f"/runs/{scene.current.pk}/")
    errors = section_text(page, "errors")
    assert "Errors (1)" in errors and "q-5" in errors and "HTTP 500" in errors
    duplicates = section_text(page, "duplicates")
    assert "q-2" in duplicates and "1: Refund policy for annual plans" in duplicates
    unjudged = section_text(page, "unjudged")
    assert "q-1 query 1" in unjudged and "d3 (1), d9 (2)" in unjudged
    assert 'id="queue-unjudged"' in page.content.decode()
    assert "Every judged document's key resolved" in section_text(page, "unresolved")


def test_a_report_from_before_it_held_near_duplicates_still_lists_them(scene: Scene, rita: User) -> None:
    """The page reads the near-duplicate titles the report found at finalize; a report written before it
    held them has them found again from the run's result rows, the same rows."""
    run = scene.current
    held = logged_in(rita).get(f"/runs/{run.pk}/")
    report = dict(run.report or {})
    assert report.pop("near_duplicates")
    EvaluationRun.objects.filter(pk=run.pk).update(report=report)
    older = logged_in(rita).get(f"/runs/{run.pk}/")
    assert section_text(older, "duplicates") == section_text(held, "duplicates")
    assert "1: Refund policy for annual plans" in section_text(older, "duplicates")


def test_the_report_page_reads_in_a_bounded_number_of_statements(scene: Scene, rita: User) -> None:
    """Nothing on the page reads per query or per document: the statements stay few as the set grows
    (the demo's report page: 18)."""
    client = logged_in(rita)
    client.get(f"/runs/{scene.current.pk}/")
    with CaptureQueriesContext(connection) as statements:
        assert client.get(f"/runs/{scene.current.pk}/").status_code == 200
    assert len(statements) <= 22, [q["sql"][:100] for q in statements.captured_queries]


def test_queueing_unjudged_documents_adds_them_to_the_pools(scene: Scene, rita: User) -> None:
    query = factories.QueryFactory.create(golden_set=scene.golden_set, external_id="q-1", text="query 1")
    d3 = factories.DocumentFactory.create(golden_set=scene.golden_set, doc_id="d3")
    response = logged_in(rita).post(f"/runs/{scene.current.pk}/unjudged/", follow=True)
    text = "\n".join(messages_text(response))
    assert Candidate.objects.filter(query=query, document=d3).exists()
    assert (
        "Queued 1 document for rating, new to the pools of q-1; no finished assignment had to be reopened"
        in text
    )
    assert "1 document added now has no rater: nobody is assigned q-1; assign raters on the set page" in text
    assert "Not in the set's documents (import them first): q-1/d9" in text


def test_who_started_a_run_without_reviewing_its_set_cannot_queue(scene: Scene, charlie: User) -> None:
    run = scene.current
    EvaluationRun.objects.filter(pk=run.pk).update(triggered_by=charlie)
    factories.QueryFactory.create(golden_set=scene.golden_set, external_id="q-1", text="query 1")
    factories.DocumentFactory.create(golden_set=scene.golden_set, doc_id="d3")
    before = Candidate.objects.count()
    response = logged_in(charlie).post(f"/runs/{run.pk}/unjudged/")
    assert response.status_code == 404
    assert Candidate.objects.count() == before


def test_promotion_needs_a_rationale_and_records_who_and_why(
    scene: Scene, rita: User, finished: RunFactory, stub: StubServer
) -> None:
    client = logged_in(rita)
    refused = client.post(f"/runs/{scene.baseline.pk}/promote/", {"rationale": " "}, follow=True)
    assert "Not promoted: rationale: say why this run becomes the baseline" in page_text(refused)
    errored = client.post(f"/runs/{scene.current.pk}/promote/", {"rationale": "ship it"}, follow=True)
    assert "has 1 errored queries" in page_text(errored)
    assert Baseline.objects.count() == 1

    # The baseline in force, promoted again: nothing would change, and the page says so.
    again = client.post(
        f"/runs/{scene.baseline.pk}/promote/", {"rationale": "again", "action": "promote"}, follow=True
    )
    approved = Baseline.objects.get().approved_at.strftime("%Y-%m-%d %H:%M UTC")
    assert messages_text(again) == [
        f"Not promoted: run {scene.baseline.pk} staging is already the baseline of help-center "
        f"(approved by rita on {approved}): nothing to promote"
    ]
    assert Baseline.objects.count() == 1

    stub.on("query 5", hits_reply(["d1", "d2"]))  # healthy again: a run with no errored query
    newer = finished()
    promoted = client.post(
        f"/runs/{newer.pk}/promote/", {"rationale": "on purpose", "action": "promote"}, follow=True
    )
    newest = Baseline.objects.order_by("-id").first()
    assert newest is not None and (newest.run, newest.approved_by, newest.rationale) == (
        newer,
        rita,
        "on purpose",
    )
    assert (
        f"{newer.label.replace('run', 'Run', 1)} is now the baseline of help-center, replacing run "
        f"{scene.baseline.pk} staging."
    ) in messages_text(promoted)
    page = page_text(client.get(f"/runs/{newer.pk}/"))
    assert "This run is the baseline in force" in page and "“on purpose”" in page


def test_rebaseline_without_a_git_export_is_refused_with_the_reason(scene: Scene, rita: User) -> None:
    page = logged_in(rita).get(f"/runs/{scene.current.pk}/")
    assert "Rebaselining through git needs the set's git export" in page_text(page)
    response = logged_in(rita).post(
        f"/runs/{scene.baseline.pk}/promote/", {"rationale": "new floor", "action": "rebaseline"}, follow=True
    )
    assert "golden set help-center has no git export configured" in page_text(response)


def test_rebaseline_writes_the_branch_and_promotes(scene: Scene, rita: User, tmp_path: Any) -> None:
    from golden_io.models import GitExportConfig

    GitExportConfig.objects.create(
        golden_set=scene.golden_set,
        repository_path=str(tmp_path / "repo"),
        file_path="golden/help-center.json",
    )
    response = logged_in(rita).post(
        f"/runs/{scene.baseline.pk}/promote/", {"rationale": "new floor", "action": "rebaseline"}, follow=True
    )
    newest = Baseline.objects.order_by("-id").first()
    assert newest is not None and newest.git_branch == "rebaseline/golden@2026-08-01"
    assert f"branch rebaseline/golden@2026-08-01 at {newest.git_commit[:10]}" in page_text(response)


def test_cancel_from_the_page(version: GoldenVersion, target: SearchTarget, rita: User) -> None:
    run = run_create(golden_version=version, target=target, triggered_by=rita)
    client = logged_in(rita)
    assert f'action="/runs/{run.pk}/cancel/"' in client.get(f"/runs/{run.pk}/").content.decode()
    response = client.post(f"/runs/{run.pk}/cancel/", follow=True)
    run.refresh_from_db()
    assert run.status == "cancelled" and f"Run {run.pk} staging cancelled." in page_text(response)
    again = client.post(f"/runs/{run.pk}/cancel/", follow=True)
    assert "had already finished (cancelled)" in page_text(again)


def test_the_report_download_is_the_artifact(scene: Scene, rita: User) -> None:
    response = logged_in(rita).get(f"/runs/{scene.current.pk}/report.json")
    assert json.loads(response.content) == scene.current.report
    assert response["Content-Disposition"] == f'attachment; filename="run-{scene.current.pk}-relevance.json"'


# --- side by side -------------------------------------------------------------------------------------


def test_side_by_side_shows_both_rankings_with_grades_titles_and_moves(scene: Scene, rita: User) -> None:
    client = logged_in(rita)
    page = client.get(f"/runs/compare/?a={scene.baseline.pk}&b={scene.current.pk}&query=q-1")

    def first_row(table: str) -> list[str]:
        """The words of the first ranked row of the table with this id (or inside the element with it)."""
        html = page.content.decode()
        found = re.search(rf'id="{table}">.*?<tr>\s*<td class="num">\d+</td>(.*?)</tr>', html, flags=re.S)
        assert found is not None, table
        return re.sub(r"<[^>]+>", " ", found.group(1)).split()

    # rank 1: A had d1 (grade 3, absent from B); B has d3 (unjudged, rank 3 in A)
    a_first, b_first = ["(no", "title)", "d1", "3", "—"], ["(no", "title)", "d3", "unjudged", "3"]
    assert first_row("side-by-side") == a_first + b_first
    assert (first_row("list-a"), first_row("list-b")) == (a_first, b_first)  # a phone's: each list alone
    changes = section_text(page, "rank-changes")
    assert "d1 3 1 — out of top k" in changes and "d9 unjudged — 2 new in top k" in changes
    assert "d2 2 2 3 down 1" in changes


def test_side_by_side_without_a_query_lists_queries_by_loss(scene: Scene, rita: User) -> None:
    page = logged_in(rita).get(f"/runs/compare/?a={scene.baseline.pk}&b={scene.current.pk}")
    choices = section_text(page, "choices")
    assert choices.index("q-3") < choices.index("q-1") < choices.index("q-2")
    assert "— " in choices  # q-5 errored in B: its nDCG is undefined, shown as —


def test_side_by_side_refuses_a_run_the_user_cannot_see_and_unknown_queries(
    scene: Scene, rita: User, finished: Any, charlie: User
) -> None:
    hidden = finished(triggered_by=charlie)
    EvaluationRun.objects.filter(pk=hidden.pk).update(golden_version=scene.version)
    client = logged_in(charlie)
    assert client.get(f"/runs/compare/?a={hidden.pk}&b={scene.current.pk}").status_code == 404
    rita_client = logged_in(rita)
    assert (
        rita_client.get(f"/runs/compare/?a={scene.baseline.pk}&b={scene.current.pk}&query=q-99").status_code
        == 404
    )
    assert rita_client.get("/runs/compare/?a=x&b=1").status_code == 404


def test_long_lists_show_the_first_fifty_rows_and_all_on_request(
    finished: Any, stub: Any, golden_set: GoldenSet, rita: User
) -> None:
    from tests.support.runs import golden_file, make_version
    from tests.support.stub_server import Reply

    stub.default = Reply(status=500, text="down")
    run = finished(golden_version=make_version(golden_set, golden_file(60), name="big"))
    client = logged_in(rita)

    page = client.get(f"/runs/{run.pk}/")
    errors = section_text(page, "errors")
    assert "Errors (60)" in errors and "Showing 50 of 60: show all" in errors
    assert errors.count("HTTP 500") == 50
    full = section_text(client.get(f"/runs/{run.pk}/?all=errors"), "errors")
    assert full.count("HTTP 500") == 60 and "Showing" not in full
    assert "1–50 of 60 queries" in section_text(page, "per-query")
    rest = section_text(client.get(f"/runs/{run.pk}/?pq-page=2"), "per-query")
    assert "51–60 of 60 queries" in rest and "q-60" in rest
