"""golden_version_freeze: content, naming, determinism, refusals, quarantine, frozen labels, stale hashes."""

from __future__ import annotations

import datetime as dt
import hashlib

import pytest
from django.contrib.auth.models import User

from assay.golden.diff import JudgmentChange
from assay.golden.format import dump_json, parse_json
from assay.golden.model import Judgment
from golden_io import selectors, services
from golden_io.models import GoldenVersion
from labeling import services as labeling_services
from labeling.models import FrozenLabel, GoldenSet, Query
from tests import factories
from tests.support.golden_sets import (
    ConsolidatedStub,
    build_set,
)
from tests.support.import_files import golden_file, golden_query, jsonl

pytestmark = pytest.mark.django_db

DAY = dt.date(2026, 8, 1)
SPEC = {
    "q-1": {"text": "refund policy", "tier": "core", "stratum": "billing", "labels": {"d-1": 3, "d-2": 0}},
    "q-2": {"text": "reset password", "tier": "shadow", "labels": {"d-2": 1, "d-3": 2}},
    "q-10": {"text": "webhook signature", "tier": "challenge", "labels": {"d-4": 2}},
    "q-3": {"text": "old query", "status": "retired", "labels": {"d-1": 1}},
}


def test_it_freezes_consolidated_labels_with_tiers_rubric_and_cutoff(
    golden_set: GoldenSet, rita: User, consolidated: ConsolidatedStub
) -> None:
    built = build_set(golden_set, SPEC)
    consolidated.grade(built.queries["q-1"], built.docs["d-2"], 1, "adjudicated")  # a regrade 0 -> 1
    consolidated.grade(built.queries["q-2"], built.docs["d-1"], 2, "single")  # a new judgment
    consolidated.unresolve(built.queries["q-10"], built.docs["d-4"])  # challenge: left out, listed

    version = services.golden_version_freeze(golden_set=golden_set, by=rita, on=DAY)

    assert version.name == "2026-08-01" and str(version) == "help-center@2026-08-01"
    assert version.content_bytes == dump_json(version.golden())
    assert version.sha256 == hashlib.sha256(version.content_bytes).hexdigest()
    golden = version.golden()
    assert [q.id for q in golden.queries] == ["q-1", "q-2", "q-10"]  # natural order; retired q-3 left out
    assert {q.id: q.tier for q in golden.queries} == {"q-1": "core", "q-2": "shadow", "q-10": "challenge"}
    assert golden.query("q-1").judgments == (
        Judgment("d-1", 3, key="https://help.example.com/d-1"),
        Judgment("d-2", 1, key="https://help.example.com/d-2"),
    )
    assert (golden.rubric, golden.k, golden.relevant_min_grade, str(golden.scale)) == (
        "help-center@1",
        10,
        2,
        "0..3",
    )
    assert golden.query("q-1").stratum == "billing" and golden.query("q-1").filters == {"product": "billing"}
    assert (version.rubric_name, version.rubric_version, version.scale_min, version.scale_max) == (
        "help-center",
        1,
        0,
        3,
    )
    assert version.counts == {
        "queries": {"core": 1, "shadow": 1, "challenge": 1},
        "total_queries": 3,
        "judgments": 5,
        "documents": 3,
        "methods": {"adjudicated": 1, "frozen": 3, "single": 1},
        "left_out_unresolved": 1,
        "left_out_not_done": 0,
        "pending_proposals": 0,
    }
    assert version.created_by == rita and version.parent is None
    # The set's frozen labels are now the version's: the regrade is in, the retired query keeps its own.
    golden_set.refresh_from_db()
    assert golden_set.frozen_version == "2026-08-01"
    frozen = {
        (f.query.external_id, f.document.doc_id): (f.grade, f.version)
        for f in FrozenLabel.objects.filter(query__golden_set=golden_set).select_related("query", "document")
    }
    assert frozen == {
        ("q-1", "d-1"): (3, "2026-08-01"),
        ("q-1", "d-2"): (1, "2026-08-01"),  # regraded
        ("q-2", "d-1"): (2, "2026-08-01"),  # created
        ("q-2", "d-2"): (1, "2026-08-01"),
        ("q-2", "d-3"): (2, "2026-08-01"),
        ("q-3", "d-1"): (1, "import"),  # retired: untouched
    }  # (q-10, d-4), left out as unresolved, is no longer a frozen label


def test_it_names_versions_by_date_then_a_suffix_and_chains_parents(
    golden_set: GoldenSet, rita: User, consolidated: ConsolidatedStub
) -> None:
    built = build_set(golden_set, SPEC)

    def regraded(grade: int) -> GoldenSet:
        """One changed label, so that the next freeze has something to freeze."""
        consolidated.grade(built.queries["q-1"], built.docs["d-2"], grade)
        return golden_set

    first = services.golden_version_freeze(golden_set=golden_set, by=rita, on=DAY)
    second = services.golden_version_freeze(golden_set=regraded(1), by=rita, on=DAY)
    third = services.golden_version_freeze(golden_set=regraded(2), by=rita, on=DAY)
    next_day = services.golden_version_freeze(golden_set=regraded(3), by=rita, on=DAY + dt.timedelta(days=1))

    assert [v.name for v in (first, second, third, next_day)] == [
        "2026-08-01",
        "2026-08-01.2",
        "2026-08-01.3",
        "2026-08-02",
    ]
    assert (second.parent, third.parent, next_day.parent) == (first, second, third)
    assert parse_json(third.content_bytes).version == "2026-08-01.3"


def _frozen_labels(golden_set: GoldenSet) -> list[tuple[str, str, int, str]]:
    return sorted(
        FrozenLabel.objects.filter(query__golden_set=golden_set).values_list(
            "query__external_id", "document__doc_id", "grade", "version"
        )
    )


def test_a_second_identical_freeze_is_refused_naming_its_parent_and_creates_nothing(
    golden_set: GoldenSet, rita: User, consolidated: ConsolidatedStub
) -> None:
    build_set(golden_set, SPEC)
    first = services.golden_version_freeze(golden_set=golden_set, by=rita, on=DAY, notes="first cut")
    labels = _frozen_labels(golden_set)

    # Another day, another name, other notes and another user: metadata, not content.
    for kwargs in ({"on": DAY}, {"name": "v2", "notes": "again"}, {"on": DAY + dt.timedelta(days=3)}):
        with pytest.raises(services.FreezeUnchanged) as refused:
            services.golden_version_freeze(golden_set=golden_set, by=None, **kwargs)
        assert refused.value.problems == ["nothing changed since version 2026-08-01: not frozen"]
        assert refused.value.parent == first
    assert list(GoldenVersion.objects.all()) == [first]
    assert _frozen_labels(golden_set) == labels
    golden_set.refresh_from_db()
    assert golden_set.frozen_version == "2026-08-01"


def test_a_freeze_after_one_changed_label_succeeds(
    golden_set: GoldenSet, rita: User, consolidated: ConsolidatedStub
) -> None:
    built = build_set(golden_set, SPEC)
    first = services.golden_version_freeze(golden_set=golden_set, by=rita, on=DAY)

    consolidated.grade(built.queries["q-2"], built.docs["d-3"], 1, "adjudicated")  # 2 -> 1
    second = services.golden_version_freeze(golden_set=golden_set, by=rita, on=DAY)

    assert (second.name, second.parent) == ("2026-08-01.2", first)
    change = selectors.version_diff(old=first, new=second)
    assert change.judgments_regraded == (JudgmentChange("q-2", "d-3", 2, 1),)
    assert change.counts["judgments_regraded"] == 1 and not change.judgments_added
    # And then the same again is refused, naming the new parent.
    with pytest.raises(
        services.FreezeUnchanged, match=r"nothing changed since version 2026-08-01\.2: not frozen"
    ):
        services.golden_version_freeze(golden_set=golden_set, by=rita, on=DAY)


def test_a_changed_query_or_setting_is_a_change_too(
    golden_set: GoldenSet, rita: User, consolidated: ConsolidatedStub
) -> None:
    built = build_set(golden_set, SPEC)
    services.golden_version_freeze(golden_set=golden_set, by=rita, name="v1")
    query = built.queries["q-1"]
    query.text = "refund policy for annual plans"
    query.save()
    assert (
        services.golden_version_freeze(golden_set=golden_set, by=rita, name="v2").golden().query("q-1").text
        == "refund policy for annual plans"
    )
    golden_set.k = 20
    golden_set.save()
    assert services.golden_version_freeze(golden_set=golden_set, by=rita, name="v3").golden().k == 20
    labeling_services.query_move_tier(query=query, tier=Query.Tier.SHADOW, by=rita, reason="flaky")
    assert (
        services.golden_version_freeze(golden_set=golden_set, by=rita, name="v4").golden().query("q-1").tier
        == "shadow"
    )


def test_it_writes_the_same_bytes_for_the_same_labels_whatever_the_insertion_order(
    rita: User, consolidated: ConsolidatedStub
) -> None:
    one = factories.GoldenSetFactory.create(slug="one")
    two = factories.GoldenSetFactory.create(slug="two")
    build_set(one, SPEC)
    build_set(two, dict(reversed(list(SPEC.items()))))  # other row ids, other order

    a = services.golden_version_freeze(golden_set=one, by=rita, name="v1")
    b = services.golden_version_freeze(golden_set=two, by=None, name="v1")

    assert a.content_bytes == b.content_bytes
    assert a.sha256 == b.sha256
    assert {d: m["key"] for d, m in a.documents.items()} == {d: m["key"] for d, m in b.documents.items()}


def test_it_refuses_unresolved_documents_in_core_queries_and_writes_nothing(
    golden_set: GoldenSet, rita: User, consolidated: ConsolidatedStub
) -> None:
    built = build_set(golden_set, SPEC)
    consolidated.unresolve(built.queries["q-1"], built.docs["d-2"], "spread 3: awaiting a reviewer")
    consolidated.unresolve(
        built.queries["q-2"], built.docs["d-3"], "awaiting third rater"
    )  # shadow: no block

    with pytest.raises(services.FreezeBlocked) as caught:
        services.golden_version_freeze(golden_set=golden_set, by=rita, on=DAY)

    assert [(u.query_id, u.doc_id, u.tier, u.reason) for u in caught.value.unresolved] == [
        ("q-1", "d-2", "core", "spread 3: awaiting a reviewer")
    ]
    assert "1 document in 1 core query has no final grade" in str(caught.value)
    assert "q-1 / d-2 (core): spread 3: awaiting a reviewer" in str(caught.value)
    assert not GoldenVersion.objects.exists()
    assert Query.objects.get(pk=built.queries["q-1"].pk).tier == "core"
    assert not FrozenLabel.objects.filter(version="2026-08-01").exists()


def test_it_moves_blocked_queries_to_shadow_when_asked_and_lists_them_in_the_notes(
    golden_set: GoldenSet, rita: User, consolidated: ConsolidatedStub
) -> None:
    built = build_set(golden_set, SPEC)
    consolidated.unresolve(built.queries["q-1"], built.docs["d-2"], "awaiting third rater")

    version = services.golden_version_freeze(
        golden_set=golden_set, by=rita, on=DAY, notes="August cut", quarantine_unresolved=True
    )

    query = Query.objects.get(pk=built.queries["q-1"].pk)
    assert query.tier == "shadow"
    assert "d-2 (awaiting third rater)" in query.quarantine_reason and "2026-08-01" in query.quarantine_reason
    golden = version.golden()
    assert golden.query("q-1").tier == "shadow"
    assert golden.query("q-1").grades == {"d-1": 3}  # the unresolved document is not in the file
    assert version.notes.startswith("August cut\n\nMoved to shadow before freezing")
    assert "- q-1: d-2 (awaiting third rater)" in version.notes
    assert version.counts["queries"] == {"core": 0, "shadow": 2, "challenge": 1}


def test_it_leaves_out_and_lists_unresolved_documents_of_shadow_queries(
    golden_set: GoldenSet, rita: User, consolidated: ConsolidatedStub
) -> None:
    built = build_set(golden_set, SPEC)
    consolidated.unresolve(built.queries["q-2"], built.docs["d-3"], "awaiting third rater")

    version = services.golden_version_freeze(golden_set=golden_set, by=rita, on=DAY)

    assert version.golden().query("q-2").grades == {"d-2": 1}
    assert "q-2 / d-3 (shadow): awaiting third rater" in version.notes
    assert version.counts["left_out_unresolved"] == 1


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("2026 08 01", "letters, digits"),
        ("v..1", "cannot contain '..'"),
        ("working", "reserved"),
        ("x.lock", "'.lock'"),
    ],
)
def test_it_refuses_a_bad_version_name(
    golden_set: GoldenSet, rita: User, consolidated: ConsolidatedStub, name: str, message: str
) -> None:
    build_set(golden_set, SPEC)

    with pytest.raises(services.FreezeError, match=message):
        services.golden_version_freeze(golden_set=golden_set, by=rita, name=name)
    assert consolidated.calls == 0  # refused before reading any label


def test_it_refuses_a_name_the_set_already_has(
    golden_set: GoldenSet, rita: User, consolidated: ConsolidatedStub
) -> None:
    build_set(golden_set, SPEC)
    services.golden_version_freeze(golden_set=golden_set, by=rita, name="v1")

    with pytest.raises(services.FreezeError, match="already has a version 'v1'"):
        services.golden_version_freeze(golden_set=golden_set, by=rita, name="v1")
    assert GoldenVersion.objects.count() == 1


def test_it_names_the_query_when_the_labels_make_no_valid_golden_file(
    golden_set: GoldenSet, rita: User, consolidated: ConsolidatedStub
) -> None:
    # Created first, sorted second: the message must still name the right query.
    build_set(golden_set, {"z 7": {"labels": {"d-1": 2}}, "a-8": {"labels": {"d-1": 3}}})

    with pytest.raises(services.FreezeError) as caught:
        services.golden_version_freeze(golden_set=golden_set, by=rita, on=DAY)

    [problem] = caught.value.problems
    assert problem.startswith("query z 7: queries[1].id: ") and "whitespace" in problem
    assert not GoldenVersion.objects.exists()


def test_it_records_the_judged_hash_and_carries_it_over_for_carried_over_labels(
    golden_set: GoldenSet, rita: User, consolidated: ConsolidatedStub
) -> None:
    built = build_set(golden_set, SPEC)
    doc = built.docs["d-1"]
    judged_hash = doc.content_hash
    v1 = services.golden_version_freeze(golden_set=golden_set, by=rita, on=DAY)
    assert v1.documents["d-1"] == {"key": "https://help.example.com/d-1", "content_hash": judged_hash}

    doc.body = "Rewritten: refunds now take 30 days."
    doc.save()  # a re-ingest with new content
    # Nobody judged it again: the next freeze would record the content that was judged, as v1 does, so
    # it would hold v1's content and is refused; v1 stays stale.
    with pytest.raises(services.FreezeUnchanged, match="nothing changed since version 2026-08-01"):
        services.golden_version_freeze(golden_set=golden_set, by=rita, on=DAY)
    assert selectors.working_golden_get(golden_set=golden_set).documents["d-1"]["content_hash"] == judged_hash
    assert [s.doc_id for s in selectors.stale_documents(version=v1)] == ["d-1"]
    [stale] = selectors.stale_documents(version=v1)
    assert (stale.live_hash, stale.queries) == (doc.content_hash, ("q-1",))

    consolidated.grade(built.queries["q-1"], doc, 2, "single")  # judged again on the new content
    v2 = services.golden_version_freeze(golden_set=golden_set, by=rita, on=DAY)
    assert v2.documents["d-1"]["content_hash"] == doc.content_hash
    assert selectors.stale_documents(version=v2) == []


def test_it_queues_stale_documents_for_rejudging_with_a_fresh_rater(
    golden_set: GoldenSet, rita: User, alice: User, bob: User, consolidated: ConsolidatedStub
) -> None:
    built = build_set(golden_set, SPEC)
    query = built.queries["q-1"]
    factories.AssignmentFactory.create(query=query, rater=alice, status="done")
    version = services.golden_version_freeze(golden_set=golden_set, by=rita, on=DAY)
    doc = built.docs["d-2"]
    doc.title = "Refunds (updated)"
    doc.save()

    report = services.stale_requeue(version=version)

    # d-2 was judged in q-1 and q-2; alice held q-1 before, so bob gets it; q-2 goes to the less loaded.
    assert report.assignments == 2
    assert report.queued == ["q-1: d-2 -> bob", "q-2: d-2 -> alice"]
    new = query.assignments.get(rater=bob)
    assert [c.document.doc_id for c in new.scope.all()] == ["d-2"]
    assert new.status == "open"

    again = services.stale_requeue(version=version)  # both raters have now held q-1: said, not skipped
    assert again.queued == ["q-2: d-2 -> bob"]
    assert "query q-1: every rater of the set has graded it before; add a rater" in again.notes


def test_a_log_sourced_sets_version_has_verticals_for_strata_and_the_bands_apart(
    golden_set: GoldenSet, rita: User
) -> None:
    """A golden file's query, then a query log that names it again and brings new ones; the freeze runs
    the real consolidation."""
    factories.DocumentFactory.create(golden_set=golden_set, doc_id="d-1")
    file = golden_file(golden_query("q-1", ("d-1", 3), text="refund policy", locale=None, stratum="billing"))
    assert services.golden_import(golden_set=golden_set, data=file, source="golden.json").ok
    log = jsonl(
        *(
            {"query": query, "count": count, "zero_hits": zero, "vertical": vertical}
            for query, count, zero, vertical in [
                ("refund policy", 500, 0, "account"),  # the set's q-1 keeps its vertical, billing
                ("api keys", 300, 0, "developer"),
                ("reset password", 150, 0, ""),
                ("no such page", 50, 50, "blog"),
            ]
        )
    )
    options = labeling_services.SamplingOptions(cap=10, reserve_share=0.25)
    report = labeling_services.query_log_import(
        golden_set=golden_set, data=log, source="log.jsonl", options=options
    )
    assert report.ok, report.problems

    version = services.golden_version_freeze(golden_set=golden_set, by=rita, on=DAY)

    golden = version.golden()
    assert {q.text: (q.stratum, q.traffic_band, q.failure_mode) for q in golden.queries} == {
        "refund policy": ("billing", "head", None),
        "api keys": ("developer", "torso", None),
        "reset password": (None, "tail", None),
        "no such page": ("blog", "tail", "zero-results"),
    }
    assert not {q.stratum for q in golden.queries} & {"head", "torso", "tail"}
    assert b'"traffic_band": "head"' in version.content_bytes
