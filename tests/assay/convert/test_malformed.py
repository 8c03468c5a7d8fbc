"""Malformed input, format by format: a ConvertError whose every problem names the file and the line (or
JSON path) in words a user can act on. Exact texts, so a changed or vaguer message fails here."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.convert.core import ConvertError, GradeReading, parse_map_options, parse_scale_option
from assay.convert.formats import convert
from assay.convert.options import Options
from assay.golden.model import Scale

HOW = "(--scale MIN..MAX or --map FROM=TO says how to read it)"

CASES: list[tuple[str, str | bytes, list[str]]] = [
    ("quepid-csv", "", ["IN: the file is empty: expected the header query,docid,rating"]),
    (
        "quepid-csv",
        "q,doc,rate\nx,1,2\n",
        ["IN: line 1: header 'q,doc,rate': expected the columns query,docid,rating"],
    ),
    ("quepid-csv", "query,docid,rating\nx,1\n", ["IN: line 2: expected 3 columns, got 2"]),
    (
        "quepid-csv",
        "query,docid,rating\nx,d1,1\nx,d1,2\n",
        ["IN: line 3: a second rating of document 'd1' for query 'x' (first at line 2)"],
    ),
    (
        "quepid-csv",
        "query,docid,rating\nx,d1,4\n",
        [f'IN: line 2: rating "4" is outside the golden scale 0..3 {HOW}'],
    ),
    (
        "quepid-csv",
        "query,docid,rating\nx,d1,2.5\n,d2,1\ny,,1\nz,d3,\n",
        [
            f'IN: line 2: rating "2.5" is not an integer {HOW}',
            "IN: line 3: query is empty",
            "IN: line 4: docid is empty",
            'IN: line 5: rating "" is empty',
        ],
    ),
    (
        "quepid-csv",
        "query,docid,rating\nx,d 1,1\n",
        [
            "IN: line 2: doc_id: \"d 1\" contains whitespace or a control character (' '), "
            'not allowed in an id (query "q-0001")'
        ],
    ),
    ("srw-csv", "query,docid,rating\nx,d1,high\n", ['IN: line 2: rating "high" is not a number']),
    ("srw-csv", "query".encode("utf-16"), ["IN: line 1: not UTF-8 text (byte 0)"]),
    ("srw-json", '{"a":', ["IN: line 1, column 6: invalid JSON: Expecting value"]),
    (
        "srw-json",
        "[" * 100 + "]" * 100,
        ["IN: invalid JSON: nested deeper than 64 levels of arrays or objects"],
    ),
    ("srw-json", "[]", ["IN: expected an object with judgmentRatings, got an array"]),
    (
        "srw-json",
        '{"name": "n", "type": "X", "judgmentRatings": []}',
        ['IN: type: "X" is not IMPORT_JUDGMENT'],
    ),
    (
        "srw-json",
        '{"judgmentRatings": []}',
        ["IN: no judgments found: a golden file needs at least one query"],
    ),
    (
        "srw-json",
        '{"judgmentRatings": [{"query": "a", "ratings": [{"docId": "1", "rating": "0.5"}, {"rating": 1}, '
        '{"docId": "2", "rating": true}]}, {"query": 3, "ratings": []}]}',
        [
            f'IN: judgmentRatings[0].ratings[0].rating: rating "0.5" is not an integer {HOW}',
            "IN: judgmentRatings[0].ratings[1].docId: missing",
            "IN: judgmentRatings[0].ratings[2].rating: rating True is not a number",
            "IN: judgmentRatings[1].query: expected text, got a number",
        ],
    ),
    ("rre", '{"index": "x"}', ["IN: no topics, no query_groups and no queries: not an RRE ratings file"]),
    (
        "rre",
        '{"queries": [{"placeholders": {"$query": "a"}, "relevant_documents": {"3": "d1"}}, 7], "x": 1}',
        [
            'IN: queries[0].relevant_documents["3"]: '
            'expected {"gain": n} or an array of document ids, got a string',
            "IN: queries[1]: expected an object with template and placeholders",
        ],
    ),
    ("rre", '{"queries": {"a": 1}}', ["IN: queries: expected an array of queries, got an object"]),
    (
        "rre",
        '{"query_groups": [{"queries": [{"placeholders": {"$query": "a"}}], '
        '"relevant_documents": {"d1": 5}}]}',
        [
            'IN: query_groups[0].relevant_documents["d1"]: '
            'expected {"gain": n} or an array of document ids, got a number'
        ],
    ),
    (
        "rre",
        '{"topics": [{"description": "t", "query_groups": [{"queries": [{"placeholders": {"$query": "a"}}], '
        '"relevant_documents": {"x": ["d1"], "d2": {"gain": 7}}}]}]}',
        [
            'IN: topics[0].query_groups[0].relevant_documents["x"][0]: gain "x" is not a number',
            'IN: topics[0].query_groups[0].relevant_documents["d2"].gain: '
            f"gain 7 is outside the golden scale 0..3 {HOW}",
        ],
    ),
    (
        "rre",
        '{"query_groups": [{"queries": [{"placeholders": {"$x": "a"}}], '
        '"relevant_documents": {"d1": {"gain": 1}}}]}',
        ["IN: query_groups[0].queries[0].placeholders: no text in $query"],
    ),
    ("trec-qrels", "1 0 d1\n", ["IN: line 1: expected 4 columns (qid iter docno rel), got 3"]),
    ("trec-qrels", "1 0 d1 x\n", ["IN: line 1: relevance 'x' is not an integer"]),
    (
        "trec-qrels",
        "1 0 d1 1\n1 0 d2 -1\n",
        [f"IN: line 2: relevance -1 is outside the golden scale 0..3 {HOW}"],
    ),
    (
        "golden",
        '{"version": "v", "queries": [{"id": "a", "text": "t", "judgments": [{"doc_id": "d", "grade": 9}]}]}',
        ['IN: queries[0].judgments[0].grade: 9 is outside the scale 0..3 (query "a")'],
    ),
]


@pytest.mark.parametrize(("fmt", "content", "expected"), CASES)
def test_malformed_input_is_refused_naming_file_and_place(
    fmt: str, content: str | bytes, expected: list[str], tmp_path: Path
) -> None:
    source = tmp_path / "in"
    source.write_bytes(content.encode() if isinstance(content, str) else content)
    with pytest.raises(ConvertError) as caught:
        convert(fmt, "golden", source, tmp_path / "out.json", Options())
    assert caught.value.problems == [line.replace("IN", str(source), 1) for line in expected]


def test_qrels_topics_problems_name_the_topics_file(tmp_path: Path) -> None:
    qrels, topics = tmp_path / "q.txt", tmp_path / "topics.tsv"
    qrels.write_text("1 0 d1 1\n3 0 d2 1\n")
    topics.write_text("1\tfirst\n2 no tab\n1\tagain\n")
    with pytest.raises(ConvertError) as caught:
        convert("trec-qrels", "golden", qrels, tmp_path / "o.json", Options(topics=topics))
    assert caught.value.problems == [
        f"{topics}: line 2: expected qid<TAB>text",
        f"{topics}: line 3: qid 1 again (first at line 1)",
    ]
    topics.write_text("1\tfirst\n")
    with pytest.raises(ConvertError) as caught:
        convert("trec-qrels", "golden", qrels, tmp_path / "o.json", Options(topics=topics))
    assert caught.value.problems == [f"{qrels}: line 2: qid 3 has no text in {topics}"]


def test_beir_problems_name_each_file(tmp_path: Path) -> None:
    folder = tmp_path / "ds"
    (folder / "qrels").mkdir(parents=True)
    (folder / "queries.jsonl").write_text('{"_id": "1", "text": "a"}\nnot json\n{"_id": "2"}\n')
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n")
    with pytest.raises(ConvertError) as caught:
        convert("beir", "golden", folder, tmp_path / "o.json", Options())
    queries = folder / "queries.jsonl"
    assert caught.value.problems == [
        f"{queries}: line 2: invalid JSON at column 1: Expecting value",
        f"{queries}: line 3: text: missing or empty",
    ]
    (folder / "queries.jsonl").write_text('{"_id": "1", "text": "a"}\n')
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n1\td1\t0.5\n9\td2\t1\n1\td3\n")
    (folder / "corpus.jsonl").write_text('{"_id": "d1", "title": 3}\n')
    qrels = folder / "qrels" / "test.tsv"
    with pytest.raises(ConvertError) as caught:
        convert("beir", "golden", folder, tmp_path / "o.json", Options())
    assert caught.value.problems == [
        f'{qrels}: line 2: score "0.5" is not an integer {HOW}',
        f"{qrels}: line 3: query-id 9 is not in {queries}",
        f"{qrels}: line 4: expected 3 tab-separated columns, got 2",
        f"{folder / 'corpus.jsonl'}: line 1: title: expected text, got a number",
    ]


def test_beir_folder_shape_problems(tmp_path: Path) -> None:
    with pytest.raises(ConvertError) as caught:
        convert("beir", "golden", tmp_path / "none", tmp_path / "o.json", Options())
    assert caught.value.problems == [
        f"{tmp_path / 'none'}: no such folder: a BEIR dataset is a folder with queries.jsonl and qrels/ "
        "(or a zip)"
    ]
    (tmp_path / "ds" / "qrels").mkdir(parents=True)
    (tmp_path / "ds" / "qrels" / "dev.tsv").write_text("")
    (tmp_path / "ds" / "qrels" / "test.tsv").write_text("")
    with pytest.raises(ConvertError) as caught:
        convert("beir", "golden", tmp_path / "ds", tmp_path / "o.json", Options())
    assert caught.value.problems == [
        f"{tmp_path / 'ds'}: several qrels splits (dev, test): --split NAME chooses one "
        "(an upload holds one split)"
    ]


def test_scale_rounds_half_up_and_refuses_values_outside_it() -> None:
    reading = GradeReading(source=(0.0, 1.0))
    assert [reading.read(v)[0] for v in (0, 0.16, 0.17, 0.5, 0.83, 0.84, 1, "1.0")] == [
        0,
        0,
        1,
        2,
        2,
        3,
        3,
        3,
    ]
    assert reading.read("1.5") == (None, 'rating "1.5" is outside --scale 0..1')
    assert GradeReading(source=(1.0, 5.0)).read(5) == (3, None)


def test_scale_and_map_options_are_parsed_or_refused_in_words() -> None:
    assert parse_scale_option("0..1") == (0.0, 1.0)
    for text, message in (
        ("1..0", "'1..0': MIN must be below MAX"),
        ("0-1", "'0-1': expected MIN..MAX, e.g. 0..1"),
    ):
        with pytest.raises(ValueError, match="^" + message.replace(".", r"\.") + "$"):
            parse_scale_option(text)
    assert parse_map_options(["-1=0", "1=3"], Scale()) == {-1.0: 0, 1.0: 3}
    with pytest.raises(ValueError, match=r"is not a grade on the golden scale 0\.\.3"):
        parse_map_options(["1=4"], Scale())
    with pytest.raises(ValueError, match="is mapped twice"):
        parse_map_options(["1=3", "1.0=2"], Scale())
