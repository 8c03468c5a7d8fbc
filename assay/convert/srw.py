"""The Search Relevance Workbench's judgments import body (OpenSearch):
`{"name", "type": "IMPORT_JUDGMENT", "judgmentRatings": [{"query", "ratings": [{"docId", "rating"}]}]}`,
ratings as numbers or numeric strings. Queries are identified by their text (ids q-0001 ...)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from assay.convert.core import Draft, Problems, build, describe, plain_version, read_json_object
from assay.convert.options import Converted, Options
from assay.golden.model import GoldenFile

IMPORT_TYPE = "IMPORT_JUDGMENT"


def read_srw_json(path: Path, options: Options) -> Converted:
    problems = Problems()
    draft = Draft(path, problems)
    body = read_json_object(path, problems, options.data, "judgmentRatings")

    def bad(where: str, message: str) -> None:
        problems.add(path, where, message)

    if body.get("type", IMPORT_TYPE) != IMPORT_TYPE:
        bad("type", f"{json.dumps(body['type'])} is not {IMPORT_TYPE}")
    name = body.get("name")
    if name is not None and not isinstance(name, str):
        bad("name", f"expected a string, got {describe(name)}")
    entries = body.get("judgmentRatings")
    if not isinstance(entries, list):
        bad(
            "judgmentRatings", f"expected an array, got {'nothing' if entries is None else describe(entries)}"
        )
        problems.check()
    for i, entry in enumerate(entries):
        where = f"judgmentRatings[{i}]"
        if not isinstance(entry, dict):
            bad(where, f"expected an object with query and ratings, got {describe(entry)}")
            continue
        text = entry.get("query")
        if not isinstance(text, str) or not text.strip():
            bad(
                f"{where}.query",
                "expected the query's text" if text is None else f"expected text, got {_shown(text)}",
            )
            continue
        ratings = entry.get("ratings")
        if not isinstance(ratings, list):
            bad(
                f"{where}.ratings",
                f"expected an array, got {'nothing' if ratings is None else describe(ratings)}",
            )
            continue
        query = draft.query_by_text(text.strip(), where)
        for j, rating in enumerate(ratings):
            place = f"{where}.ratings[{j}]"
            if not isinstance(rating, dict):
                bad(place, f"expected an object with docId and rating, got {describe(rating)}")
                continue
            doc_id = rating.get("docId")
            if not isinstance(doc_id, str) or not doc_id.strip():
                bad(
                    f"{place}.docId",
                    "missing" if doc_id is None else f"expected a document id, got {_shown(doc_id)}",
                )
                continue
            if "rating" not in rating:
                bad(f"{place}.rating", "missing")
                continue
            grade, problem = options.grades.read(rating["rating"])
            if problem is not None:
                bad(f"{place}.rating", problem)
                continue
            assert grade is not None
            draft.judge(query, doc_id.strip(), grade, place)
    if version := plain_version(name):
        draft.header["version"] = version
    return Converted(build(draft, version=options.version))


def _shown(value: Any) -> str:
    return json.dumps(value) if isinstance(value, str) else describe(value)


def write_srw_json(golden: GoldenFile, path: Path, options: Options) -> dict[Path, bytes]:
    body = {
        "name": golden.version,
        "type": IMPORT_TYPE,
        "judgmentRatings": [
            {
                "query": query.text,
                "ratings": [{"docId": j.doc_id, "rating": str(j.grade)} for j in query.judgments],
            }
            for query in golden.queries
        ],
    }
    return {path: (json.dumps(body, indent=2, ensure_ascii=False) + "\n").encode("utf-8")}
