"""Imports: documents, query logs, rubrics. A file with any problem imports nothing. Golden files are
golden_io's: tests/golden_io/test_golden_import.py."""

from __future__ import annotations

import json
from typing import Any

import pytest

from assay.labels import querylog
from assay.problems import ImportReport
from labeling import services
from labeling.models import Document, FrozenLabel, GoldenSet, Judgment, Query, Rubric
from tests import factories
from tests.support.import_files import doc, golden_file, golden_query, jsonl, keyed

pytestmark = pytest.mark.django_db


@pytest.fixture
def gset() -> GoldenSet:
    return factories.GoldenSetFactory.create(slug="hc", locales=["en-US", "de-DE"])


# --- documents --------------------------------------------------------------------------------------


def test_it_imports_documents_and_updates_changed_ones(gset: GoldenSet) -> None:
    report = services.documents_import(golden_set=gset, data=jsonl(doc("d1"), doc("d2")), source="c.jsonl")
    assert report.ok, report.problems
    assert report.counts["documents created"] == 2
    before = Document.objects.get(doc_id="d1").content_hash
    again = services.documents_import(
        golden_set=gset, data=jsonl(doc("d1", title="Renamed"), doc("d2")), source="c.jsonl"
    )
    assert (again.counts["documents updated"], again.counts["documents unchanged"]) == (1, 1)
    d1 = Document.objects.get(doc_id="d1")
    assert d1.title == "Renamed" and d1.content_hash != before and len(d1.content_hash) == 64


def test_it_reports_every_bad_document_line_and_imports_nothing(gset: GoldenSet) -> None:
    data = jsonl(
        doc("d1"),
        doc("d1"),  # duplicate id
        {"title": "no id"},
        "{not json",
        doc("d3", key=doc("d1")["key"]),  # duplicate key
        doc("d4", fields=["x"]),
        doc("d5", title=""),
    )
    report = services.documents_import(golden_set=gset, data=data, source="c.jsonl")
    assert [p.where for p in report.problems] == [
        "line 2: id",
        "line 3: id",
        "line 4",
        "line 5: key",
        "line 6: fields",
        "line 7: title",
    ]
    assert "duplicate id 'd1' (first on line 1)" in report.problems[0].message
    assert "also 'd1' on line 1" in report.problems[3].message
    assert not Document.objects.exists()


def test_it_refuses_documents_that_are_not_utf8(gset: GoldenSet) -> None:
    data = json.dumps(doc("d1", title="Rückerstattung"), ensure_ascii=False).encode("latin-1")
    report = services.documents_import(golden_set=gset, data=data, source="c.jsonl")
    assert not report.ok
    assert report.problems[0].where == "line 1" and "not UTF-8" in report.problems[0].message
    assert not Document.objects.exists()


def test_a_stored_key_under_a_new_id_renames_that_document(gset: GoldenSet) -> None:
    services.documents_import(golden_set=gset, data=jsonl(doc("d1")), source="a")
    d1 = Document.objects.get()
    report = services.documents_import(golden_set=gset, data=jsonl(keyed("d9", "d1")), source="b")
    assert report.ok, report.problems
    assert Document.objects.get().pk == d1.pk  # the same document, now under its new id
    assert Document.objects.get().doc_id == "d9"
    assert report.counts["documents renamed"] == 1
    assert "d1 → d9 (key https://help.example.com/d1)" in report.notes[-1]


def test_a_renumbering_re_ingest_follows_the_keys_and_the_judgments_follow(
    gset: GoldenSet, alice: Any
) -> None:
    services.documents_import(
        golden_set=gset, data=jsonl(*(keyed(f"{i}", f"a{i}") for i in (1, 2, 3))), source="a"
    )
    before = {d.key: d.pk for d in Document.objects.all()}
    query = factories.QueryFactory.create(golden_set=gset)
    judged = Document.objects.get(doc_id="2")
    factories.JudgmentFactory.create(
        assignment__query=query, assignment__rater=alice, document=judged, grade=3
    )
    # Every id moves up by one (a chain: 1 -> 2 while 2 -> 3 and 3 -> 4), and a new document takes id 1.
    renumbered = jsonl(
        doc("1", key=None, title="Brand new"), *(keyed(f"{i + 1}", f"a{i}") for i in (1, 2, 3))
    )
    report = services.documents_import(golden_set=gset, data=renumbered, source="b")
    assert report.ok, report.problems
    assert report.counts["documents renamed"] == 3 and report.counts["documents created"] == 1
    assert any(n.startswith("renamed 3 documents, following their durable keys") for n in report.notes)
    after = {d.key: (d.pk, d.doc_id) for d in Document.objects.all()}
    assert {key: after[key] for key in before} == {
        "https://help.example.com/a1": (before["https://help.example.com/a1"], "2"),
        "https://help.example.com/a2": (before["https://help.example.com/a2"], "3"),
        "https://help.example.com/a3": (before["https://help.example.com/a3"], "4"),
    }
    assert Document.objects.get(doc_id="1").title == "Brand new"
    assert Judgment.objects.get().document.doc_id == "3"  # the judged article, under its new id
    again = services.documents_import(golden_set=gset, data=renumbered, source="c")
    assert again.counts["documents unchanged"] == 4 and again.counts["documents renamed"] == 0


def test_two_documents_can_swap_ids(gset: GoldenSet) -> None:
    services.documents_import(golden_set=gset, data=jsonl(keyed("x", "kx"), keyed("y", "ky")), source="a")
    pks = {d.key: d.pk for d in Document.objects.all()}
    report = services.documents_import(
        golden_set=gset, data=jsonl(keyed("y", "kx"), keyed("x", "ky")), source="b"
    )
    assert report.ok, report.problems
    assert {d.key: (d.pk, d.doc_id) for d in Document.objects.all()} == {
        "https://help.example.com/kx": (pks["https://help.example.com/kx"], "y"),
        "https://help.example.com/ky": (pks["https://help.example.com/ky"], "x"),
    }


def test_it_refuses_a_rename_onto_the_id_of_a_document_the_file_does_not_list(gset: GoldenSet) -> None:
    services.documents_import(golden_set=gset, data=jsonl(keyed("d1", "k1"), keyed("d2", "k2")), source="a")
    # k1 moves to id d2, but the stored d2 (key k2) is not in the file: two documents would be d2.
    report = services.documents_import(golden_set=gset, data=jsonl(keyed("d2", "k1")), source="b")
    assert [str(p) for p in report.problems] == [
        "line 1: key: key 'https://help.example.com/k1' belongs to stored document 'd1', but id 'd2' is"
        " another stored document's (key 'https://help.example.com/k2'), which this file does not list:"
        " renaming 'd1' to 'd2' would give two documents one id"
    ]
    assert sorted(Document.objects.values_list("doc_id", "key")) == [
        ("d1", "https://help.example.com/k1"),
        ("d2", "https://help.example.com/k2"),
    ]


# --- query logs -------------------------------------------------------------------------------------


def _log_csv(rows: list[tuple[str, int, int, str]]) -> bytes:
    lines = ["query,count,zero_hits,locale"] + [f'"{q}",{c},{z},{loc}' for q, c, z, loc in rows]
    return "\n".join(lines).encode()


def test_it_samples_a_query_log_into_the_set_up_to_the_cap(gset: GoldenSet) -> None:
    factories.QueryFactory.create(golden_set=gset, text="Refund policy", locale="en-US")
    rows = [(f"topic {i}", 1000 // (i + 1), 0, "en-US") for i in range(300)]
    rows += [("refund policy", 50, 0, "en-US"), ("mail me at a@b.io", 3, 0, "en-US")]
    rows += [(f"failing {i}", 5, 5, "en-US") for i in range(40)]
    rows += [("bonjour", 9, 0, "fr-FR")]
    options = services.SamplingOptions(cap=61, reserve_share=0.2, seed=5)
    report = services.query_log_import(
        golden_set=gset, data=_log_csv(rows), source="log.csv", options=options
    )
    assert report.ok, report.problems
    assert report.counts["queries created"] == 60  # the set held 1 query; the cap is on the set
    assert report.counts["known failures reserved"] == 12
    assert report.counts["PII removed: email"] == 1
    assert report.counts["already in the golden set"] == 1
    assert report.counts["outside the locale scope"] == 1
    created = Query.objects.filter(tags__contains=["from-log"])
    assert created.count() == 60
    assert created.filter(tags__contains=["known-failure"]).count() == 12
    # The log has no vertical column: no stratum; the band has its own field.
    assert set(created.values_list("stratum", flat=True)) == {""}
    assert set(created.values_list("traffic_band", flat=True)) == {"head", "torso", "tail"}
    reserved = created.filter(tags__contains=["known-failure"])
    assert set(reserved.values_list("failure_mode", flat=True)) == {"zero-results"}
    assert set(created.exclude(pk__in=reserved).values_list("failure_mode", flat=True)) == {""}
    assert not created.filter(text__contains="@").exists()
    assert not created.filter(locale="fr-FR").exists()
    again = services.query_log_import(golden_set=gset, data=_log_csv(rows), source="log.csv", options=options)
    assert again.counts["queries created"] == 0  # the set is full


def _vertical_log(rows: list[tuple[str, int, int, str]]) -> bytes:
    """A JSONL log whose rows carry their product vertical ("" for none)."""
    return jsonl(*({"query": q, "count": c, "zero_hits": z, "vertical": v} for q, c, z, v in rows))


def test_a_log_with_a_vertical_column_keeps_the_vertical_and_records_the_band(gset: GoldenSet) -> None:
    verticals = ["billing", "account", "developer", "blog"]
    rows = [(f"topic {i}", 1000 // (i + 1), 0, verticals[i % 4]) for i in range(120)]
    rows += [(f"failing {i}", 4, 4, "billing") for i in range(10)] + [("no vertical", 30, 0, "")]
    options = services.SamplingOptions(cap=200, reserve_share=0.1)

    report = services.query_log_import(
        golden_set=gset, data=_vertical_log(rows), source="log.jsonl", options=options
    )

    assert report.ok, report.problems
    assert report.counts["queries created"] == 131
    # The bands the pure pipeline gives the whole log (tests/assay/labels/test_querylog.py checks them).
    parsed = querylog.parse_log(_vertical_log(rows), name="log.jsonl", report=ImportReport("query log", "x"))
    bands = {q.text: b for q, b in querylog.assign_bands(querylog.clean(parsed).queries).items()}
    stored = {q.text: q for q in Query.objects.filter(golden_set=gset)}
    assert {q.stratum for q in stored.values()} == {*verticals, ""}
    assert stored["topic 5"].stratum == "account" and stored["no vertical"].stratum == ""
    assert {text: q.traffic_band for text, q in stored.items()} == bands
    assert {q.failure_mode for q in stored.values() if q.text.startswith("failing")} == {"zero-results"}


def test_a_query_already_in_the_set_keeps_its_stratum_and_takes_the_logs_band(gset: GoldenSet) -> None:
    curated = factories.QueryFactory.create(
        golden_set=gset, text="Refund policy", locale="", stratum="billing"
    )
    bare = factories.QueryFactory.create(golden_set=gset, text="api keys", locale="", stratum="")
    rows = [("refund policy", 600, 0, "account"), ("api keys", 300, 0, "developer"), ("new one", 100, 0, "")]

    report = services.query_log_import(
        golden_set=gset,
        data=_vertical_log(rows),
        source="log.jsonl",
        options=services.SamplingOptions(cap=10),
    )

    assert report.ok, report.problems
    assert report.counts["already in the golden set"] == 2
    assert report.counts["traffic bands updated"] == 2
    assert report.counts["strata filled from the log's vertical"] == 1
    assert "1 queries keep a stratum other than the vertical the log gives them" in report.notes
    curated.refresh_from_db()
    bare.refresh_from_db()
    assert (curated.stratum, curated.traffic_band) == ("billing", "head")  # the reviewer's vertical stays
    assert (bare.stratum, bare.traffic_band) == ("developer", "torso")
    new = Query.objects.get(golden_set=gset, text="new one")
    assert (new.stratum, new.traffic_band, new.failure_mode) == ("", "tail", "")

    # A re-import of a log without verticals: every stratum survives, the bands follow the new traffic.
    later = _log_csv([("refund policy", 300, 0, ""), ("api keys", 200, 0, ""), ("new one", 500, 0, "")])
    again = services.query_log_import(
        golden_set=gset, data=later, source="log.csv", options=services.SamplingOptions(cap=10)
    )
    assert again.ok, again.problems
    assert again.counts["queries created"] == 0 and again.counts["traffic bands updated"] == 3
    assert sorted(Query.objects.filter(golden_set=gset).values_list("text", "stratum", "traffic_band")) == [
        ("Refund policy", "billing", "torso"),
        ("api keys", "developer", "tail"),
        ("new one", "", "head"),
    ]
    same = services.query_log_import(
        golden_set=gset, data=later, source="log.csv", options=services.SamplingOptions(cap=10)
    )
    assert same.counts["traffic bands updated"] == same.counts["strata filled from the log's vertical"] == 0


def test_a_query_log_with_a_bad_row_imports_nothing(gset: GoldenSet) -> None:
    data = _log_csv([("fine", 3, 0, "en-US")]) + b'\n"broken",x,0,en-US'
    options = services.SamplingOptions(cap=10)
    report = services.query_log_import(golden_set=gset, data=data, source="log.csv", options=options)
    assert [str(p) for p in report.problems] == [
        "line 3: count: expected a non-negative integer up to 1,000,000,000,000,000, found 'x'"
    ]
    assert not Query.objects.exists()


# --- rubrics ----------------------------------------------------------------------------------------


def _rubric(**overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": "support",
        "version": 1,
        "scale": {"min": 0, "max": 3},
        "grades": [dict(g) for g in factories.GRADES],
    }
    data.update(overrides)
    return data


def test_it_imports_a_rubric_once_and_refuses_changed_content_under_the_same_version() -> None:
    rubric, report = services.rubric_import(data=json.dumps(_rubric()).encode(), source="r.json")
    assert report.ok and rubric is not None and str(rubric) == "support@1"
    assert [g["grade"] for g in rubric.grades] == [3, 2, 1, 0]
    same, again = services.rubric_import(data=json.dumps(_rubric()).encode(), source="r.json")
    assert same == rubric and again.counts == {"rubrics unchanged": 1}
    changed = _rubric()
    changed["grades"][0]["meaning"] = "something else"
    _, refused = services.rubric_import(data=json.dumps(changed).encode(), source="r.json")
    assert "exists with other content; a change to a rubric is a new version" in str(refused.problems[0])
    _, v2 = services.rubric_import(data=json.dumps({**changed, "version": 2}).encode(), source="r.json")
    assert v2.ok and Rubric.objects.filter(name="support").count() == 2


def test_it_names_each_rubric_problem() -> None:
    grades = [dict(g) for g in factories.GRADES[:3]]  # grade 0 missing
    grades[0]["positive_examples"] = ["only one"]
    grades[1]["grade"] = 9
    _, report = services.rubric_import(data=json.dumps(_rubric(grades=grades)).encode(), source="r.json")
    assert [str(p) for p in report.problems] == [
        "grades[0].positive_examples: expected at least three examples (text)",
        "grades[1].grade: 9 is outside the scale 0..3",
        "grades: no description for grades 0, 2",
    ]
    assert not Rubric.objects.filter(name="support").exists()


@pytest.mark.parametrize(
    ("text", "says"),
    [
        # A RecursionError and a ValueError (the int-string digit limit) before: each a 500 or a traceback.
        ('{"name": "support", "grades": ' + "[" * 100_000, "file: nested deeper than 64 levels"),
        ('{"name": "support", "version": ' + "1" * 5000 + "}", "file: a number is too long to read"),
        ('{"name": "support",\n "version": }', "line 2: malformed JSON at column 13: Expecting value"),
    ],
)
def test_a_rubric_file_beyond_what_is_read_is_one_worded_problem(text: str, says: str) -> None:
    _, report = services.rubric_import(data=text.encode(), source="r.json")
    assert len(report.problems) == 1 and str(report.problems[0]).startswith(says)
    assert not Rubric.objects.filter(name="support").exists()


def test_a_deeply_nested_document_file_is_not_taken_for_one_json_document(gset: GoldenSet) -> None:
    # Two bad lines ask whether the file is one JSON document: that question raised RecursionError.
    data = ("[" * 100_000 + "\n" + "]" * 100_000).encode()
    report = services.documents_import(golden_set=gset, data=data, source="docs.jsonl")
    assert [str(p) for p in report.problems][:1] == [
        "line 1: nested deeper than 64 levels of arrays or objects"
    ]
    assert not Document.objects.exists()


def test_a_json_document_given_as_documents_gets_one_clear_problem(gset: GoldenSet) -> None:
    data = json.dumps({"documents": [doc("d1"), doc("d2")]}, indent=2).encode()
    report = services.documents_import(golden_set=gset, data=data, source="docs.json")
    assert [str(p) for p in report.problems] == [
        "file: this is one JSON document; documents come as JSONL, one JSON object per line"
    ]


def test_after_a_renumbering_re_ingest_a_frozen_versions_keys_resolve_to_the_new_ids(
    gset: GoldenSet, rita: Any
) -> None:
    from assay.golden.keys import resolve_keys
    from golden_io.selectors import live_keys
    from golden_io.services import golden_import, golden_version_freeze

    services.documents_import(
        golden_set=gset, data=jsonl(*(keyed(f"{i}", f"a{i}") for i in (1, 2))), source="a"
    )
    assert golden_import(
        golden_set=gset, data=golden_file(golden_query("q-1", ("1", 3), ("2", 0))), source="g"
    ).ok
    version = golden_version_freeze(golden_set=gset, by=rita, name="2026-08-01")
    assert version.golden().query("q-1").grades == {"1": 3, "2": 0}

    report = services.documents_import(
        golden_set=gset, data=jsonl(*(keyed(f"{i + 100}", f"a{i}") for i in (1, 2))), source="b"
    )

    assert report.ok and report.counts["documents renamed"] == 2
    resolved = resolve_keys(version.golden(), live_keys(gset))
    assert resolved.golden.query("q-1").grades == {"101": 3, "102": 0}
    assert resolved.unresolved == ()
    # The set's own frozen labels point at the same documents, now under their new ids.
    assert sorted(FrozenLabel.objects.values_list("document__doc_id", "grade")) == [("101", 3), ("102", 0)]
