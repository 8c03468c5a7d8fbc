"""Qualifying a judge (labeling/services/judge_qualification.py, labeling/views/judge_qualification.py):
who may see and act, the figures the page shows, qualify refused or stored, withdraw, a new version
starting unqualified, the compare page, and a job over the qualification items."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone
from django.utils.html import escape

from labeling.models import (
    Assignment,
    Document,
    GoldenSet,
    Judge,
    JudgeAnswer,
    JudgeJob,
    JudgeJobItem,
    JudgeLabel,
    JudgeQualification,
    Query,
)
from labeling.selectors.judge_items import judge_figures_get, judge_items_get
from labeling.selectors.judge_scope import qualified_judge_labels
from labeling.services import judge_qualification as jq
from labeling.services import judges
from tests import factories
from tests.support.forms import error_summary
from tests.support.judge_stub import judge_settings

pytestmark = pytest.mark.django_db

# Per query: the four documents' grades both raters gave (they agree: the consensus is "agreed").
GRADES = [0, 1, 2, 3]


def make_judge(golden_set: GoldenSet, model: str, previous: Judge | None = None) -> Judge:
    settings = judge_settings("http://127.0.0.1:9", model=model, name=f"judge {model}")
    judge, _ = judges.judge_save(golden_set=golden_set, settings=settings, by=None, previous=previous)
    return judge


def dual_query(
    golden_set: GoldenSet, raters: tuple[User, User], grades: list[int], **fields: str
) -> tuple[Query, list[Document]]:
    """A query whose pool both raters graded alike and marked done (written directly, no service)."""
    query = factories.pooled_query(golden_set, len(grades), **fields)
    documents = [c.document for c in query.candidates.order_by("best_rank")]
    for rater, kind in zip(raters, (Assignment.Kind.PRIMARY, Assignment.Kind.SECOND), strict=True):
        assignment = factories.AssignmentFactory.create(
            query=query, rater=rater, kind=kind, status=Assignment.Status.DONE, completed=timezone.now()
        )
        for document, grade in zip(documents, grades, strict=True):
            factories.grade(assignment, document, grade)
    return query, documents


def label(judge: Judge, query: Query, document: Document, grade: int) -> JudgeLabel:
    return JudgeLabel.objects.create(
        judge=judge, query=query, document=document, grade=grade, content_hash=document.content_hash
    )


@pytest.fixture
def labeled(golden_set: GoldenSet, alice: User, bob: User) -> list[tuple[Query, list[Document]]]:
    """20 dual-labeled queries: billing in en-US, docs in de-DE, ten each (a verdict needs ten)."""
    out = []
    for i in range(20):
        stratum, locale = ("billing", "en-US") if i % 2 == 0 else ("docs", "de-DE")
        out.append(dual_query(golden_set, (alice, bob), GRADES, stratum=stratum, locale=locale))
    return out


@pytest.fixture
def good(golden_set: GoldenSet, labeled: list[tuple[Query, list[Document]]]) -> Judge:
    """A judge that grades as the humans did, except one error per docs query's first document."""
    judge = make_judge(golden_set, "good")
    job = JudgeJob.objects.create(judge=judge)
    for query, documents in labeled:
        for index, (document, grade) in enumerate(zip(documents, GRADES, strict=True)):
            if query.stratum == "docs" and index == 0:
                answer = JudgeAnswer.objects.create(
                    model=judge.model,
                    prompt_hash="p",
                    query_hash=f"q{query.pk}",
                    document_hash=document.content_hash,
                    error="not JSON: 'grade three'",
                )
                JudgeJobItem.objects.create(
                    job=job, index=JudgeJobItem.objects.filter(job=job).count(), query=query,
                    document=document, done=True, answer=answer,
                )  # fmt: skip
                continue
            label(judge, query, document, grade)
    return judge


@pytest.fixture
def bad(golden_set: GoldenSet, labeled: list[tuple[Query, list[Document]]]) -> Judge:
    """A judge that grades the other way round on docs: qualified for billing only."""
    judge = make_judge(golden_set, "bad")
    for query, documents in labeled:
        for document, grade in zip(documents, GRADES, strict=True):
            label(judge, query, document, grade if query.stratum == "billing" else 3 - grade)
    return judge


def page(judge: Judge, suffix: str = "") -> str:
    return f"/sets/{judge.golden_set.slug}/judges/{judge.pk}/qualification/{suffix}"


def test_everyone_but_the_sets_reviewers_is_refused_every_page_and_action(
    client: Client, good: Judge, alice: User, charlie: User, rita: User
) -> None:
    qualification = JudgeQualification.objects.create(judge=good, by=rita, rationale="r", bar=0.9)
    otto = factories.UserFactory.create(username="otto", groups=["reviewers"])
    other = factories.GoldenSetFactory.create(slug="other-set", reviewers=[otto])
    pages = [page(good), f"/sets/{good.golden_set.slug}/judges/compare/"]
    actions = [page(good, "job/"), page(good, "qualify/"), page(good, f"{qualification.pk}/withdraw/")]
    data = {"rationale": "x", "reason": "x"}
    for url in pages:
        response = client.get(url)
        assert response.status_code == 302 and "/login" in response["Location"], url
    for url in actions:
        response = client.post(url, data)
        assert response.status_code == 302 and "/login" in response["Location"], url
    for user in (alice, charlie, otto):
        client.force_login(user)
        for url in pages:
            assert client.get(url).status_code == 404, (user.username, url)
        for url in actions:
            assert client.post(url, data).status_code == 404, (user.username, url)
    assert JudgeQualification.objects.get().status == JudgeQualification.Status.ACTIVE
    assert not JudgeJob.objects.filter(judge=good).exclude(items__answer__isnull=False).exists()
    # Object level: a judge of another set under the other set's address, and this judge under it.
    elsewhere = make_judge(other, "elsewhere")
    client.force_login(rita)
    assert client.get(page(elsewhere)).status_code == 404
    assert client.get(f"/sets/help-center/judges/{elsewhere.pk}/qualification/").status_code == 404
    client.force_login(otto)
    assert client.get(f"/sets/other-set/judges/{good.pk}/qualification/").status_code == 404
    # A qualification of another judge under this judge's address.
    other_q = JudgeQualification.objects.create(judge=elsewhere, by=otto, rationale="r", bar=0.9)
    client.force_login(rita)
    response = client.post(page(good, f"{other_q.pk}/withdraw/"), {"reason": "x"})
    assert response.status_code == 404
    other_q.refresh_from_db()
    assert other_q.status == JudgeQualification.Status.ACTIVE
    # The set's reviewer sees both pages.
    assert client.get(page(good)).status_code == 200
    assert client.get(f"/sets/{good.golden_set.slug}/judges/compare/").status_code == 200


def test_the_page_shows_judge_figures_gets_figures_errors_counted_apart(
    client: Client, good: Judge, rita: User, labeled: list[tuple[Query, list[Document]]]
) -> None:
    golden_set = good.golden_set
    grades: dict[tuple[int, int], int | None] = {}
    for query, documents in labeled:
        for index, (document, grade) in enumerate(zip(documents, GRADES, strict=True)):
            grades[(query.pk, document.pk)] = None if query.stratum == "docs" and index == 0 else grade
    assert jq.judge_grades(judge=good) == grades
    expected = judge_figures_get(golden_set=golden_set, grades=grades)
    client.force_login(rita)
    response = client.get(page(good))
    assert response.status_code == 200
    report = response.context["report"]
    assert report.figures.to_dict() == expected.figures.to_dict()
    overall = expected.figures.overall
    assert overall.judge.n_errors == 10 and overall.judge.n_items == 70 and overall.judge.n_queries == 20
    assert [s.name for s in expected.figures.strata] == ["billing", "docs"]
    assert [s.name for s in expected.figures.locales] == ["de-DE", "en-US"]
    html = response.content.decode()
    assert "Yes: the judge agrees with the human consensus as well as the humans agree" in html
    assert escape(report.verdicts.overall.why) in html
    assert "Status:</strong> not qualified" in html
    assert "Judge the qualification items" in html


def test_qualify_is_refused_where_the_figures_do_not_say_qualified(
    client: Client, bad: Judge, rita: User
) -> None:
    client.force_login(rita)
    response = client.post(page(bad, "qualify/"), {"rationale": "looks fine"})
    assert response.status_code == 400 and not JudgeQualification.objects.exists()
    [(text, anchor)] = error_summary(response).entries
    assert text.startswith("not qualified for every stratum and locale: the figures say not qualified")
    assert anchor == "qualify-strata"
    response = client.post(page(bad, "qualify/"), {"strata": ["docs"], "rationale": "x"})
    assert error_summary(response).texts[0].startswith("not qualified for docs")
    # No rationale: refused, whatever the figures.
    client.post(page(bad, "qualify/"), {"strata": ["billing"], "rationale": " "})
    assert not JudgeQualification.objects.exists()
    assert not qualified_judge_labels(golden_set=bad.golden_set)


def test_qualify_stores_the_bar_and_the_figures_and_the_labels_count_in_its_scope(
    client: Client, bad: Judge, rita: User, labeled: list[tuple[Query, list[Document]]]
) -> None:
    client.force_login(rita)
    response = client.post(
        page(bad, "qualify/"), {"strata": ["billing"], "rationale": "billing agrees"}, follow=True
    )
    assert "Qualified for billing" in response.content.decode()
    stored = JudgeQualification.objects.get()
    assert (stored.strata, stored.locales, stored.by, stored.rationale) == (
        ["billing"], [], rita, "billing agrees",
    )  # fmt: skip
    report = jq.qualification_report(judge=bad)
    billing = next(v for v in report.verdicts.strata if v.name == "billing")
    assert billing.verdict == "qualified"
    assert stored.bar == billing.bar
    assert stored.figures["verdict"]["verdict"] == "qualified"
    assert stored.figures["figures"]["judge"]["n_items"] == 40
    assert stored.figures["figures"]["judge"]["kappa_quadratic"]["value"] == 1.0
    counted = qualified_judge_labels(golden_set=bad.golden_set)
    assert {key[0] for key in counted} == {q.pk for q, _ in labeled if q.stratum == "billing"}
    assert "qualified for billing since" in client.get(page(bad)).content.decode()


def test_withdraw_ends_an_active_qualification_with_the_reason(
    client: Client, good: Judge, rita: User
) -> None:
    qualification = jq.judge_qualify(judge=good, strata=[], locales=[], rationale="agrees", by=rita)
    assert qualified_judge_labels(golden_set=good.golden_set)
    client.force_login(rita)
    client.post(page(good, f"{qualification.pk}/withdraw/"), {"reason": " "})
    qualification.refresh_from_db()
    assert qualification.status == JudgeQualification.Status.ACTIVE  # a reason is required
    client.post(page(good, f"{qualification.pk}/withdraw/"), {"reason": "the prompt leaked labels"})
    qualification.refresh_from_db()
    assert qualification.status == JudgeQualification.Status.WITHDRAWN
    assert qualification.ended_at is not None
    assert qualification.ended_reason == "withdrawn by rita: the prompt leaked labels"
    assert qualified_judge_labels(golden_set=good.golden_set) == {}
    response = client.post(page(good, f"{qualification.pk}/withdraw/"), {"reason": "again"}, follow=True)
    assert "had already ended" in response.content.decode()


def test_a_new_version_starts_unqualified_and_the_page_says_so(
    client: Client, good: Judge, rita: User, labeled: list[tuple[Query, list[Document]]]
) -> None:
    jq.judge_qualify(judge=good, strata=[], locales=[], rationale="agrees", by=rita)
    newer = make_judge(good.golden_set, "good-2", previous=good)
    assert newer.pk != good.pk and newer.previous == good
    for query, documents in labeled:
        for document, grade in zip(documents, GRADES, strict=True):
            label(newer, query, document, grade)
    assert jq.qualification_status(newer) == "not qualified"
    assert not JudgeQualification.objects.filter(judge=newer).exists()
    counted = qualified_judge_labels(golden_set=good.golden_set)
    assert {c.judge_id for c in counted.values()} == {good.pk}
    client.force_login(rita)
    html = client.get(page(newer)).content.decode()
    assert "it must qualify again" in html and "do not carry over" in html
    assert "Status:</strong> not qualified" in html
    assert "replaces this judge; it must qualify on its own" in client.get(page(good)).content.decode()
    detail = client.get(f"/sets/{good.golden_set.slug}/judges/{newer.pk}/").content.decode()
    assert "<strong>Qualification:</strong> not qualified" in detail and "must qualify again" in detail
    listing = client.get(f"/sets/{good.golden_set.slug}/judges/").content.decode()
    assert "qualified for every stratum and locale since" in listing and "not qualified" in listing
    assert 'id="judge-suspended"' not in listing


def test_compare_shows_each_judge_on_the_common_items_only(
    client: Client, good: Judge, bad: Judge, rita: User
) -> None:
    client.force_login(rita)
    response = client.get(f"/sets/{good.golden_set.slug}/judges/compare/", {"judges": [good.pk, bad.pk]})
    comparison = response.context["comparison"]
    assert comparison.n_items == 80 and comparison.n_common == 70
    html = response.content.decode()
    assert "on the 70 items every judge graded (10 of 80 left out" in html
    assert [c["judge"] for c in response.context["columns"]] == [bad, good]
    rows = response.context["scope_rows"]
    assert [(scope.scope, scope.name) for scope, _ in rows] == [
        ("stratum", "billing"), ("stratum", "docs"), ("locale", "de-DE"), ("locale", "en-US"),
    ]  # fmt: skip
    billing = dict(zip(["bad", "good"], (v.verdict for _, v in rows[0][1]), strict=True))
    assert billing == {"bad": "qualified", "good": "qualified"}
    assert [v.verdict for _, v in rows[1][1]] == ["not qualified", "qualified"]
    only = client.get(f"/sets/{good.golden_set.slug}/judges/compare/", {"judges": [bad.pk]})
    assert only.context["comparison"].n_common == 80


def test_judge_the_qualification_items_makes_a_job_over_exactly_those_pairs(
    client: Client, good: Judge, rita: User, golden_set: GoldenSet
) -> None:
    factories.pooled_query(golden_set, 3, stratum="billing")  # a pool nobody labeled: not an item
    client.force_login(rita)
    response = client.post(page(good, "job/"))
    job = JudgeJob.objects.filter(judge=good).order_by("-pk").first()
    assert job is not None and response.status_code == 303
    assert response["Location"].endswith(f"/judges/{good.pk}/jobs/{job.pk}/")
    items = judge_items_get(golden_set=golden_set)
    assert job.total == 80
    assert {(i.query_id, i.document_id) for i in job.items.all()} == set(items.pks.values())
    assert sorted(job.items.values_list("index", flat=True)) == list(range(80))


def test_the_judge_pages_link_to_the_qualification_and_compare_pages(
    client: Client, bad: Judge, rita: User
) -> None:
    client.force_login(rita)
    detail = client.get(f"/sets/{bad.golden_set.slug}/judges/{bad.pk}/").content.decode()
    assert f'href="{page(bad)}"' in detail
    listing = client.get(f"/sets/{bad.golden_set.slug}/judges/").content.decode()
    assert f'href="/sets/{bad.golden_set.slug}/judges/compare/"' in listing
