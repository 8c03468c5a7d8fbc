"""Round trip: a golden file imported and frozen without changes comes back byte for byte, through the
real consolidation (`labeling.selectors.labels_consolidated`: nothing judged since, so every label is
carried over as `frozen`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth.models import User

from assay.golden.format import dump_json, parse
from assay.golden.model import GoldenFile, GoldenQuery, Judgment, Scale
from golden_io import services
from golden_io.models import GoldenVersion
from labeling import services as labeling_services
from labeling.models import GoldenSet
from tests import factories

pytestmark = pytest.mark.django_db
DEMO = Path(__file__).resolve().parents[2] / "demo"


def _imported(golden_set: GoldenSet, data: bytes) -> None:
    report = services.golden_import(golden_set=golden_set, data=data, source="golden.json")
    assert report.ok, report.render_text()


def test_the_demo_golden_file_round_trips_byte_for_byte(rita: User) -> None:
    rubric, report = labeling_services.rubric_import(
        data=(DEMO / "rubric.json").read_bytes(), source="rubric"
    )
    assert rubric is not None, report.render_text()
    golden_set = factories.GoldenSetFactory.create(slug="help-center", rubric=rubric, locales=[])
    docs = labeling_services.documents_import(
        golden_set=golden_set, data=(DEMO / "corpus.jsonl").read_bytes(), source="corpus.jsonl"
    )
    assert docs.ok, docs.render_text()
    original = (DEMO / "golden.json").read_bytes()
    _imported(golden_set, original)

    version = services.golden_version_freeze(golden_set=golden_set, by=rita, name=parse(original).version)

    assert version.content_bytes == original
    assert GoldenVersion.objects.get(pk=version.pk).content_bytes == original  # as stored, not as built
    assert version.counts["total_queries"] == 86
    assert set(version.counts["methods"]) == {"frozen"}  # nothing judged since the import


def test_a_file_with_its_own_scale_cutoff_and_k_round_trips(rita: User) -> None:
    rubric = factories.RubricFactory.create(name="support", version=3, scale_min=0, scale_max=4)
    golden_set = factories.GoldenSetFactory.create(slug="support", rubric=rubric, locales=[])
    for doc_id in ("doc-2", "doc-10", "doc-11"):
        factories.DocumentFactory.create(golden_set=golden_set, doc_id=doc_id, key=None, url=f"/{doc_id}")
    golden = GoldenFile(
        version="2026-09-01",
        k=20,
        relevant_min_grade=3,
        scale=Scale(0, 4),
        rubric="support@3",
        queries=(
            GoldenQuery(
                "q-2", "annual refund", (Judgment("doc-2", 4), Judgment("doc-10", 0)), locale="en-GB"
            ),
            GoldenQuery(
                "q-10",
                "facture",
                (Judgment("doc-11", 3),),
                filters={"product": "billing", "region": ["eu", "us"]},
                stratum="billing",
                weight=2.5,
                tier="challenge",
                expect_empty=False,
                critical=True,
                tags=("disputed", "fr"),
            ),
            GoldenQuery("q-11", "no results expected", (), expect_empty=True, tier="shadow"),
        ),
    )
    original = dump_json(golden)
    _imported(golden_set, original)

    version = services.golden_version_freeze(golden_set=golden_set, by=rita, name="2026-09-01")

    assert version.content_bytes == original
    assert (version.k, version.relevant_min_grade, version.scale_max) == (20, 3, 4)


def test_a_file_with_traffic_bands_and_failure_modes_round_trips(rita: User) -> None:
    golden_set = factories.GoldenSetFactory.create(slug="banded", locales=[])
    for doc_id in ("doc-1", "doc-2"):
        factories.DocumentFactory.create(golden_set=golden_set, doc_id=doc_id, key=None, url=f"/{doc_id}")
    golden = GoldenFile(
        version="2026-09-01",
        rubric=str(golden_set.rubric),
        queries=(
            GoldenQuery("q-1", "refund", (Judgment("doc-1", 3),), stratum="billing", traffic_band="head"),
            GoldenQuery(
                "q-2",
                "rfund",
                (Judgment("doc-1", 2), Judgment("doc-2", 0)),
                stratum="billing",
                traffic_band="tail",
                failure_mode="typo",
            ),
            GoldenQuery("q-3", "api keys", (Judgment("doc-2", 1),), failure_mode="synonym"),
        ),
    )
    original = dump_json(golden)
    _imported(golden_set, original)

    version = services.golden_version_freeze(golden_set=golden_set, by=rita, name="2026-09-01")

    assert version.content_bytes == original
    assert version.golden() == golden


def test_a_freeze_takes_real_grades_agreement_and_adjudication(
    golden_set: GoldenSet, alice: User, bob: User, rita: User
) -> None:
    """No stand-in: raters grade, consolidation decides, a disagreement blocks the freeze until a reviewer
    adjudicates it, and the version holds the final grades with their methods counted."""
    dual = factories.pooled_query(golden_set, 2, external_id="q-1", text="refund policy")
    single = factories.pooled_query(golden_set, 1, external_id="q-2", text="reset password")
    agreed_doc, split_doc = (dual.candidates.get(best_rank=r).document for r in (1, 2))
    for rater, kind, grades in ((alice, "primary", (3, 0)), (bob, "second", (3, 3))):
        assignment = factories.AssignmentFactory.create(query=dual, rater=rater, kind=kind)
        for doc, value in zip((agreed_doc, split_doc), grades, strict=True):
            factories.grade(assignment, doc, value)
    lone_doc = single.candidates.get().document
    # One rater's work counts once it is marked done (docs/agreement.md, "Final labels").
    factories.grade(factories.AssignmentFactory.create(query=single, rater=alice, status="done"), lone_doc, 2)

    with pytest.raises(services.FreezeBlocked) as blocked:
        services.golden_version_freeze(golden_set=golden_set, by=rita, name="2026-11-01")
    assert [(u.query_id, u.doc_id) for u in blocked.value.unresolved] == [("q-1", split_doc.doc_id)]
    assert not GoldenVersion.objects.exists()

    labeling_services.adjudication_create(
        query=dual, document=split_doc, reviewer=rita, grade=1, rationale="answers half of it"
    )
    version = services.golden_version_freeze(golden_set=golden_set, by=rita, name="2026-11-01")

    frozen = {q.id: {j.doc_id: j.grade for j in q.judgments} for q in parse(version.content_bytes).queries}
    assert frozen == {
        "q-1": {agreed_doc.doc_id: 3, split_doc.doc_id: 1},
        "q-2": {lone_doc.doc_id: 2},
    }
    assert version.counts["methods"] == {"adjudicated": 1, "agreed": 1, "single": 1}
