"""A qualified judge's labels through a freeze, the version page, the git export and a golden-file import:
each frozen label records its source, the version counts the judge's labels and names the judges, and the
file marks them `"source": "judge"` so that they stay recognisable after export and import."""

from __future__ import annotations

import subprocess
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from golden_io import services
from labeling.models import Document, FrozenLabel, GoldenSet, Query
from tests import factories
from tests.support.judge_labels import label, make_judge, qualify

pytestmark = pytest.mark.django_db


@pytest.fixture
def query(golden_set: GoldenSet) -> Query:
    return factories.pooled_query(golden_set, 3, external_id="q-1", stratum="billing")


@pytest.fixture
def docs(query: Query) -> list[Document]:
    return [c.document for c in query.candidates.order_by("best_rank")]


def _frozen(golden_set: GoldenSet) -> dict[str, tuple[int, str, int | None, str]]:
    rows = FrozenLabel.objects.filter(query__golden_set=golden_set).values_list(
        "document__doc_id", "grade", "source", "judge_id", "judge_name"
    )
    return {doc_id: (grade, source, judge_id, name) for doc_id, grade, source, judge_id, name in rows}


def test_a_freeze_records_each_labels_source_and_the_version_counts_the_judges(
    golden_set: GoldenSet, query: Query, docs: list[Document], alice: User, rita: User, client: Client
) -> None:
    assignment = factories.AssignmentFactory.create(query=query, rater=alice, status="done")
    factories.grade(assignment, docs[0], 3)
    judge = make_judge(golden_set, "m1")
    for doc, grade in zip(docs, (0, 2, 1), strict=True):
        label(judge, query, doc, grade)  # docs[0]'s is never counted: a human graded it
    first = services.golden_version_freeze(golden_set=golden_set, by=rita, name="v1")
    assert b'"source"' not in first.content_bytes  # no judge qualified: humans only, as before
    assert "judge_labels" not in first.counts

    qualify(judge, rita)
    version = services.golden_version_freeze(golden_set=golden_set, by=rita, name="v2")

    judgments = {j.doc_id: (j.grade, j.source) for j in version.golden().query("q-1").judgments}
    assert judgments == {
        docs[0].doc_id: (3, None),
        docs[1].doc_id: (2, "judge"),
        docs[2].doc_id: (1, "judge"),
    }
    assert version.counts["judge_labels"] == 2
    assert version.counts["judges"] == [{"id": judge.pk, "name": judge.name, "labels": 2}]
    assert version.counts["methods"] == {"judge": 2, "single": 1}
    assert _frozen(golden_set) == {
        docs[0].doc_id: (3, "human", None, ""),
        docs[1].doc_id: (2, "judge", judge.pk, judge.name),
        docs[2].doc_id: (1, "judge", judge.pk, judge.name),
    }

    client.force_login(rita)
    page = client.get(reverse("golden_io:version_detail", args=[golden_set.slug, "v2"])).content.decode()
    assert 'id="judge-labels"' in page and f"{judge.name} 2" in page
    page = client.get(reverse("golden_io:version_detail", args=[golden_set.slug, "v1"])).content.decode()
    assert 'id="judge-labels"' not in page
    # The query's page says which frozen labels a judge decided, and which one.
    page = client.get(reverse("labeling:query_review", args=[golden_set.slug, query.pk])).content.decode()
    for doc in docs:
        cell = page.split(f'data-doc="{doc.doc_id}"')[1].split("</td>", 3)[2]
        assert (f"judge: {judge.name}" in cell) is (doc != docs[0]), doc.doc_id


def test_the_source_survives_the_git_export_and_a_golden_file_import(
    golden_set: GoldenSet, query: Query, docs: list[Document], alice: User, rita: User, tmp_path: Path
) -> None:
    assignment = factories.AssignmentFactory.create(query=query, rater=alice, status="done")
    factories.grade(assignment, docs[0], 3)
    judge = make_judge(golden_set, "m1")
    label(judge, query, docs[1], 2)
    qualify(judge, rita)
    version = services.golden_version_freeze(golden_set=golden_set, by=rita, name="v1")
    repo = tmp_path / "golden"
    services.git_export_configure(golden_set=golden_set, repository_path=str(repo), file_path="help.json")
    assert services.golden_version_export(version=version, by=rita).status == "exported"
    exported = subprocess.run(
        ["git", "-C", str(repo), "show", "golden@v1:help.json"], check=True, capture_output=True
    ).stdout
    assert exported == version.content_bytes
    assert f'"grade": 2, "key": "{docs[1].key}", "source": "judge"}}'.encode() in exported

    report = services.golden_import(golden_set=golden_set, data=exported, source="help.json")

    assert report.ok
    # Merged, the file changes nothing: the label stays the judge's, with which judge gave it.
    assert report.counts["labels changed"] == 0
    assert _frozen(golden_set) == {
        docs[0].doc_id: (3, "human", None, ""),
        docs[1].doc_id: (2, "judge", judge.pk, "judge m1"),
    }
    # Frozen again with nothing changed: the same content, so the freeze is refused as unchanged.
    with pytest.raises(services.FreezeUnchanged):
        services.golden_version_freeze(golden_set=golden_set, by=rita, name="v2")


def test_humans_grading_a_pair_the_judge_filled_shows_as_a_source_change(
    golden_set: GoldenSet, query: Query, docs: list[Document], alice: User, rita: User, client: Client
) -> None:
    judge = make_judge(golden_set, "m1")
    label(judge, query, docs[1], 2)
    qualify(judge, rita)
    services.golden_version_freeze(golden_set=golden_set, by=rita, name="v1")
    # A rater confirms the judge's grade: the label is the humans' now, its grade unchanged.
    assignment = factories.AssignmentFactory.create(query=query, rater=alice, status="done")
    factories.grade(assignment, docs[1], 2)
    services.golden_version_freeze(golden_set=golden_set, by=rita, name="v2")

    client.force_login(rita)
    page = client.get(reverse("golden_io:diff", args=[golden_set.slug]), {"old": "v1", "new": "v2"})
    assert page.status_code == 200
    html = page.content.decode()
    assert "1 label source changed (judge -&gt; humans: 1)" in html
    assert f"<td>q-1</td><td>{docs[1].doc_id}</td><td>judge</td><td>humans</td>" in html
    out = StringIO()
    call_command("golden_diff", f"{golden_set.slug}@v1", "v2", stdout=out)
    assert f"~ source q-1 {docs[1].doc_id}: judge -> humans" in out.getvalue()
