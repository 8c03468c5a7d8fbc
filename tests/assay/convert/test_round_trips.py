"""Each format's round trips: golden -> X -> golden keeps exactly what X can carry (the table in
assay.convert.formats and docs/cli.md says what it loses), and X -> golden -> X gives X's bytes back.
Plain files in a temporary folder; no database."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from assay.convert.core import GradeReading
from assay.convert.formats import FORMATS, convert
from assay.convert.options import Options
from assay.golden.format import dump_json, from_dict, parse, to_dict
from assay.golden.model import GoldenFile

RICH: dict[str, Any] = {
    "version": "2026-08-01",
    "k": 5,
    "rubric": "help-center@3",
    "queries": [
        {
            "id": "q-0001",
            "text": "reset password",
            "locale": "en-US",
            "filters": {"lang": "en"},
            "stratum": "account",
            "tier": "shadow",
            "tags": ["head"],
            "judgments": [{"doc_id": "d-1", "grade": 3, "key": "https://x/1"}, {"doc_id": "d-2", "grade": 0}],
        },
        {
            "id": "q-0002",
            "text": 'billing, "invoices"',
            "stratum": "billing",
            "weight": 2,
            "judgments": [{"doc_id": "d-3", "grade": 2}, {"doc_id": "d-10", "grade": 1}],
        },
        {"id": "q-0003", "text": "api keys", "judgments": [{"doc_id": "d-4", "grade": 3}]},
    ],
}


def golden() -> GoldenFile:
    return from_dict(RICH)


def bare(g: GoldenFile, *, version: str = "imported", keep: tuple[str, ...] = ()) -> dict[str, Any]:
    """What a foreign format keeps: ids, texts, grades, and the query fields named in `keep`."""
    data = to_dict(replace(g, version=version))
    out: dict[str, Any] = {"version": data["version"], "k": 10}
    out["queries"] = [
        {"id": q["id"], "text": q["text"]}
        | {name: q[name] for name in keep if name in q}
        | {"judgments": [{"doc_id": j["doc_id"], "grade": j["grade"]} for j in q["judgments"]]}
        for q in data["queries"]
    ]
    return to_dict(from_dict(out))


def through(
    fmt: str, g: GoldenFile, tmp_path: Path, options: Options | None = None
) -> tuple[Path, GoldenFile]:
    """g written as `fmt` (every file the writer gives), then read back."""
    options = options or Options()
    source = tmp_path / "golden.json"
    source.write_bytes(dump_json(g))
    out = tmp_path / f"out.{fmt}"
    _, files = convert("golden", fmt, source, out, options)
    for path, data in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    back, _ = convert(fmt, "golden", out, tmp_path / "back.json", options)
    return out, back.golden


KEPT: dict[str, dict[str, Any]] = {
    "quepid-csv": {},
    "srw-csv": {},
    "srw-json": {"version": "2026-08-01"},
    "rre": {"keep": ("filters", "stratum")},
    "beir": {},
}


@pytest.mark.parametrize("fmt", sorted(KEPT))
def test_golden_to_format_and_back_keeps_what_the_format_carries(fmt: str, tmp_path: Path) -> None:
    _, back = through(fmt, golden(), tmp_path)
    assert to_dict(back) == bare(golden(), **KEPT[fmt])


def test_golden_to_qrels_with_topics_and_back_keeps_ids_texts_and_grades(tmp_path: Path) -> None:
    _, back = through("trec-qrels", golden(), tmp_path, Options(topics=tmp_path / "topics.tsv"))
    assert to_dict(back) == bare(golden())
    assert (tmp_path / "topics.tsv").read_text() == (
        'q-0001\treset password\nq-0002\tbilling, "invoices"\nq-0003\tapi keys\n'
    )


def test_qrels_without_topics_take_the_qid_as_text(tmp_path: Path) -> None:
    _, back = through("trec-qrels", golden(), tmp_path)
    assert [(q.id, q.text) for q in back.queries] == [
        ("q-0001", "q-0001"),
        ("q-0002", "q-0002"),
        ("q-0003", "q-0003"),
    ]
    assert back.queries[1].grades == {"d-3": 2, "d-10": 1}


@pytest.mark.parametrize("fmt", ["golden", "golden-jsonl"])
def test_the_golden_forms_keep_everything(fmt: str, tmp_path: Path) -> None:
    _, back = through(fmt, golden(), tmp_path)
    assert back == golden()


@pytest.mark.parametrize("fmt", sorted(name for name, f in FORMATS.items() if f.reader is not None))
def test_format_to_golden_to_format_gives_the_same_bytes(fmt: str, tmp_path: Path) -> None:
    """X's own output (a canonical X file), read into a golden file and written as X again, is byte for
    byte the same (its topics file too, for qrels)."""
    first, _ = through(fmt, golden(), tmp_path, Options(topics=tmp_path / "topics.tsv"))
    back, _ = convert(fmt, "golden", first, tmp_path / "g.json", Options(topics=tmp_path / "topics.tsv"))
    middle = _written(back.golden, tmp_path)
    second = tmp_path / "second" / first.name
    options = Options(topics=tmp_path / "second" / "topics.tsv")
    for path, data in convert("golden", fmt, middle, second, options)[1].items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    assert _files(second) == _files(first)
    if fmt == "trec-qrels":
        assert (tmp_path / "second" / "topics.tsv").read_bytes() == (tmp_path / "topics.tsv").read_bytes()


def _files(path: Path) -> dict[str, bytes]:
    if path.is_dir():
        return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}
    return {"": path.read_bytes()}


def test_quepid_csv_read_then_written_is_the_same_file(tmp_path: Path) -> None:
    text = 'query,docid,rating\nreset password,d-1,3\nreset password,d-2,0\n"a, b",d-3,2\n'
    source = tmp_path / "in.csv"
    source.write_text(text)
    converted, _ = convert("quepid-csv", "golden", source, tmp_path / "g.json", Options())
    _, files = convert(
        "golden", "quepid-csv", _written(converted.golden, tmp_path), tmp_path / "out.csv", Options()
    )
    assert files[tmp_path / "out.csv"].decode() == text


def _written(g: GoldenFile, tmp_path: Path) -> Path:
    path = tmp_path / "g.json"
    path.write_bytes(dump_json(g))
    return path


def test_queries_identified_by_text_are_numbered_in_order_of_first_appearance(tmp_path: Path) -> None:
    source = tmp_path / "in.csv"
    source.write_text("query,docid,rating\nzebra,d1,1\napple,d2,2\nzebra,d3,3\nmango,d1,0\n")
    converted, _ = convert("quepid-csv", "golden", source, tmp_path / "g.json", Options())
    assert [(q.id, q.text, q.grades) for q in converted.golden.queries] == [
        ("q-0001", "zebra", {"d1": 1, "d3": 3}),
        ("q-0002", "apple", {"d2": 2}),
        ("q-0003", "mango", {"d1": 0}),
    ]


def test_srw_json_ratings_as_strings_or_numbers_and_zero_to_one_scores_with_scale(tmp_path: Path) -> None:
    body = {
        "name": "my judgments",  # not a usable version: the default is kept
        "type": "IMPORT_JUDGMENT",
        "judgmentRatings": [
            {"query": "q a", "ratings": [{"docId": "1", "rating": "0.0"}, {"docId": "2", "rating": 0.34}]},
            {"query": "q b", "ratings": [{"docId": "1", "rating": "0.66"}, {"docId": "3", "rating": 1}]},
        ],
    }
    source = tmp_path / "srw.json"
    source.write_text(json.dumps(body))
    options = Options(grades=GradeReading(source=(0.0, 1.0)))
    g = convert("srw-json", "golden", source, tmp_path / "g.json", options)[0].golden
    assert g.version == "imported"
    assert [q.grades for q in g.queries] == [{"1": 0, "2": 1}, {"1": 2, "3": 3}]


def test_map_reads_named_ratings_and_leaves_the_others_to_the_integer_rule(tmp_path: Path) -> None:
    source = tmp_path / "in.csv"
    source.write_text("query,docid,rating\nx,d1,1\nx,d2,0\nx,d3,2\n")
    options = Options(grades=GradeReading(mapping={1.0: 3}))
    g = convert("srw-csv", "golden", source, tmp_path / "g.json", options)[0].golden
    assert g.queries[0].grades == {"d1": 3, "d2": 0, "d3": 2}


def test_rre_both_relevant_documents_shapes_topics_and_bare_query_groups(tmp_path: Path) -> None:
    topics = {
        "index": "core1",
        "id_field": "id",
        "topics": [
            {
                "description": "Fender basses",
                "query_groups": [
                    {
                        "name": "Brand search",
                        "queries": [
                            {"template": "only_q.json", "placeholders": {"$query": "fender"}},
                            {"template": "lang.json", "placeholders": {"$query": "Fender", "$lang": "eng"}},
                        ],
                        "relevant_documents": {"1": {"gain": 3}, "2": {"gain": 2}},
                    }
                ],
            }
        ],
    }
    groups = {
        "query_placeholder": "$q",
        "query_groups": [
            {
                "name": "crash",
                "queries": [{"template": "t.json", "placeholders": {"$q": "helicopter crash"}}],
                "relevant_documents": {"2": ["1"], "0": ["2", "15"]},
            }
        ],
    }
    (tmp_path / "a.json").write_text(json.dumps(topics))
    (tmp_path / "b.json").write_text(json.dumps(groups))
    a = convert("rre", "golden", tmp_path / "a.json", tmp_path / "g.json", Options())[0].golden
    b = convert("rre", "golden", tmp_path / "b.json", tmp_path / "g.json", Options())[0].golden
    assert [(q.id, q.text, dict(q.filters), q.stratum, q.grades) for q in a.queries] == [
        ("q-0001", "fender", {}, "Fender basses", {"1": 3, "2": 2}),
        ("q-0002", "Fender", {"lang": "eng"}, "Fender basses", {"1": 3, "2": 2}),
    ]
    assert [(q.text, q.stratum, q.grades) for q in b.queries] == [
        ("helicopter crash", None, {"1": 2, "2": 0, "15": 0})
    ]


def test_rre_queries_at_the_top_level_as_quepid_exports_them_read_and_come_back(tmp_path: Path) -> None:
    """Quepid's RRE export: `queries` at the top level, each with its own `relevant_documents` (grades as
    Quepid writes them, `"3.0"` too), none for a query not rated; written as RRE (topics) and read back,
    the same golden file."""
    quepid = {
        "id_field": "id",
        "index": "tmdb",
        "template": "template.json",
        "queries": [
            {
                "placeholders": {"$query": "star wars"},
                "relevant_documents": {"3.0": ["11", "12"], "0": ["99"]},
            },
            {"placeholders": {"$query": "rambo"}},
            {"placeholders": {"$query": "alien", "$lang": "en"}, "relevant_documents": {"1": ["348"]}},
        ],
    }
    source = tmp_path / "quepid-rre.json"
    source.write_text(json.dumps(quepid))
    read = convert("rre", "golden", source, tmp_path / "g.json", Options())[0].golden
    assert [(q.id, q.text, dict(q.filters), q.grades) for q in read.queries] == [
        ("q-0001", "star wars", {}, {"11": 3, "12": 3, "99": 0}),
        ("q-0002", "rambo", {}, {}),
        ("q-0003", "alien", {"lang": "en"}, {"348": 1}),
    ]
    written, back = through("rre", read, tmp_path)
    assert back == read
    assert "topics" in json.loads(written.read_text())


def test_beir_with_a_corpus_gives_its_documents_in_the_documents_import_format(tmp_path: Path) -> None:
    folder = tmp_path / "scifact"
    (folder / "qrels").mkdir(parents=True)
    (folder / "queries.jsonl").write_text(
        '{"_id": "1", "text": "first question"}\n{"_id": "2", "text": "unjudged"}\n'
        '{"_id": "3", "text": "third"}\n'
    )
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n3\tdoc-b\t1\n1\tdoc-a\t2\n")
    (folder / "corpus.jsonl").write_text(
        '{"_id": "doc-a", "title": "A title", "text": "body a"}\n'
        '{"_id": "doc-b", "title": "", "text": "body b"}\n'
    )
    converted, _ = convert("beir", "golden", folder, tmp_path / "g.json", Options())
    assert [(q.id, q.text, q.grades) for q in converted.golden.queries] == [
        ("1", "first question", {"doc-a": 2}),
        ("3", "third", {"doc-b": 1}),
    ]
    assert converted.documents == (
        {"id": "doc-a", "title": "A title", "body": "body a"},
        {"id": "doc-b", "title": "doc-b", "body": "body b"},
    )


def test_ltr_export_numbers_queries_in_golden_order(tmp_path: Path) -> None:
    source = _written(golden(), tmp_path)
    _, files = convert("golden", "ltr", source, tmp_path / "out.txt", Options())
    assert files[tmp_path / "out.txt"].decode() == (
        "3 qid:1 # d-1 reset password\n"
        "0 qid:1 # d-2 reset password\n"
        '2 qid:2 # d-3 billing, "invoices"\n'
        '1 qid:2 # d-10 billing, "invoices"\n'
        "3 qid:3 # d-4 api keys\n"
    )


def test_golden_version_renames_a_golden_input(tmp_path: Path) -> None:
    source = _written(golden(), tmp_path)
    converted, _ = convert("golden", "golden-jsonl", source, tmp_path / "o.jsonl", Options(version="v2"))
    assert converted.golden == replace(golden(), version="v2")
    assert parse(dump_json(converted.golden)).version == "v2"
