"""Everything that writes labeling rows: imports, pools, assignments, grading.

Imports validate the whole file first and write in one transaction, so a file with any problem imports
nothing; each returns an `ImportReport` naming every problem with its place.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

from django.contrib.auth.models import User
from django.db import IntegrityError, connection, transaction
from django.db.models import CharField, Count, Q, Value
from django.db.models.functions import Cast, Concat
from django.utils import timezone

from assay.golden.model import Scale
from assay.labels import querylog
from assay.labels.disputes import DocGrades, Thresholds, choose_third_rater, query_dispute
from assay.problems import ImportReport, decode_utf8
from labeling.models import (
    Adjudication,
    Assignment,
    Candidate,
    DisputeCheck,
    Document,
    FrozenLabel,
    GoldenSet,
    GoldItem,
    Judgment,
    JudgmentEvent,
    LabelProposal,
    Query,
    Rubric,
    TierMove,
    content_hash,
)
from labeling.selectors import DUAL_KINDS, count_subquery

POOL_DEPTH = 20
JUDGED_SYSTEM = "judged"  # provenance of a document that was judged for the query before
MAX_NOTE = 2000
# Kinds scoped to some candidates of the pool, always given to a rater who never held the query.
SCOPED_KINDS = (Assignment.Kind.THIRD, Assignment.Kind.REJUDGE, Assignment.Kind.GOLD)
# One save never counts more than this: a tab left open over lunch is not ten minutes of judging.
MAX_TIME_PER_SAVE_MS = 10 * 60 * 1000


# --- rubric -------------------------------------------------------------------------------------


def rubric_import(*, data: bytes, source: str) -> tuple[Rubric | None, ImportReport]:
    """A rubric from its JSON file; re-importing identical content is a no-op, other content is refused."""
    report = ImportReport(kind="rubric", source=source)
    text = decode_utf8(data, report)
    if text is None:
        return None, report
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        report.add(f"line {exc.lineno}", f"malformed JSON at column {exc.colno}: {exc.msg}")
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
        report.add("grades", f"no description for grade(s) {', '.join(map(str, missing))}")
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

_DOC_KEYS = ("id", "key", "title", "url", "snippet", "body", "fields")


@transaction.atomic
def documents_import(*, golden_set: GoldenSet, data: bytes, source: str) -> ImportReport:
    """Documents from JSONL (`id`, `title` required; `key`, `url`, `snippet`, `body`, `fields`), upserted
    by id; a changed document gets a new content hash."""
    report = ImportReport(kind="documents", source=source)
    text = decode_utf8(data, report)
    if text is None:
        return report
    rows: dict[str, dict[str, Any]] = {}
    lines: dict[str, int] = {}
    key_lines: dict[str, tuple[int, str]] = {}
    ignored: Counter[str] = Counter()
    for line, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        row = _document_row(raw, f"line {line}", report, ignored)
        if row is None:
            continue
        doc_id = row["doc_id"]
        if doc_id in lines:
            report.add(f"line {line}: id", f"duplicate id {doc_id!r} (first on line {lines[doc_id]})")
            continue
        if row["key"] is not None:
            if row["key"] in key_lines:
                first_line, first_id = key_lines[row["key"]]
                report.add(
                    f"line {line}: key",
                    f"duplicate key {row['key']!r} (also {first_id!r} on line {first_line})",
                )
                continue
            key_lines[row["key"]] = (line, doc_id)
        lines[doc_id] = line
        rows[doc_id] = row
    if not rows and report.ok:
        report.add("file", "no documents found")
    if len(report.problems) > 1 and _is_one_json_document(text):
        report.problems[:] = []
        report.add("file", "this is one JSON document; documents come as JSONL, one JSON object per line")
    if ignored:
        report.notes.append(
            "ignored field(s): " + ", ".join(f"{k} ({n}x)" for k, n in sorted(ignored.items()))
        )
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
    Document.objects.bulk_update(to_update, [*_DOC_KEYS[1:], "doc_id", "content_hash"], batch_size=500)
    Document.objects.bulk_create(to_create, batch_size=500)
    if renamed:
        report.notes.append(
            f"renamed {len(renamed)} document(s), following their durable keys (their judgments and labels"
            " follow): "
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


def _is_one_json_document(text: str) -> bool:
    try:
        json.loads(text)
    except json.JSONDecodeError:
        return False
    return True


def _document_row(raw: str, where: str, report: ImportReport, ignored: Counter[str]) -> dict[str, Any] | None:
    try:
        obj = json.loads(raw)
    except json.JSONDecodeError as exc:
        report.add(where, f"malformed JSON at column {exc.colno}: {exc.msg}")
        return None
    if not isinstance(obj, dict):
        report.add(where, f"expected a JSON object, found {type(obj).__name__}")
        return None
    ok = True
    doc_id = obj.get("id")
    if _is_int(doc_id):
        doc_id = str(doc_id)
    if not isinstance(doc_id, str) or not doc_id.strip():
        report.add(f"{where}: id", f"missing or empty id (found {obj.get('id')!r})")
        ok = False
    if not isinstance(obj.get("title"), str) or not obj["title"].strip():
        report.add(f"{where}: title", f"missing or empty title (found {obj.get('title')!r})")
        ok = False
    for name in ("url", "snippet", "body"):
        if obj.get(name) is not None and not isinstance(obj[name], str):
            report.add(f"{where}: {name}", f"expected text, found {type(obj[name]).__name__}")
            ok = False
    key = obj.get("key")
    if key is not None and (not isinstance(key, str) or not key.strip()):
        report.add(f"{where}: key", f"expected a non-empty text key or null, found {key!r}")
        ok = False
    fields = obj.get("fields", {})
    if not isinstance(fields, dict):
        report.add(f"{where}: fields", f"expected an object, found {type(fields).__name__}")
        ok = False
    ignored.update(k for k in obj if k not in _DOC_KEYS)
    if not ok:
        return None
    return {
        "doc_id": doc_id.strip(),  # type: ignore[union-attr]
        "key": key.strip() if isinstance(key, str) else None,
        "title": obj["title"].strip(),
        "url": obj.get("url") or "",
        "snippet": obj.get("snippet") or "",
        "body": obj.get("body") or "",
        "fields": fields,
    }


# --- golden files -------------------------------------------------------------------------------


@transaction.atomic
def golden_import(*, golden_set: GoldenSet, data: bytes, source: str) -> ImportReport:
    """A golden file into the set: its queries (created or updated by id) and its judgments, which become
    the set's current frozen labels (replacing the previous ones). Every judged document must already be a
    document of the set."""
    from assay.golden.format import GoldenFormatError, parse

    report = ImportReport(kind="golden", source=source)
    try:
        golden = parse(data)
    except GoldenFormatError as exc:
        for problem in exc.problems:
            report.add(problem.where, problem.message)
        return report
    rubric = golden_set.rubric
    if (golden.scale.min, golden.scale.max) != (rubric.scale_min, rubric.scale_max):
        report.add(
            "scale",
            f"the file's scale {golden.scale} differs from rubric {rubric}'s scale "
            f"{rubric.scale_min}..{rubric.scale_max}",
        )
    if golden.rubric and golden.rubric != str(rubric):
        report.add(
            "rubric", f"the file was judged with rubric {golden.rubric}, this golden set uses {rubric}"
        )
    documents = {d.doc_id: d for d in golden_set.documents.all()}
    key_owners = {d.key: d.doc_id for d in documents.values() if d.key}
    new_keys: dict[str, str] = {}  # doc id -> the key the file gives a document that has none
    for i, q in enumerate(golden.queries):
        if q.locale and not golden_set.in_scope(q.locale):
            report.add(
                f"queries[{i}].locale",
                f"query {q.id}: locale {q.locale} is outside the golden set's scope "
                f"({', '.join(golden_set.locales)})",
            )
        for j, judgment in enumerate(q.judgments):
            doc = documents.get(judgment.doc_id)
            where = f"queries[{i}].judgments[{j}]"
            if doc is None:
                report.add(
                    f"{where}.doc_id",
                    f"query {q.id}: {judgment.doc_id} is not a document of golden set {golden_set.slug} "
                    "(import its documents first)",
                )
            elif judgment.key and doc.key and judgment.key != doc.key:
                report.add(
                    f"{where}.key", f"query {q.id}: key {judgment.key} differs from the document's {doc.key}"
                )
            elif judgment.key and not doc.key:
                _key_to_set(new_keys, key_owners, doc, judgment.key, f"{where}.key", f"query {q.id}", report)
    if not report.ok:
        return report
    # A judgment's durable key is kept on its document when the document had none, so that it survives
    # a later re-ingest that renumbers ids (the document import follows keys).
    for doc_id, key in new_keys.items():
        Document.objects.filter(pk=documents[doc_id].pk).update(key=key)
        documents[doc_id].key = key
    report.count("document keys set", len(new_keys))
    existing = {q.external_id: q for q in golden_set.queries.all()}
    created = updated = reopened = 0
    for q in golden.queries:
        values = {
            "text": q.text,
            "locale": q.locale or "",
            "filters": dict(q.filters),
            "stratum": q.stratum or "",
            "weight": q.weight,
            "tier": q.tier,
            "status": Query.Status.ACTIVE,
            "expect_empty": q.expect_empty,
            "critical": q.critical,
            "tags": list(q.tags),
        }
        row = existing.get(q.id)
        if row is None:
            existing[q.id] = Query.objects.create(golden_set=golden_set, external_id=q.id, **values)
            created += 1
        elif any(getattr(row, k) != v for k, v in values.items()):
            if (row.tier, row.status) != (q.tier, Query.Status.ACTIVE):
                # The file's tiers are authoritative; the move is recorded like any other.
                TierMove.objects.create(
                    query=row,
                    by=None,
                    from_tier=row.tier,
                    to_tier=q.tier,
                    from_status=row.status,
                    to_status=Query.Status.ACTIVE,
                    reason=f"golden file import {source} (version {golden.version})",
                )
            Query.objects.filter(pk=row.pk).update(**values)
            if row.status == Query.Status.RETIRED:
                reopened += _retired_work_reopen(query=row)
            updated += 1
    replaced = FrozenLabel.objects.filter(query__golden_set=golden_set).delete()[0]
    labels = [
        FrozenLabel(query=existing[q.id], document=documents[j.doc_id], grade=j.grade, version=golden.version)
        for q in golden.queries
        for j in q.judgments
    ]
    FrozenLabel.objects.bulk_create(labels, batch_size=1000)
    changes = {"k": golden.k, "relevant_min_grade": golden.relevant_min_grade}
    for name, value in changes.items():
        if getattr(golden_set, name) != value:
            report.notes.append(f"golden set {name} changed from {getattr(golden_set, name)} to {value}")
            setattr(golden_set, name, value)
    golden_set.frozen_version = golden.version
    golden_set.save(update_fields=["k", "relevant_min_grade", "frozen_version"])
    report.count("queries created", created)
    report.count("queries updated", updated)
    report.count("queries unchanged", len(golden.queries) - created - updated)
    if reopened:
        report.count("assignments of returning queries reopened", reopened)
    report.count("frozen labels", len(labels))
    report.count("previous frozen labels replaced", replaced)
    report.count("pool candidates added", pool_add_judged(golden_set=golden_set))
    unlabeled = [q.id for q in golden.queries if not q.has_positive_judgment and not q.expect_empty]
    if unlabeled:
        report.notes.append(f"no judgment at grade >= 1 (no_positive_judgments): {', '.join(unlabeled)}")
    return report


def _key_to_set(
    new_keys: dict[str, str],
    key_owners: dict[str, str],
    doc: Document,
    key: str,
    where: str,
    what: str,
    report: ImportReport,
) -> None:
    """Plan giving `doc` (which has no key) the judgment's `key`, or report why it cannot have it."""
    owner = key_owners.get(key)
    planned = new_keys.get(doc.doc_id)
    if owner is not None and owner != doc.doc_id:
        report.add(where, f"{what}: key {key} belongs to document {owner}, not {doc.doc_id}")
    elif planned is not None and planned != key:
        report.add(where, f"{what}: key {key} for {doc.doc_id}, which another judgment keys {planned}")
    else:
        new_keys[doc.doc_id] = key
        key_owners[key] = doc.doc_id


# --- query logs ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SamplingOptions:
    cap: int  # the most active queries the golden set may hold after the import
    reserve_share: float = querylog.DEFAULT_RESERVE_SHARE
    zero_hit_min_share: float = querylog.DEFAULT_ZERO_HIT_MIN_SHARE
    stratum_shares: Mapping[str, float] | None = None
    seed: int = 0


@transaction.atomic
def query_log_import(
    *, golden_set: GoldenSet, data: bytes, source: str, options: SamplingOptions
) -> ImportReport:
    """Sample new queries from a production log into the set (see `assay.labels.querylog` for the rules).

    The cap is on the set: the sample fills the set up to `cap` active queries. Queries already in the
    set (same locale and normalised text) are not sampled again.
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
    report.count("rows empty after removing PII", cleaned.empty_after_stripping)
    report.count("blank rows", cleaned.blank)
    report.count("duplicates merged", cleaned.duplicates_merged)
    report.count("distinct queries", len(cleaned.queries))
    in_scope = [q for q in cleaned.queries if not q.locale or golden_set.in_scope(q.locale)]
    report.count("outside the locale scope", len(cleaned.queries) - len(in_scope))
    known = {(q.locale, querylog.normalize(q.text)) for q in golden_set.queries.all()}
    known_ids = set(golden_set.queries.values_list("external_id", flat=True))
    fresh = [q for q in in_scope if (q.locale, q.norm) not in known and q.external_id not in known_ids]
    report.count("already in the golden set", len(in_scope) - len(fresh))
    active = golden_set.queries.filter(status=Query.Status.ACTIVE).count()
    room = max(0, options.cap - active)
    if room == 0:
        report.notes.append(f"the golden set already holds {active} active queries, the cap is {options.cap}")
    result = querylog.sample(
        fresh,
        cap=room,
        reserve_share=options.reserve_share,
        stratum_shares=options.stratum_shares,
        zero_hit_min_share=options.zero_hit_min_share,
        seed=options.seed,
    )
    for stratum in querylog.STRATA:
        report.count(f"sampled from {stratum}", result.taken[stratum])
        report.notes.append(f"{stratum}: {result.taken[stratum]} sampled of {result.available[stratum]}")
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
                stratum=s.stratum,
                weight=float(s.query.count),
                tags=["from-log"] + (["known-failure"] if s.reserved else []),
            )
            for s in result.selected
        ]
    )
    report.count("queries created", len(result.selected))
    return report


# --- candidate pools ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PoolEntry:
    document: Document
    system: str
    rank: int | None  # None: no system ranked it (judged before, queued by hand)


def candidates_add(*, query: Query, entries: Iterable[PoolEntry]) -> int:
    """Add entries to one query's pool (issue 6 queues unjudged documents through this)."""
    return pool_merge(pools={query.pk: list(entries)})


@transaction.atomic
def pool_merge(*, pools: Mapping[int, Sequence[PoolEntry]]) -> int:
    """Union the entries into the pools of the given query ids; returns how many candidates are new.

    A system appears once per candidate: a rebuilt pool replaces that system's rank instead of adding a
    second entry, so rebuilding is idempotent. Open work is kept honest: a finished assignment whose pool
    grew is open again.
    """
    existing = {
        (c.query_id, c.document_id): c for c in Candidate.objects.filter(query_id__in=list(pools)).order_by()
    }
    new: dict[tuple[int, int], Candidate] = {}
    changed: dict[int, Candidate] = {}
    for query_id, entries in pools.items():
        for entry in entries:
            pair = (query_id, entry.document.pk)
            candidate = existing.get(pair) or new.get(pair)
            if candidate is None:
                candidate = new[pair] = Candidate(query_id=query_id, document=entry.document, provenance=[])
            merged = [p for p in candidate.provenance if p["system"] != entry.system]
            merged.append({"system": entry.system, "rank": entry.rank})
            merged.sort(key=lambda p: p["system"])
            if merged != candidate.provenance:
                candidate.provenance = merged
                ranks = [p["rank"] for p in merged if p["rank"] is not None]
                candidate.best_rank = min(ranks) if ranks else None
                if candidate.pk:
                    changed[candidate.pk] = candidate
    Candidate.objects.bulk_create(new.values(), batch_size=1000)
    Candidate.objects.bulk_update(changed.values(), ["provenance", "best_rank"], batch_size=1000)
    grown = {query_id for query_id, _ in new}
    if grown:
        Assignment.objects.filter(
            query_id__in=grown, status=Assignment.Status.DONE, scope__isnull=True
        ).update(status=Assignment.Status.OPEN, completed=None)
    return len(new)


def pool_add_judged(*, golden_set: GoldenSet) -> int:
    """Every document judged for a query before (frozen labels, raters' judgments) joins its pool."""
    pools: dict[int, list[PoolEntry]] = {}
    for label in FrozenLabel.objects.filter(query__golden_set=golden_set).select_related("document"):
        pools.setdefault(label.query_id, []).append(PoolEntry(label.document, JUDGED_SYSTEM, None))
    judged = Judgment.objects.filter(assignment__query__golden_set=golden_set).select_related(
        "document", "assignment"
    )
    for judgment in judged:
        pools.setdefault(judgment.assignment.query_id, []).append(
            PoolEntry(judgment.document, JUDGED_SYSTEM, None)
        )
    return pool_merge(pools=pools)


def _pools_from_rankings(
    *,
    golden_set: GoldenSet,
    rankings: Mapping[str, Sequence[str]],
    system: str,
    depth: int,
    report: ImportReport,
    where: str,
) -> dict[int, list[PoolEntry]]:
    """Top `depth` of each ranking as pool entries; unknown documents are problems, unknown queries notes."""
    queries = {q.external_id: q.pk for q in golden_set.queries.all()}
    documents = {d.doc_id: d for d in golden_set.documents.all()}
    pools: dict[int, list[PoolEntry]] = {}
    unknown_queries = sorted(set(rankings) - set(queries))
    if unknown_queries:
        report.notes.append(
            f"{len(unknown_queries)} query id(s) not in the golden set, skipped: "
            + ", ".join(unknown_queries[:20])
        )
    for qid in sorted(set(rankings) & set(queries)):
        for rank, doc_id in enumerate(list(rankings[qid])[:depth], start=1):
            doc = documents.get(doc_id)
            if doc is None:
                report.add(
                    f"{where} query {qid} rank {rank}",
                    f"{doc_id} is not a document of golden set {golden_set.slug} "
                    "(import the documents first)",
                )
                continue
            pools.setdefault(queries[qid], []).append(PoolEntry(doc, system, rank))
    return pools


def pool_import_run(
    *, golden_set: GoldenSet, data: bytes, source: str, system: str | None = None, depth: int = POOL_DEPTH
) -> ImportReport:
    """One system's top `depth` per query from a TREC run file, plus the judged documents."""
    from assay.golden.trec import TrecFormatError, read_run

    report = ImportReport(kind="run", source=source)
    system = (system or PurePath(source).stem).strip()
    if not system:
        report.add("system", "name the system this run comes from")
    text = decode_utf8(data, report)
    if text is None or not report.ok:
        return report
    try:
        run = read_run(text)
    except TrecFormatError as exc:
        for problem in exc.problems:
            where, sep, message = problem.partition(": ")
            report.add(where if sep else "", message if sep else problem)
        return report
    rankings = {qid: list(run[qid]) for qid in run}
    return pool_import_rankings(
        golden_set=golden_set, rankings=rankings, system=system, depth=depth, report=report
    )


@dataclass(frozen=True, slots=True)
class _HarnessQuery:
    id: str
    text: str
    locale: str | None
    filters: Mapping[str, Any] = field(default_factory=dict)


def pool_fetch(
    *,
    golden_set: GoldenSet,
    url: str,
    system: str,
    depth: int = POOL_DEPTH,
    params: Mapping[str, Any] | None = None,
    adapter: str = "http_json",
    concurrency: int = 8,
) -> ImportReport:
    """One system's top `depth` for every active query, by calling its search endpoint with the harness.
    A query the endpoint failed to answer is a problem: nothing is written then (rerun when it is up)."""
    from assay.harness import HarnessConfig, search_all_sync

    report = ImportReport(kind="run", source=f"{system} at {url}")
    queries = [
        _HarnessQuery(q.external_id, q.text, q.locale or None, q.filters)
        for q in golden_set.queries.filter(status=Query.Status.ACTIVE).order_by("external_id")
    ]
    config = HarnessConfig(
        url=url, adapter=adapter, size=depth, params=dict(params or {}), concurrency=concurrency
    )
    results = search_all_sync(queries, config)
    for result in results:
        if result.error:
            report.add(f"query {result.query_id}", f"search failed: {result.error}")
    if not report.ok:
        return report
    rankings = {r.query_id: list(r.ids) for r in results}
    return pool_import_rankings(
        golden_set=golden_set, rankings=rankings, system=system, depth=depth, report=report
    )


@transaction.atomic
def pool_import_rankings(
    *,
    golden_set: GoldenSet,
    rankings: Mapping[str, Sequence[str]],
    system: str,
    depth: int = POOL_DEPTH,
    report: ImportReport | None = None,
) -> ImportReport:
    """One system's ranked ids per query (external ids) into the pools, plus the judged documents."""
    report = report or ImportReport(kind="run", source=system)
    pools = _pools_from_rankings(
        golden_set=golden_set, rankings=rankings, system=system, depth=depth, report=report, where=system
    )
    if not report.ok:
        return report
    report.count("queries pooled", len(pools))
    report.count("pool entries", sum(len(v) for v in pools.values()))
    report.count("candidates added", pool_merge(pools=pools))
    report.count("judged candidates added", pool_add_judged(golden_set=golden_set))
    return report


# --- assignments --------------------------------------------------------------------------------


class AssignmentError(Exception):
    """A reassignment or assignment that would break a rule; the message says which."""


def dual_sampled(*, golden_set: GoldenSet, query: Query) -> bool:
    """Deterministic: the same queries are dual-labeled however often assignment runs."""
    digest = hashlib.sha256(f"{golden_set.slug}:{query.external_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < golden_set.dual_rate


@dataclass(slots=True)
class AssignReport:
    primary: int = 0
    second: int = 0
    gold: int = 0  # gold-item assignments (known answers mixed into the raters' queues)
    notes: list[str] = field(default_factory=list)

    def summary(self) -> str:
        gold = f", {self.gold} gold-item" if self.gold else ""
        return f"{self.primary} primary{gold} and {self.second} second assignment(s)"


@transaction.atomic
def assignments_create(*, golden_set: GoldenSet, raters: Sequence[User] | None = None) -> AssignReport:
    """Give every active query with a pool a primary rater, and the dual sample a second, different one;
    then mix the gold items into the queues of raters who have not met them (`gold_distribute`).

    Idempotent: queries that already have a live assignment of a kind are skipped. Whole queries only;
    the least-loaded rater gets the next one (ties by id), never someone who held the query before.
    """
    pool = list(raters) if raters is not None else list(golden_set.raters.order_by("id"))
    report = AssignReport()
    if not pool:
        report.notes.append(f"golden set {golden_set.slug} has no raters: add some first")
        return report
    load: Counter[int] = Counter(
        dict(
            Assignment.objects.filter(query__golden_set=golden_set, status=Assignment.Status.OPEN)
            .order_by()
            .values("rater")
            .annotate(n=Count("id"))
            .values_list("rater", "n")
        )
    )
    queries = (
        golden_set.queries.filter(status=Query.Status.ACTIVE)
        .annotate(pool=Count("candidates"))
        .filter(pool__gt=0)
        .prefetch_related("assignments")
        .order_by("external_id")
    )
    for query in queries:
        everyday = [a for a in query.assignments.all() if a.calibration_round_id is None]
        held = {a.rater_id for a in everyday}
        live = {a.kind for a in everyday if a.status != Assignment.Status.REASSIGNED}
        wanted = [Assignment.Kind.PRIMARY]
        if dual_sampled(golden_set=golden_set, query=query):
            wanted.append(Assignment.Kind.SECOND)
        for kind in wanted:
            if kind in live:
                continue
            free = [r for r in pool if r.pk not in held]
            if not free:
                report.notes.append(f"query {query.external_id}: no rater left for a {kind} assignment")
                break
            rater = min(free, key=lambda r: (load[r.pk], r.pk))
            Assignment.objects.create(query=query, rater=rater, kind=kind)
            held.add(rater.pk)
            load[rater.pk] += 1
            if kind == Assignment.Kind.PRIMARY:
                report.primary += 1
            else:
                report.second += 1
    report.gold = gold_distribute(golden_set=golden_set)
    return report


@transaction.atomic
def assignment_reassign(*, assignment: Assignment, rater: User) -> Assignment:
    """Move an assignment to another rater. The old one keeps its rater and judgments, marked reassigned,
    so a tab still open on it gets a clear refusal instead of writing into someone else's work."""
    old = Assignment.objects.select_for_update().get(pk=assignment.pk)
    if old.status == Assignment.Status.REASSIGNED:
        raise AssignmentError("this assignment was already reassigned")
    if old.rater_id == rater.pk:
        raise AssignmentError(f"{rater} already holds this assignment")
    existing = (
        Assignment.objects.everyday().select_for_update().filter(query_id=old.query_id, rater=rater).first()
    )
    if existing is not None and existing.status != Assignment.Status.REASSIGNED:
        raise AssignmentError(
            f"{rater} already has this query ({existing.kind}); nobody grades a query twice"
        )
    if existing is not None and old.kind in SCOPED_KINDS:
        # Reopening their earlier row would carry its grades outside this scope into the labels and count
        # them as this assignment's progress; a third rater must also be new to the query
        # (`_third_rater_assign`, `assignment_rejudge_create`, `gold_distribute` choose the same way).
        raise AssignmentError(
            f"{rater} held this query before ({existing.kind}); a {old.kind} assignment goes to a rater"
            " new to the query"
        )
    old.status = Assignment.Status.REASSIGNED
    old.save(update_fields=["status"])
    if existing is not None:
        # The query comes back to someone who had it before: their earlier work is theirs again.
        existing.status = Assignment.Status.OPEN
        existing.kind = old.kind
        existing.completed = None
        existing.save(update_fields=["status", "kind", "completed"])
        new = existing
    else:
        new = Assignment.objects.create(query_id=old.query_id, rater=rater, kind=old.kind)
    new.scope.set(old.scope.all())
    _refresh_completion(new)
    return new


def _refresh_completion(assignment: Assignment) -> tuple[int, int]:
    """(graded, total) for the assignment; a done one whose work grew (its pool or scope) is open again.
    Only the rater marks a query done (`assignment_done`)."""
    graded, total = assignment_progress(assignment=assignment)
    complete = total > 0 and graded >= total
    if not complete and assignment.status == Assignment.Status.DONE:
        assignment.status = Assignment.Status.OPEN
        assignment.completed = None
        assignment.save(update_fields=["status", "completed"])
    return graded, total


def assignment_candidates(*, assignment: Assignment, scoped: bool | None = None) -> Q:
    """The candidates an assignment covers: its scope when it has one, else the query's whole pool.
    `scoped` saves the lookup when the caller already knows."""
    if scoped is None:
        scoped = assignment.scope.exists()
    return Q(scoped_assignments=assignment) if scoped else Q(query_id=assignment.query_id)


def assignment_progress(*, assignment: Assignment, scoped: bool | None = None) -> tuple[int, int]:
    """(graded, total), in one query."""
    pool = Candidate.objects.filter(assignment_candidates(assignment=assignment, scoped=scoped))
    graded, total = (
        Assignment.objects.filter(pk=assignment.pk)
        .annotate(
            n_graded=count_subquery(Judgment.objects.filter(assignment_id=assignment.pk)),
            n_total=count_subquery(pool),
        )
        .values_list("n_graded", "n_total")
        .get()
    )
    return graded, total


# --- grading ------------------------------------------------------------------------------------


class GradingError(Exception):
    status = 400
    code = "bad_request"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class NotFound(GradingError):
    status = 404
    code = "not_found"


class Reassigned(GradingError):
    status = 409
    code = "reassigned"


class OffScale(GradingError):
    status = 400
    code = "off_scale"


class Locked(GradingError):
    status = 409
    code = "done"


@dataclass(frozen=True, slots=True)
class SubmitResult:
    """The judgment as saved (its current grade, note and total time) and the assignment's progress."""

    judgment_id: int
    grade: int
    note: str
    time_spent_ms: int
    created: bool
    changed: bool
    graded: int
    total: int
    status: str


class Retired(GradingError):
    status = 409
    code = "retired"


REASSIGNED_MESSAGE = "this assignment was reassigned to another rater; your grade was not saved"
RETIRED_MESSAGE = "this query was retired from its golden set; your grade was not saved"
LOCKED_MESSAGE = (
    "you marked this query done, so its grades are locked (a reviewer can reopen it); your grade was not"
    " saved"
)


@transaction.atomic
def judgment_submit(
    *,
    assignment_id: int,
    rater: User,
    candidate_id: int,
    grade: int,
    note: str = "",
    time_spent_ms: int = 0,
) -> SubmitResult:
    """Save one grade: insert or update the rater's judgment and append its history event.

    Blind: nothing here reads an earlier label (frozen, adjudicated or another rater's), so what a save
    answers, and how long it takes, cannot tell the rater anything about them. Overturns are looked at
    when the rater marks the query done (`assignment_done`); from then on the grades are locked and only
    a note may still be added to a grade.

    The assignment row is locked first: a rater's two tabs on one assignment take turns, and a
    reassignment (which takes the same lock) cannot slip between the check and the write.
    """
    row = _grading_row(assignment_id=assignment_id, rater_id=rater.pk, candidate_id=candidate_id)
    if row is None:
        raise NotFound("no such assignment")
    if row["query_status"] != Query.Status.ACTIVE:
        raise Retired(RETIRED_MESSAGE)
    if row["status"] == Assignment.Status.REASSIGNED:
        raise Reassigned(REASSIGNED_MESSAGE)
    scoped = row["n_scope"] > 0
    if row["document_id"] is None or (scoped and not row["in_scope"]):
        raise NotFound(f"candidate {candidate_id} is not part of this assignment")
    if not row["scale_min"] <= grade <= row["scale_max"]:
        raise OffScale(f"grade {grade} is outside the scale {row['scale_min']}..{row['scale_max']}")
    note = note.strip()
    if len(note) > MAX_NOTE:
        raise GradingError(f"the note is longer than {MAX_NOTE} characters")
    if row["status"] == Assignment.Status.DONE and (row["judgment_id"] is None or row["old_grade"] != grade):
        raise Locked(LOCKED_MESSAGE)
    spent = max(0, min(int(time_spent_ms), MAX_TIME_PER_SAVE_MS))
    digest = row["content_hash"] or ""  # the content this grade is given on (stale detection)
    old: tuple[int, str, int] | None  # the judgment before this save: grade, note, time
    if row["judgment_id"] is not None:
        judgment_id, created = row["judgment_id"], False
        old = (row["old_grade"], row["old_note"], row["old_time_spent_ms"])
    else:
        judgment_id, created = _judgment_insert(
            assignment_id, row["document_id"], grade=grade, note=note, spent=spent, digest=digest
        )
        old = None if created else _judgment_current(judgment_id)
    if old is None:
        changed, time_total, saved = True, spent, (grade, note)
    else:
        changed = old[0] != grade or old[1] != note
        time_total = old[2] + spent
        saved = (grade, note) if changed else (old[0], old[1])
        # The note belongs to this grade: a regrade without one leaves no stale reason behind (the
        # history keeps every earlier note). An unchanged save only adds its time.
        Judgment.objects.filter(pk=judgment_id).update(
            grade=saved[0],
            note=saved[1],
            time_spent_ms=time_total,
            content_hash=digest,
            updated=timezone.now(),
        )
    if changed:
        JudgmentEvent.objects.create(
            judgment_id=judgment_id,
            rater=rater,
            old_grade=None if old is None else old[0],
            new_grade=grade,
            note=note,
            time_spent_ms=spent,
            content_hash=digest,
        )
        if old is not None:
            _proposals_follow(judgment_id=judgment_id, grade=grade, note=note)
    # The row lock makes the counts read above exact: nobody else wrote judgments of this assignment since.
    graded = row["n_graded"] + created
    total = row["n_scope"] if scoped else row["n_pool"]
    status = row["status"]
    return SubmitResult(
        judgment_id=judgment_id,
        grade=saved[0],
        note=saved[1],
        time_spent_ms=time_total,
        created=created,
        changed=changed,
        graded=graded,
        total=total,
        status=status,
    )


def _grading_row(*, assignment_id: int, rater_id: int, candidate_id: int) -> dict[str, Any] | None:
    """Lock the assignment row (where the database can), then read everything a save checks in one
    statement: the assignment's status, the rubric's scale, progress counts, and the candidate's document,
    content hash, scope membership and the rater's current judgment of it (no label: grading is blind).
    Every writer of an assignment's judgments holds this lock, so what is read cannot change before the
    save commits.

    Two statements, not one SELECT ... FOR UPDATE with the joins: in READ COMMITTED a statement that had to
    wait for the lock still reads the other tables as they were when it started, so a second tab would
    see the judgment from before the first tab's save. The read after the lock starts after that commit.

    Raw SQL because this is the app's hot path: building the equivalent ORM lookups cost three times the
    CPU of the rest of the save (docs/benchmarks.md, grading)."""
    scope = Assignment.scope.field
    qn = connection.ops.quote_name
    t = {
        m.__name__: qn(m._meta.db_table)
        for m in (Assignment, Query, GoldenSet, Rubric, Candidate, Document, Judgment)
    }
    through = qn(scope.m2m_db_table())
    scope_a, scope_c = qn(scope.m2m_column_name()), qn(scope.m2m_reverse_name())
    # Only table and column names (from the models, quoted) are interpolated; every value is a parameter.
    sql = f"""
        SELECT a.status, a.kind, a.query_id, q.status AS query_status, r.scale_min, r.scale_max,
               (SELECT COUNT(*) FROM {through} s WHERE s.{scope_a} = a.id) AS n_scope,
               (SELECT COUNT(*) FROM {t["Candidate"]} p WHERE p.query_id = a.query_id) AS n_pool,
               (SELECT COUNT(*) FROM {t["Judgment"]} j WHERE j.assignment_id = a.id) AS n_graded,
               c.document_id, d.content_hash,
               (SELECT COUNT(*) FROM {through} s WHERE s.{scope_a} = a.id AND s.{scope_c} = c.id) AS in_scope,
               jd.id AS judgment_id, jd.grade AS old_grade, jd.note AS old_note,
               jd.time_spent_ms AS old_time_spent_ms
          FROM {t["Assignment"]} a
          JOIN {t["Query"]} q ON q.id = a.query_id
          JOIN {t["GoldenSet"]} g ON g.id = q.golden_set_id
          JOIN {t["Rubric"]} r ON r.id = g.rubric_id
          LEFT JOIN {t["Candidate"]} c ON c.id = %s AND c.query_id = a.query_id
          LEFT JOIN {t["Document"]} d ON d.id = c.document_id
          LEFT JOIN {t["Judgment"]} jd ON jd.assignment_id = a.id AND jd.document_id = c.document_id
         WHERE a.id = %s AND a.rater_id = %s"""  # noqa: S608
    with connection.cursor() as cursor:
        if connection.features.has_select_for_update:
            lock = f"SELECT id FROM {t['Assignment']} WHERE id = %s AND rater_id = %s FOR UPDATE"  # noqa: S608
            cursor.execute(lock, [assignment_id, rater_id])
            if cursor.fetchone() is None:
                return None
        cursor.execute(sql, [candidate_id, assignment_id, rater_id])
        found = cursor.fetchone()
        if found is None:
            return None
        return dict(zip((col[0] for col in cursor.description), found, strict=True))


def _judgment_insert(
    assignment_id: int, document_id: int, *, grade: int, note: str, spent: int, digest: str
) -> tuple[int, bool]:
    """A new judgment's id, or (should another writer have inserted first: SQLite has no row locks, so
    the unique constraint is the last word) the existing one's, with created False."""
    try:
        with transaction.atomic():
            judgment = Judgment.objects.create(
                assignment_id=assignment_id,
                document_id=document_id,
                grade=grade,
                note=note,
                time_spent_ms=spent,
                content_hash=digest,
            )
            return judgment.pk, True
    except IntegrityError:
        existing = Judgment.objects.get(assignment_id=assignment_id, document_id=document_id)
        return existing.pk, False


def _judgment_current(judgment_id: int) -> tuple[int, str, int]:
    grade, note, spent = (
        Judgment.objects.filter(pk=judgment_id).values_list("grade", "note", "time_spent_ms").get()
    )
    return grade, note, spent


# --- marking a query done, reopening, proposed label changes --------------------------------------


class Incomplete(GradingError):
    status = 422
    code = "incomplete"


# Kinds whose grades make labels (a gold check measures the rater, a calibration round the rubric).
LABEL_KINDS = (
    Assignment.Kind.PRIMARY,
    Assignment.Kind.SECOND,
    Assignment.Kind.THIRD,
    Assignment.Kind.REJUDGE,
)


@dataclass(frozen=True, slots=True)
class Overturn:
    """A grade of the rater's that differs from the set's frozen label for the document."""

    candidate_id: int
    judgment_id: int
    document_id: int
    doc_id: str
    title: str
    grade: int
    frozen: int
    note: str


@dataclass(frozen=True, slots=True)
class DoneResult:
    status: str
    already: bool  # it was done before this request: nothing changed
    overturns: list[Overturn]
    proposed: int  # proposals this made (single-rater work only)

    @property
    def notes_missing(self) -> int:
        return sum(1 for o in self.overturns if not o.note)


@transaction.atomic
def assignment_done(*, assignment_id: int, rater: User) -> DoneResult:
    """The rater marks the query done: every candidate must be graded; the grades are locked from now on.

    This is where the overturn rule applies: the answer lists the grades that differ from the frozen
    labels, each to be explained by a note (a save of the same grade with a note, still allowed). On
    single-rater work each overturn becomes a `LabelProposal` for the set's reviewers: it changes no
    label until one of them accepts it. Finished dual work runs the dispute check. Marking a done query
    done again changes nothing and answers the same.
    """
    assignment = (
        Assignment.objects.select_for_update()
        .select_related("query")
        .filter(pk=assignment_id, rater_id=rater.pk)
        .first()
    )
    if assignment is None:
        raise NotFound("no such assignment")
    if assignment.query.status != Query.Status.ACTIVE:
        raise Retired("this query was retired from its golden set: there is nothing to mark done")
    if assignment.status == Assignment.Status.REASSIGNED:
        raise Reassigned("this assignment was reassigned to another rater: it was not marked done")
    already = assignment.status == Assignment.Status.DONE
    if not already:
        graded, total = assignment_progress(assignment=assignment)
        if total == 0:
            raise Incomplete("this query has no documents to grade yet")
        if graded < total:
            raise Incomplete(
                f"{graded} of {total} graded: grade every document before marking the query done"
            )
        assignment.status = Assignment.Status.DONE
        assignment.completed = timezone.now()
        assignment.save(update_fields=["status", "completed"])
    overturns = overturns_list(assignment=assignment)
    proposed = _proposals_sync(assignment=assignment, overturns=overturns) if single_rater(assignment) else 0
    if not already and assignment.kind in DUAL_KINDS:
        query_dispute_check(query_id=assignment.query_id)
    return DoneResult(status=assignment.status, already=already, overturns=overturns, proposed=proposed)


def overturns_list(*, assignment: Assignment) -> list[Overturn]:
    """The assignment's grades that differ from the frozen labels (none for gold checks and calibration
    rounds, which make no label). Read only once the rater has marked the query done."""
    if assignment.kind not in LABEL_KINDS:
        return []
    frozen = dict(
        FrozenLabel.objects.filter(query_id=assignment.query_id).values_list("document_id", "grade")
    )
    judgments = (
        Judgment.objects.filter(assignment=assignment, document_id__in=list(frozen))
        .select_related("document")
        .only("pk", "document_id", "grade", "note", "document__doc_id", "document__title")
    )
    candidates = dict(
        Candidate.objects.filter(query_id=assignment.query_id, document_id__in=list(frozen)).values_list(
            "document_id", "pk"
        )
    )
    out = [
        Overturn(
            candidate_id=candidates.get(j.document_id, 0),
            judgment_id=j.pk,
            document_id=j.document_id,
            doc_id=j.document.doc_id,
            title=j.document.title,
            grade=j.grade,
            frozen=frozen[j.document_id],
            note=j.note,
        )
        for j in judgments
        if j.grade != frozen[j.document_id]
    ]
    return sorted(out, key=lambda o: o.doc_id)


def single_rater(assignment: Assignment) -> bool:
    """Work whose grade stands alone in consolidation (`single`): a re-judgment, or the primary rater of
    a query outside the dual sample. Dual-labeled work is checked by agreement and disputes instead."""
    if assignment.kind == Assignment.Kind.REJUDGE:
        return True
    if assignment.kind != Assignment.Kind.PRIMARY:
        return False
    return (
        not Assignment.objects.everyday()
        .filter(query_id=assignment.query_id, kind=Assignment.Kind.SECOND)
        .exclude(status=Assignment.Status.REASSIGNED)
        .exists()
    )


def _proposals_sync(*, assignment: Assignment, overturns: Sequence[Overturn]) -> int:
    """One pending proposal per overturning judgment, as it stands now; returns how many are new.
    A change a reviewer already decided (same judgment, same frozen and proposed grade) is not proposed
    again: marking the query done after a reopen does not undo a rejection."""
    proposals = LabelProposal.objects.select_for_update().filter(judgment__assignment=assignment)
    pending = {p.judgment_id: p for p in proposals if p.status == LabelProposal.Status.PENDING}
    decided = {
        (p.judgment_id, p.from_grade, p.to_grade)
        for p in proposals
        if p.status in (LabelProposal.Status.ACCEPTED, LabelProposal.Status.REJECTED)
    }
    wanted = {o.judgment_id: o for o in overturns}
    stale = [
        p.pk
        for j, p in pending.items()
        if j not in wanted or (p.from_grade, p.to_grade) != (wanted[j].frozen, wanted[j].grade)
    ]
    if stale:
        LabelProposal.objects.filter(pk__in=stale).update(
            status=LabelProposal.Status.WITHDRAWN, decided_at=timezone.now()
        )
    version = GoldenSet.objects.filter(pk=assignment.query.golden_set_id).values_list(
        "frozen_version", flat=True
    )[0]
    new = [
        LabelProposal(
            query_id=assignment.query_id,
            document_id=o.document_id,
            judgment_id=o.judgment_id,
            rater_id=assignment.rater_id,
            from_grade=o.frozen,
            from_version=version,
            to_grade=o.grade,
            note=o.note,
        )
        for o in overturns
        if (o.judgment_id not in pending or pending[o.judgment_id].pk in stale)
        and (o.judgment_id, o.frozen, o.grade) not in decided
    ]
    LabelProposal.objects.bulk_create(new)
    return len(new)


def _proposals_follow(*, judgment_id: int, grade: int, note: str) -> None:
    """A regrade withdraws the judgment's pending proposal (it proposed another grade); a new note on
    the same grade becomes the proposal's note. Only judgments saved before can have one."""
    pending = LabelProposal.objects.filter(judgment_id=judgment_id, status=LabelProposal.Status.PENDING)
    pending.exclude(to_grade=grade).update(status=LabelProposal.Status.WITHDRAWN, decided_at=timezone.now())
    pending.filter(to_grade=grade).update(note=note)


class ReopenError(Exception):
    """A reopen that cannot happen; the message says why."""


@transaction.atomic
def assignment_reopen(*, assignment: Assignment, by: User) -> Assignment:
    """A reviewer gives a done query back to its rater: the grades can change again until the rater
    marks it done once more. Pending proposals stay until the grade they propose changes."""
    locked = Assignment.objects.select_for_update().select_related("query").get(pk=assignment.pk)
    if locked.status != Assignment.Status.DONE:
        raise ReopenError(f"the assignment is {locked.status}, not done: there is nothing to reopen")
    if locked.query.status != Query.Status.ACTIVE:
        raise ReopenError(f"query {locked.query.external_id} is retired: nothing to reopen")
    locked.status, locked.completed = Assignment.Status.OPEN, None
    locked.save(update_fields=["status", "completed"])
    return locked


# --- tiers, disputes, adjudication, gold items (issue 4) ------------------------------------------
#
# Raw judgments are never changed here: a tier move, a dispute decision, an adjudication and a gold
# answer are each rows of their own (TierMove, DisputeCheck, Adjudication, GoldItem).


class ReviewError(Exception):
    """A reviewer action that breaks a rule; the message names the field or the rule."""


def _reason(text: str, what: str, *, limit: int | None = None) -> str:
    text = text.strip()
    if not text:
        raise ReviewError(f"{what}: say why (it is kept with the record)")
    if limit is not None and len(text) > limit:
        raise ReviewError(f"{what}: longer than {limit} characters")
    return text


@transaction.atomic
def query_move_tier(*, query: Query, tier: str, by: User | None, reason: str) -> TierMove | None:
    """Move an active query to `tier`, recording who (None: the system), when, from, to and why.

    Moving to shadow sets the query's quarantine reason; moving out of shadow clears it (the TierMove
    rows keep every reason). A query already in `tier` is left alone: None, nothing recorded.
    """
    if tier not in Query.Tier.values:
        raise ReviewError(f"tier: {tier!r} is not one of {', '.join(Query.Tier.values)}")
    reason = _reason(reason, "reason")
    locked = Query.objects.select_for_update().get(pk=query.pk)
    if locked.status != Query.Status.ACTIVE:
        raise ReviewError(f"query {locked.external_id} is retired: it has no tier to move")
    if locked.tier == tier:
        return None
    move = TierMove.objects.create(query=locked, by=by, from_tier=locked.tier, to_tier=tier, reason=reason)
    locked.tier = tier
    locked.quarantine_reason = reason if tier == Query.Tier.SHADOW else ""
    locked.save(update_fields=["tier", "quarantine_reason"])
    query.tier, query.quarantine_reason = locked.tier, locked.quarantine_reason
    return move


@transaction.atomic
def query_retire(*, query: Query, by: User, reason: str) -> TierMove:
    """Take a query out of the set (status retired; its judgments stay). Recorded like a tier move.

    Its open assignments close the way a reassignment closes one (status `reassigned`: out of every
    queue and count, grades refused), stamped `completed` with the retirement's time, so that bringing
    the query back (`_retired_work_reopen`) reopens exactly these. Finished ones stay as they are.
    """
    reason = _reason(reason, "reason")
    locked = Query.objects.select_for_update().get(pk=query.pk)
    if locked.status == Query.Status.RETIRED:
        raise ReviewError(f"query {locked.external_id} is already retired")
    move = TierMove.objects.create(
        query=locked,
        by=by,
        from_tier=locked.tier,
        to_tier=locked.tier,
        from_status=locked.status,
        to_status=Query.Status.RETIRED,
        reason=reason,
    )
    locked.status = Query.Status.RETIRED
    locked.save(update_fields=["status"])
    query.status = locked.status
    Assignment.objects.filter(query=locked, status=Assignment.Status.OPEN).update(
        status=Assignment.Status.REASSIGNED, completed=move.at
    )
    return move


def _retired_work_reopen(*, query: Query) -> int:
    """A retired query comes back: the assignments its retirement closed are open again (finished ones
    done again); returns how many. Call it once the query is active."""
    retired = TierMove.objects.filter(query=query, to_status=Query.Status.RETIRED).order_by("-at", "-id")
    last = retired.first()
    if last is None:
        return 0
    closed = list(
        Assignment.objects.select_for_update().filter(
            query=query, status=Assignment.Status.REASSIGNED, completed=last.at
        )
    )
    for assignment in closed:
        assignment.status, assignment.completed = Assignment.Status.OPEN, None
        assignment.save(update_fields=["status", "completed"])
        _refresh_completion(assignment)
    return len(closed)


@transaction.atomic
def adjudication_create(
    *, query: Query, document: Document, reviewer: User, grade: int, rationale: str
) -> Adjudication:
    """A reviewer's final grade for one judged document of an active query, with a required rationale.

    It becomes the final label (method `adjudicated`) until a newer adjudication or a re-judgment of
    changed content. The raters' judgments stay as they are.
    """
    rubric = query.golden_set.rubric
    if type(grade) is not int or not rubric.scale_min <= grade <= rubric.scale_max:
        raise ReviewError(f"grade: {grade!r} is outside the scale {rubric.scale_min}..{rubric.scale_max}")
    rationale = _reason(rationale, "rationale", limit=MAX_NOTE)
    if query.status != Query.Status.ACTIVE:
        raise ReviewError(f"query {query.external_id} is retired: nothing to adjudicate")
    if document.golden_set_id != query.golden_set_id or not (
        Judgment.objects.filter(assignment__query=query, document=document).exists()
        or Candidate.objects.filter(query=query, document=document).exists()
    ):
        raise ReviewError(f"document {document.doc_id} is not in the pool of query {query.external_id}")
    return Adjudication.objects.create(
        query=query,
        document=document,
        reviewer=reviewer,
        grade=grade,
        rationale=rationale,
        content_hash=document.content_hash,
    )


@transaction.atomic
def proposal_decide(*, proposal: LabelProposal, by: User, accept: bool, rationale: str) -> LabelProposal:
    """Accept (the proposed grade becomes the final label: an `Adjudication` by `by`, naming the rater)
    or reject (the frozen label stays) a pending proposal, with a rationale kept on the record."""
    locked = (
        LabelProposal.objects.select_for_update(of=("self",))
        .select_related("query__golden_set__rubric", "document", "rater", "decided_by")
        .get(pk=proposal.pk)
    )
    if locked.status != LabelProposal.Status.PENDING:
        raise ReviewError(_decided(locked))
    rationale = _reason(rationale, "rationale", limit=MAX_NOTE)
    if accept:
        locked.adjudication = adjudication_create(
            query=locked.query,
            document=locked.document,
            reviewer=by,
            grade=locked.to_grade,
            rationale=(
                f"accepted {locked.rater.username}'s proposed change {locked.from_grade} → {locked.to_grade}"
                f" (proposal {locked.pk}): {rationale}"
            ),
        )
    locked.status = LabelProposal.Status.ACCEPTED if accept else LabelProposal.Status.REJECTED
    locked.decided_by, locked.decided_at, locked.rationale = by, timezone.now(), rationale
    locked.save(update_fields=["status", "decided_by", "decided_at", "rationale", "adjudication"])
    return locked


def _decided(proposal: LabelProposal) -> str:
    if proposal.status == LabelProposal.Status.WITHDRAWN:
        return f"proposal {proposal.pk} was withdrawn (the rater changed that grade): nothing changed"
    when = timezone.localtime(proposal.decided_at).strftime("%Y-%m-%d %H:%M") if proposal.decided_at else "?"
    by = proposal.decided_by.username if proposal.decided_by else "?"
    return f"proposal {proposal.pk} was already {proposal.status} by {by} at {when}: nothing changed"


@transaction.atomic
def proposals_decide_query(*, query: Query, by: User, accept: bool, rationale: str) -> int:
    """Accept or reject every pending proposal of one query with one rationale; how many."""
    pending = list(
        LabelProposal.objects.select_for_update()
        .filter(query=query, status=LabelProposal.Status.PENDING)
        .order_by("id")
    )
    if not pending:
        raise ReviewError(f"query {query.external_id} has no pending proposals: nothing changed")
    for proposal in pending:
        proposal_decide(proposal=proposal, by=by, accept=accept, rationale=rationale)
    return len(pending)


def thresholds_of(golden_set: GoldenSet) -> Thresholds:
    return Thresholds(
        hard_diff=golden_set.hard_diff,
        min_dual_docs=golden_set.min_dual_docs,
        min_exact=golden_set.min_exact,
        max_mad=golden_set.max_mad,
    )


def golden_set_thresholds_set(*, golden_set: GoldenSet, thresholds: Mapping[str, Any]) -> Thresholds:
    """Change the set's dispute thresholds (absent keys keep their values). Applies to later checks;
    decisions already taken stay as they were."""
    try:
        new = Thresholds.from_mapping({**thresholds_of(golden_set).to_dict(), **thresholds})
    except (TypeError, ValueError) as exc:
        raise ReviewError(str(exc)) from None
    for name, value in new.to_dict().items():
        setattr(golden_set, name, value)
    golden_set.save(update_fields=list(new.to_dict()))
    return new


@transaction.atomic
def query_dispute_check(*, query_id: int) -> DisputeCheck | None:
    """Apply the dispute rules once the query's primary and second assignments are both done.

    On the two raters' grades (`assay.labels.disputes.query_dispute`, with the set's thresholds and, for
    "top results", candidates whose best rank is within the set's k or unknown): a disputed core query
    moves to shadow with the reasons; every document whose grades differ goes to a third rater who never
    held the query (`choose_third_rater`), or, when nobody is left, to the reviewers. Idempotent: the
    decision is stored with a fingerprint of what it was decided on, and the same input finds that row
    and does nothing. None when the query is not (or no longer) ready: retired, or a dual assignment
    still open.
    """
    # The query row lock serialises the two raters' completions: whichever commits second sees both done.
    query = Query.objects.select_for_update().select_related("golden_set__rubric").get(pk=query_id)
    if query.status != Query.Status.ACTIVE:
        return None
    live = list(Assignment.objects.filter(query=query).exclude(status=Assignment.Status.REASSIGNED))
    dual = [a for a in live if a.kind in DUAL_KINDS]
    if {a.kind for a in dual} != set(DUAL_KINDS) or any(a.status != Assignment.Status.DONE for a in dual):
        return None
    golden_set, rubric = query.golden_set, query.golden_set.rubric
    grades: dict[int, list[int]] = {}
    for document_id, grade in Judgment.objects.filter(assignment__in=dual).values_list(
        "document_id", "grade"
    ):
        grades.setdefault(document_id, []).append(grade)
    candidates = {
        document_id: (pk, doc_id, best_rank)
        for pk, document_id, doc_id, best_rank in Candidate.objects.filter(
            query=query, document_id__in=list(grades)
        ).values_list("pk", "document_id", "document__doc_id", "best_rank")
    }
    docs = sorted(
        (
            DocGrades(
                doc_id, tuple(sorted(grades[document_id])), best_rank is None or best_rank <= golden_set.k
            )
            for document_id, (_, doc_id, best_rank) in candidates.items()
        ),
        key=lambda d: d.doc_id,
    )
    thresholds = thresholds_of(golden_set)
    decision = query_dispute(
        docs,
        relevant_min_grade=golden_set.relevant_min_grade,
        thresholds=thresholds,
        scale=Scale(rubric.scale_min, rubric.scale_max),
        query_id=query.external_id,
    )
    fingerprint = hashlib.sha256(
        json.dumps(
            {
                "docs": [[d.doc_id, list(d.grades), d.in_top] for d in docs],
                "thresholds": thresholds.to_dict(),
                "relevant_min_grade": golden_set.relevant_min_grade,
            },
            sort_keys=True,
        ).encode()
    ).hexdigest()
    existing = DisputeCheck.objects.filter(query=query, fingerprint=fingerprint).first()
    if existing is not None:
        return existing
    actions: list[str] = []
    if decision.disputed and query.tier == Query.Tier.CORE:
        query_move_tier(
            query=query, tier=Query.Tier.SHADOW, by=None, reason="disputed: " + "; ".join(decision.reasons)
        )
        actions.append("moved to shadow")
    if decision.disagreeing_docs:
        by_doc_id = {doc_id: pk for pk, doc_id, _ in candidates.values()}
        actions.append(
            _third_rater_assign(query=query, candidate_ids=[by_doc_id[d] for d in decision.disagreeing_docs])
        )
    return DisputeCheck.objects.create(
        query=query,
        fingerprint=fingerprint,
        disputed=decision.disputed,
        reasons=list(decision.reasons),
        disagreeing=list(decision.disagreeing_docs),
        agreement=decision.agreement.to_dict(),
        actions=actions,
    )


def _third_rater_assign(*, query: Query, candidate_ids: Sequence[int]) -> str:
    """Scope (or extend) the query's third assignment to these candidates; what was done, in words."""
    third = (
        Assignment.objects.select_for_update()
        .filter(query=query, kind=Assignment.Kind.THIRD)
        .exclude(status=Assignment.Status.REASSIGNED)
        .select_related("rater")
        .first()
    )
    if third is None:
        # Everyone who ever held the query is out (nobody grades a query twice, a database constraint),
        # except a rater who only checked its gold items: their `gold` assignment becomes the third one,
        # unless one of these documents is among their gold items (they would grade it twice). The first
        # two raters hold primary and second assignments, so they stay out.
        gold_checkers = {
            a.rater_id: a
            for a in Assignment.objects.select_for_update()
            .filter(query=query, kind=Assignment.Kind.GOLD)
            .exclude(status=Assignment.Status.REASSIGNED)
        }
        overlapping = set(
            Assignment.objects.filter(
                pk__in=[a.pk for a in gold_checkers.values()], scope__in=list(candidate_ids)
            ).values_list("rater_id", flat=True)
        )
        convertible = gold_checkers.keys() - overlapping
        held = (
            set(Assignment.objects.everyday().filter(query=query).values_list("rater_id", flat=True))
            - convertible
        )
        raters = {r.pk: r for r in query.golden_set.raters.all()}
        load = dict(
            Assignment.objects.filter(
                query__golden_set_id=query.golden_set_id,
                status=Assignment.Status.OPEN,
                rater_id__in=list(raters),
            )
            .order_by()
            .values("rater")
            .annotate(n=Count("id"))
            .values_list("rater", "n")
        )
        chosen = choose_third_rater(sorted(raters), held, load)
        if chosen is None:
            return (
                f"no third rater available (every rater of the set has held the query): "
                f"{len(candidate_ids)} document(s) go to the reviewers"
            )
        if chosen in convertible:
            # Their gold items stay in scope (an ungraded one is still to grade) and stay gold checks:
            # consolidation counts a third rater's grade only where the first two disagree.
            third = gold_checkers[chosen]
            third.kind = Assignment.Kind.THIRD
            third.save(update_fields=["kind"])
        else:
            third = Assignment.objects.create(query=query, rater=raters[chosen], kind=Assignment.Kind.THIRD)
    before = set(third.scope.values_list("pk", flat=True))
    added = [pk for pk in candidate_ids if pk not in before]
    third.scope.add(*added)
    _refresh_completion(third)
    return f"third rater {third.rater.username}: {len(added)} document(s)"


def disputes_check_all(*, golden_set: GoldenSet) -> int:
    """Check every active query whose dual assignments are done (e.g. finished before this check
    existed, or after the thresholds changed); returns how many checks were new."""
    ready = (
        Assignment.objects.filter(
            query__golden_set=golden_set,
            query__status=Query.Status.ACTIVE,
            kind=Assignment.Kind.SECOND,
            status=Assignment.Status.DONE,
        )
        .values_list("query_id", flat=True)
        .order_by("query_id")
    )
    before = DisputeCheck.objects.filter(query__golden_set=golden_set).count()
    for query_id in ready:
        query_dispute_check(query_id=query_id)
    return DisputeCheck.objects.filter(query__golden_set=golden_set).count() - before


@transaction.atomic
def assignment_rejudge_create(*, query: Query, rater: User, documents: Sequence[Document]) -> Assignment:
    """A re-judgment of changed documents: scoped to their candidates; its grades replace the earlier
    ones in consolidation instead of reading as a disagreement. The documents must be in the pool."""
    candidates = list(Candidate.objects.filter(query=query, document__in=list(documents)))
    missing = sorted({d.doc_id for d in documents} - {c.document.doc_id for c in candidates})
    if missing:
        raise AssignmentError(f"not in the pool of query {query.external_id}: {', '.join(missing)}")
    if not candidates:
        raise AssignmentError("a re-judgment needs at least one document")
    if Assignment.objects.everyday().filter(query=query, rater=rater).exists():
        raise AssignmentError(
            f"{rater} has held query {query.external_id} before; nobody grades a query twice"
        )
    assignment = Assignment.objects.create(query=query, rater=rater, kind=Assignment.Kind.REJUDGE)
    assignment.scope.set(candidates)
    return assignment


@transaction.atomic
def gold_mark(*, query: Query, document: Document, grade: int, by: User) -> GoldItem:
    """Make (query, document) a gold item with the known answer `grade` (again: a new answer), and mix
    it into the queues of the set's raters who do not hold the query yet."""
    rubric = query.golden_set.rubric
    if type(grade) is not int or not rubric.scale_min <= grade <= rubric.scale_max:
        raise ReviewError(f"grade: {grade!r} is outside the scale {rubric.scale_min}..{rubric.scale_max}")
    if query.status != Query.Status.ACTIVE:
        raise ReviewError(f"query {query.external_id} is retired")
    if not Candidate.objects.filter(query=query, document=document).exists():
        raise ReviewError(f"document {document.doc_id} is not in the pool of query {query.external_id}")
    item, _ = GoldItem.objects.update_or_create(
        query=query, document=document, defaults={"grade": grade, "by": by}
    )
    gold_distribute(golden_set=query.golden_set, query_ids=[query.pk])
    return item


@transaction.atomic
def gold_unmark(*, query: Query, document: Document) -> bool:
    """No longer a gold item. Gold assignments not yet graded on it lose it (an emptied one is
    removed); grades already given stay. False when it was not a gold item."""
    deleted, _ = GoldItem.objects.filter(query=query, document=document).delete()
    if not deleted:
        return False
    candidate = Candidate.objects.get(query=query, document=document)
    # A gold checker who became the query's third rater holds the item in a `third` assignment; it
    # stays there only when it is a document the first two disagree on (what the third rater is for).
    kinds = [Assignment.Kind.GOLD]
    if len(set(_dual_grades(query=query, document=document))) < 2:
        kinds.append(Assignment.Kind.THIRD)
    holders = Assignment.objects.select_for_update().filter(query=query, kind__in=kinds, scope=candidate)
    for assignment in holders:
        if Judgment.objects.filter(assignment=assignment, document=document).exists():
            continue
        assignment.scope.remove(candidate)
        if not assignment.scope.exists() and not assignment.judgments.exists():
            assignment.delete()
        else:
            _refresh_completion(assignment)
    return True


def _dual_grades(*, query: Query, document: Document) -> list[int]:
    """The live primary and second grades of one document."""
    return list(
        Judgment.objects.filter(assignment__query=query, assignment__kind__in=DUAL_KINDS, document=document)
        .exclude(assignment__status=Assignment.Status.REASSIGNED)
        .values_list("grade", flat=True)
    )


def gold_distribute(*, golden_set: GoldenSet, query_ids: Sequence[int] | None = None) -> int:
    """Every rater of the set meets every gold item: a `gold` assignment scoped to the query's gold
    candidates for each rater who holds no assignment on the query (the others see them in their own
    pool). Extends existing gold assignments with new gold items. Returns how many assignments are new.

    Only queries that have their primary rater already: handing a query's gold items to everyone first
    would leave nobody to grade the query itself (nobody holds a query twice).
    """
    with_primary = (
        Assignment.objects.filter(kind=Assignment.Kind.PRIMARY)
        .exclude(status=Assignment.Status.REASSIGNED)
        .values("query_id")
    )
    gold = GoldItem.objects.filter(
        query__golden_set=golden_set, query__status=Query.Status.ACTIVE, query_id__in=with_primary
    )
    if query_ids is not None:
        gold = gold.filter(query_id__in=list(query_ids))
    by_query: dict[int, set[int]] = {}
    for query_id, document_id in gold.values_list("query_id", "document_id"):
        by_query.setdefault(query_id, set()).add(document_id)
    raters = list(golden_set.raters.order_by("id"))
    created = 0
    for query_id, document_ids in sorted(by_query.items()):
        candidates = list(Candidate.objects.filter(query_id=query_id, document_id__in=document_ids))
        held = {a.rater_id: a for a in Assignment.objects.everyday().filter(query_id=query_id)}
        for rater in raters:
            assignment = held.get(rater.pk)
            if assignment is None:
                assignment = Assignment.objects.create(
                    query_id=query_id, rater=rater, kind=Assignment.Kind.GOLD
                )
                created += 1
            elif assignment.kind != Assignment.Kind.GOLD or assignment.status == Assignment.Status.REASSIGNED:
                continue
            assignment.scope.add(*candidates)
            _refresh_completion(assignment)
    return created
