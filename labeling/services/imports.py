"""The imports that bring labeling data in: rubrics, documents and query logs (docs/labeling.md, "Imports").

Each validates the whole file first and writes in one transaction, so a file with any problem imports
nothing; each returns an `ImportReport` naming every problem with its place. Golden files are imported
by golden_io (`golden_io.services.golden_import`), which owns every write of the frozen labels.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import CharField, Value
from django.db.models.functions import Cast, Concat

from assay.display import counted, in_number
from assay.documents import DOCUMENT_FIELDS, parse_documents
from assay.jsonin import JsonInputError, json_loads
from assay.labels import querylog
from assay.problems import ImportReport, decode_utf8
from assay.storable import json_problem, text_problem
from labeling.models import Document, GoldenSet, Query, Rubric, content_hash

# --- rubric -------------------------------------------------------------------------------------


def rubric_import(*, data: bytes, source: str) -> tuple[Rubric | None, ImportReport]:
    """A rubric from its JSON file; re-importing identical content is a no-op, other content is refused."""
    report = ImportReport(kind="rubric", source=source)
    text = decode_utf8(data, report)
    if text is None:
        return None, report
    try:
        obj = json_loads(text)
    except JsonInputError as exc:
        if exc.syntax:
            report.add(f"line {exc.line}", f"malformed JSON at column {exc.column}: {exc.detail}")
        else:
            report.add("file", str(exc))
        return None, report
    fields = _rubric_fields(obj, report)
    if fields is None:
        return None, report
    existing = Rubric.objects.filter(name=fields["name"], version=fields["version"]).first()
    if existing is not None:
        same = (existing.scale_min, existing.scale_max, existing.grades) == (
            fields["scale_min"],
            fields["scale_max"],
            fields["grades"],
        )
        if not same:
            report.add(
                "version",
                f"rubric {existing} exists with other content; a change to a rubric is a new version",
            )
            return None, report
        report.count("rubrics unchanged")
        return existing, report
    rubric = Rubric.objects.create(**fields)
    report.count("rubrics created")
    return rubric, report


def _rubric_fields(obj: object, report: ImportReport) -> dict[str, Any] | None:
    if not isinstance(obj, dict):
        report.add("file", "expected a JSON object with name, version, scale and grades")
        return None
    name, version, scale, grades = (obj.get(k) for k in ("name", "version", "scale", "grades"))
    if not isinstance(name, str) or not name.strip():
        report.add("name", f"expected a non-empty name, found {name!r}")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        report.add("version", f"expected an integer >= 1, found {version!r}")
    lo = scale.get("min") if isinstance(scale, dict) else None
    hi = scale.get("max") if isinstance(scale, dict) else None
    if not (isinstance(lo, int) and isinstance(hi, int) and _is_int(lo) and _is_int(hi) and lo < hi):
        report.add("scale", f'expected {{"min": int, "max": int}} with min < max, found {scale!r}')
        return None
    if not isinstance(grades, list):
        report.add("grades", "expected a list with one entry per grade of the scale")
        return None
    seen: set[int] = set()
    for i, entry in enumerate(grades):
        where = f"grades[{i}]"
        if not isinstance(entry, dict):
            report.add(where, "expected an object")
            continue
        grade = entry.get("grade")
        if not isinstance(grade, int) or not _is_int(grade) or not lo <= grade <= hi:
            report.add(f"{where}.grade", f"{grade!r} is outside the scale {lo}..{hi}")
        elif grade in seen:
            report.add(f"{where}.grade", f"grade {grade} is described twice")
        else:
            seen.add(grade)
        for key in ("label", "meaning"):
            if not isinstance(entry.get(key), str) or not entry[key].strip():
                report.add(f"{where}.{key}", "expected non-empty text")
        for key in ("positive_examples", "negative_examples"):
            examples = entry.get(key)
            if (
                not isinstance(examples, list)
                or len(examples) < 3
                or not all(isinstance(e, str) for e in examples)
            ):
                report.add(f"{where}.{key}", "expected at least three examples (text)")
    missing = sorted(set(range(lo, hi + 1)) - seen)
    if missing and all(isinstance(e, dict) for e in grades):
        report.add(
            "grades",
            f"no description for {in_number(len(missing), 'grade')} {', '.join(map(str, missing))}",
        )
    if not report.ok:
        return None
    return {
        "name": name.strip(),  # type: ignore[union-attr]
        "version": version,
        "scale_min": lo,
        "scale_max": hi,
        "grades": sorted(grades, key=lambda g: -g["grade"]),
    }


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# --- documents ----------------------------------------------------------------------------------


@transaction.atomic
def documents_import(*, golden_set: GoldenSet, data: bytes, source: str) -> ImportReport:
    """Documents from JSONL (`id`, `title` required; `key`, `url`, `snippet`, `body`, `fields`), upserted
    by id; a changed document gets a new content hash."""
    report = ImportReport(kind="documents", source=source)
    text = decode_utf8(data, report)
    if text is None:
        return report
    rows, lines = parse_documents(text, report, _document_storable)
    plan = _documents_plan(golden_set, rows, lines, report)
    if plan is None:
        return report
    to_create: list[Document] = []
    to_update: list[Document] = []
    renamed: list[str] = []
    moving: list[int] = []  # documents whose id or key changes
    for doc_id, row in rows.items():
        digest = content_hash(row)
        doc = plan.get(doc_id)
        if doc is None:
            to_create.append(Document(golden_set=golden_set, content_hash=digest, **row))
        elif doc.doc_id != doc_id or doc.content_hash != digest or doc.key != row["key"]:
            if doc.doc_id != doc_id:
                renamed.append(f"{doc.doc_id} → {doc_id} (key {row['key']})")
            if doc.doc_id != doc_id or doc.key != row["key"]:
                moving.append(doc.pk)
            for name, value in row.items():
                setattr(doc, name, value)
            doc.content_hash = digest
            to_update.append(doc)
    # Two phases, so the unique (set, doc_id) and (set, key) indexes hold at every step: first every
    # changing document lets go of its id and key (a space-led id no import can produce), then all take
    # their new ones. Renames can chain (d1 → d2 while d2 → d3) or swap.
    Document.objects.filter(pk__in=moving).update(
        doc_id=Concat(Value(" renaming "), Cast("pk", output_field=CharField())), key=None
    )
    Document.objects.bulk_update(to_update, [*DOCUMENT_FIELDS[1:], "doc_id", "content_hash"], batch_size=500)
    Document.objects.bulk_create(to_create, batch_size=500)
    if renamed:
        report.notes.append(
            f"renamed {counted(len(renamed), 'document')}, following their durable keys (their judgments"
            " and labels follow): "
            + ", ".join(renamed[:50])
            + (f" and {len(renamed) - 50} more" if len(renamed) > 50 else "")
        )
    report.count("documents renamed", len(renamed))
    report.count("documents created", len(to_create))
    report.count("documents updated", len(to_update) - len(renamed))
    report.count("documents unchanged", len(rows) - len(to_create) - len(to_update))
    return report


def _documents_plan(
    golden_set: GoldenSet, rows: dict[str, dict[str, Any]], lines: dict[str, int], report: ImportReport
) -> dict[str, Document | None] | None:
    """Which stored document each row of the file is (None: a new one); None when that is ambiguous.

    The durable key decides first: a row whose key a stored document holds is that document, renamed
    to the row's id when the ids differ (a re-ingest that renumbered ids). Otherwise the id decides: a
    stored document with the row's id is that row, unless another row claimed it by its key (then the
    row is a new document). A stored document that keeps its id in the file but is claimed by no row
    would end up sharing that id with another document: a problem, and nothing is imported.
    """
    stored = {d.doc_id: d for d in golden_set.documents.all()}
    by_key = {d.key: d for d in stored.values() if d.key}
    plan: dict[str, Document | None] = {}
    claimed: set[int] = set()
    for doc_id, row in rows.items():
        owner = by_key.get(row["key"]) if row["key"] else None
        if owner is not None:
            plan[doc_id] = owner
            claimed.add(owner.pk)
    for doc_id in rows:
        if doc_id not in plan:
            doc = stored.get(doc_id)
            plan[doc_id] = doc if doc is not None and doc.pk not in claimed else None
    for doc_id in rows:
        doc = stored.get(doc_id)
        taker = plan[doc_id]
        if doc is not None and doc.pk not in claimed and taker is not None and taker.pk != doc.pk:
            report.add(
                f"line {lines[doc_id]}: key",
                f"key {rows[doc_id]['key']!r} belongs to stored document {taker.doc_id!r}, but id"
                f" {doc_id!r} is another stored document's (key {doc.key!r}), which this file does not"
                f" list: renaming {taker.doc_id!r} to {doc_id!r} would give two documents one id",
            )
    return plan if report.ok else None


def _document_storable(row: dict[str, Any], where: str, report: ImportReport) -> bool:
    """Whether the columns hold every value of the row (their lengths, no NUL; no control character in
    an id, key, title or URL), reporting each one they would not, by its name in the file."""
    ok = True
    for column, name in (("doc_id", "id"), ("key", "key"), ("title", "title"), ("url", "url")):
        if row[column] is None:
            continue
        limit = getattr(Document._meta.get_field(column), "max_length", None)
        problem = text_problem(row[column], limit)
        if problem:
            report.add(f"{where}: {name}", problem)
            ok = False
    for name in ("snippet", "body"):
        problem = text_problem(row[name], free_text=True)
        if problem:
            report.add(f"{where}: {name}", problem)
            ok = False
    problem = json_problem(row["fields"], "fields")
    if problem:
        report.add(where, problem)
        ok = False
    return ok


# --- query logs ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SamplingOptions:
    cap: int  # the most active queries the golden set may hold after the import
    reserve_share: float = querylog.DEFAULT_RESERVE_SHARE
    zero_hit_min_share: float = querylog.DEFAULT_ZERO_HIT_MIN_SHARE
    band_shares: Mapping[str, float] | None = None
    seed: int = 0


@transaction.atomic
def query_log_import(
    *, golden_set: GoldenSet, data: bytes, source: str, options: SamplingOptions
) -> ImportReport:
    """Sample new queries from a production log into the set (see `assay.labels.querylog` for the rules).

    The cap is on the set: the sample fills the set up to `cap` active queries. Queries already in the
    set (same locale and normalised text, or the same log id) are not sampled again; they get the
    traffic band this log gives them, and the log's vertical as their stratum if they have none. A stratum
    is always a vertical: the band has its own field (docs/labeling.md, "Query logs").
    """
    report = ImportReport(kind="query log", source=source)
    if options.cap < 1:
        report.add("cap", f"the cap must be at least 1, got {options.cap}")
    if not 0 <= options.reserve_share <= 1:
        report.add("reserve_share", f"must be between 0 and 1, got {options.reserve_share}")
    rows = querylog.parse_log(data, name=source, report=report)
    if not report.ok:
        return report
    cleaned = querylog.clean(rows)
    report.count("rows read", cleaned.rows)
    for kind in querylog.PII_KINDS:
        report.count(f"PII removed: {kind}", cleaned.pii.get(kind, 0))
    report.count("rows with PII", cleaned.queries_with_pii)
    report.samples = cleaned.samples
    report.count("rows empty after removing PII", cleaned.empty_after_stripping)
    report.count("blank rows", cleaned.blank)
    report.count("duplicates merged", cleaned.duplicates_merged)
    report.count("distinct queries", len(cleaned.queries))
    if cleaned.several_verticals:
        report.notes.append(
            f"{cleaned.several_verticals} queries were logged under several verticals: each keeps the one"
            " most of its searches were logged under"
        )
    in_scope = [q for q in cleaned.queries if not q.locale or golden_set.in_scope(q.locale)]
    report.count("outside the locale scope", len(cleaned.queries) - len(in_scope))
    # Bands over all the set's traffic in the log, queries already in the set included.
    bands = querylog.assign_bands(in_scope)
    known = _known_log_queries(golden_set, in_scope)
    fresh = [q for q in in_scope if q not in known]
    report.count("already in the golden set", len(in_scope) - len(fresh))
    _known_queries_refresh(known, bands, report)
    active = golden_set.queries.filter(status=Query.Status.ACTIVE).count()
    room = max(0, options.cap - active)
    if room == 0:
        report.notes.append(f"the golden set already holds {active} active queries, the cap is {options.cap}")
    result = querylog.sample(
        fresh,
        cap=room,
        reserve_share=options.reserve_share,
        band_shares=options.band_shares,
        zero_hit_min_share=options.zero_hit_min_share,
        seed=options.seed,
        bands=bands,
    )
    for band in querylog.BANDS:
        report.count(f"sampled from {band}", result.taken[band])
        report.notes.append(f"{band}: {result.taken[band]} sampled of {result.available[band]}")
    report.count("known failures reserved", result.taken["reserved"])
    report.notes.append(
        f"known failures (zero hits in >= {options.zero_hit_min_share:.0%} of searches): "
        f"{result.taken['reserved']} reserved of {result.available['failures']}"
    )
    Query.objects.bulk_create(
        [
            Query(
                golden_set=golden_set,
                external_id=s.query.external_id,
                text=s.query.text,
                locale=s.query.locale,
                stratum=s.query.vertical,
                traffic_band=s.band,
                failure_mode=s.failure_mode or "",
                weight=float(s.query.count),
                tags=["from-log"] + (["known-failure"] if s.reserved else []),
            )
            for s in result.selected
        ]
    )
    report.count("queries created", len(result.selected))
    return report


def _known_log_queries(
    golden_set: GoldenSet, logged: list[querylog.LogQuery]
) -> dict[querylog.LogQuery, list[Query]]:
    """The log's queries the set holds already (same locale and normalised text, or the same log id),
    each with the stored queries it is: a golden file may hold one text twice, with different filters."""
    by_text: dict[tuple[str, str], list[Query]] = {}
    by_id: dict[str, Query] = {}
    for query in golden_set.queries.all():
        by_text.setdefault((query.locale, querylog.normalize(query.text)), []).append(query)
        by_id[query.external_id] = query
    known: dict[querylog.LogQuery, list[Query]] = {}
    for q in logged:
        same = by_text.get((q.locale, q.norm), [])
        if q.external_id in by_id and by_id[q.external_id] not in same:
            same = [*same, by_id[q.external_id]]
        if same:
            known[q] = same
    return known


def _known_queries_refresh(
    known: Mapping[querylog.LogQuery, list[Query]],
    bands: Mapping[querylog.LogQuery, str],
    report: ImportReport,
) -> None:
    """Stored queries the log names again: their band follows the log, an empty stratum takes the log's
    vertical, a stratum already set is kept (a reviewer's vertical is never overwritten by a log)."""
    changed: list[Query] = []
    banded = filled = kept = 0
    for logged, queries in known.items():
        for query in queries:
            dirty = False
            if query.traffic_band != bands[logged]:
                query.traffic_band = bands[logged]
                banded += 1
                dirty = True
            if logged.vertical and not query.stratum:
                query.stratum = logged.vertical
                filled += 1
                dirty = True
            elif logged.vertical and query.stratum != logged.vertical:
                kept += 1
            if dirty:
                changed.append(query)
    Query.objects.bulk_update(changed, ["traffic_band", "stratum"], batch_size=500)
    report.count("traffic bands updated", banded)
    report.count("strata filled from the log's vertical", filled)
    if kept:
        report.notes.append(f"{kept} queries keep a stratum other than the vertical the log gives them")
