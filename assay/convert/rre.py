"""Rated Ranking Evaluator's ratings file (JSON).

RRE nests `topics` (each with a `description`) of `query_groups` (each a `name`, its `queries` and the
group's `relevant_documents`), or gives `query_groups` at the top level without topics; Quepid's RRE
export gives `queries` at the top level, each with its own `relevant_documents` (absent for a query not
rated). A query is a `template` and its `placeholders`; the text is the placeholder named by the file's
`query_placeholder` (default `$query`). `relevant_documents` takes two shapes, mixed freely:
`{"docid": {"gain": n}}` and `{"n": ["docid", ...]}`.

Read: every query of a group gets the group's ratings; queries are identified by their text (ids q-0001
...); a topic's description becomes the stratum; the other placeholders become filters (`$lang` ->
`lang`). Written: one topic per stratum (queries without one in a topic without description), one group
per query named by its id, the query template `only_q.json`, filters as placeholders.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from assay.convert.core import Draft, Problems, build, describe, read_json_object
from assay.convert.options import Converted, Options
from assay.golden.model import GoldenFile

QUERY_PLACEHOLDER = "$query"
TEMPLATE = "only_q.json"


def read_rre(path: Path, options: Options) -> Converted:
    problems = Problems()
    draft = Draft(path, problems)
    body = read_json_object(path, problems, options.data, "topics, query_groups or queries")

    def bad(where: str, message: str) -> None:
        problems.add(path, where, message)

    placeholder = body.get("query_placeholder", QUERY_PLACEHOLDER)
    if not isinstance(placeholder, str) or not placeholder:
        bad("query_placeholder", f"expected a placeholder name such as $query, got {describe(placeholder)}")
        problems.check()

    seen: dict[str, dict[str, Any]] = {}  # query id -> its filters and stratum, as first read

    def group(item: Any, where: str, stratum: str | None) -> None:
        if not isinstance(item, dict):
            bad(where, f"expected a query group object, got {describe(item)}")
            return
        ratings = _relevant_documents(
            item.get("relevant_documents"), f"{where}.relevant_documents", bad, options
        )
        queries = item.get("queries")
        if not isinstance(queries, list) or not queries:
            got = (
                "nothing"
                if queries is None
                else describe(queries)
                if not isinstance(queries, list)
                else "none"
            )
            bad(f"{where}.queries", f"expected an array of queries, got {got}")
            return
        for i, query in enumerate(queries):
            rated(query, f"{where}.queries[{i}]", ratings, stratum)

    def rated(query: Any, place: str, ratings: dict[str, tuple[int, str]], stratum: str | None) -> None:
        """One query (`template` and `placeholders`) and the ratings it gets."""
        holders = query.get("placeholders") if isinstance(query, dict) else None
        if not isinstance(holders, dict):
            bad(place, "expected an object with template and placeholders")
            return
        text = holders.get(placeholder)
        if not isinstance(text, str) or not text.strip():
            bad(f"{place}.placeholders", f"no text in {placeholder}")
            return
        fields: dict[str, Any] = {}
        filters = {key.removeprefix("$"): value for key, value in holders.items() if key != placeholder}
        if filters:
            fields["filters"] = filters
        if stratum is not None:
            fields["stratum"] = stratum
        target = draft.query_by_text(text.strip(), place)
        known = seen.setdefault(target.id, fields)
        if known is fields:
            target.fields = fields
        elif known != fields:
            bad(
                place,
                f"query {text.strip()!r} appears again (first at {target.place}) "
                "with other placeholders or topic",
            )
            return
        for doc_id, (grade, rating_place) in ratings.items():
            draft.judge(target, doc_id, grade, rating_place)

    def groups(items: Any, where: str, stratum: str | None) -> None:
        if not isinstance(items, list):
            bad(where, f"expected an array of query groups, got {describe(items)}")
            return
        for i, item in enumerate(items):
            group(item, f"{where}[{i}]", stratum)

    if "topics" in body:
        topics = body["topics"]
        if not isinstance(topics, list):
            bad("topics", f"expected an array, got {describe(topics)}")
        else:
            for t, topic in enumerate(topics):
                where = f"topics[{t}]"
                if not isinstance(topic, dict):
                    bad(where, f"expected a topic object, got {describe(topic)}")
                    continue
                description = topic.get("description", topic.get("name"))
                if description is not None and not isinstance(description, str):
                    bad(f"{where}.description", f"expected text, got {describe(description)}")
                    continue
                stratum = description.strip() or None if description is not None else None
                if "query_groups" in topic:
                    groups(topic["query_groups"], f"{where}.query_groups", stratum)
                else:  # a topic that is itself a group: its queries and relevant_documents
                    group(topic, where, stratum)
    elif "query_groups" in body:
        groups(body["query_groups"], "query_groups", None)
    elif "queries" in body:  # Quepid's RRE export: each query with its own ratings
        queries = body["queries"]
        if not isinstance(queries, list):
            bad("queries", f"expected an array of queries, got {describe(queries)}")
        for i, query in enumerate(queries if isinstance(queries, list) else ()):
            where = f"queries[{i}]"
            value = query.get("relevant_documents") if isinstance(query, dict) else None
            ratings = (
                {}
                if value is None
                else _relevant_documents(value, f"{where}.relevant_documents", bad, options)
            )
            rated(query, where, ratings, None)
    else:
        bad("", "no topics, no query_groups and no queries: not an RRE ratings file")
    return Converted(build(draft, version=options.version))


def _relevant_documents(value: Any, where: str, bad: Any, options: Options) -> dict[str, tuple[int, str]]:
    """doc id -> (grade, place) from either shape."""
    out: dict[str, tuple[int, str]] = {}
    if not isinstance(value, dict):
        bad(where, f"expected an object, got {'nothing' if value is None else describe(value)}")
        return out

    def add(doc_id: str, raw: Any, place: str) -> None:
        grade, problem = options.grades.read(raw, "gain")
        if problem is not None:
            bad(place, problem)
        elif doc_id in out:
            bad(place, f"document {doc_id!r} is rated twice in this group (first at {out[doc_id][1]})")
        else:
            assert grade is not None
            out[doc_id] = (grade, place)

    for key, item in value.items():
        place = f"{where}[{json.dumps(key, ensure_ascii=False)}]"
        if isinstance(item, dict):  # {"docid": {"gain": n}}
            raw = item.get("gain", item.get("rating"))
            if raw is None:
                bad(place, 'expected {"gain": n}')
            else:
                add(key, raw, f"{place}.gain" if "gain" in item else f"{place}.rating")
        elif isinstance(item, list):  # {"n": ["docid", ...]}
            for i, doc_id in enumerate(item):
                if not isinstance(doc_id, str) or not doc_id.strip():
                    bad(f"{place}[{i}]", f"expected a document id, got {describe(doc_id)}")
                else:
                    add(doc_id.strip(), key, f"{place}[{i}]")
        else:
            bad(place, f'expected {{"gain": n}} or an array of document ids, got {describe(item)}')
    return out


def write_rre(golden: GoldenFile, path: Path, options: Options) -> dict[Path, bytes]:
    topics: dict[str | None, list[dict[str, Any]]] = {}
    for query in golden.queries:
        holders: dict[str, Any] = {QUERY_PLACEHOLDER: query.text}
        holders.update({f"${key}": value for key, value in query.filters.items()})
        topics.setdefault(query.stratum, []).append(
            {
                "name": query.id,
                "queries": [{"template": TEMPLATE, "placeholders": holders}],
                "relevant_documents": {j.doc_id: {"gain": j.grade} for j in query.judgments},
            }
        )
    body = {
        "id_field": "id",
        "query_placeholder": QUERY_PLACEHOLDER,
        "topics": [
            ({"description": stratum} if stratum is not None else {}) | {"query_groups": groups}
            for stratum, groups in topics.items()
        ],
    }
    return {path: (json.dumps(body, indent=2, ensure_ascii=False) + "\n").encode("utf-8")}
