"""The golden-file import: a golden file (or a foreign format, assay.convert) checked against the set
and written as its queries and frozen labels, all or nothing (docs/golden-format.md).

Part of `golden_io.services`.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

from assay.convert.formats import GOLDEN_FORMATS
from assay.golden.format import GoldenFormatError, count_queries, parse
from assay.golden.model import GoldenFile
from assay.problems import ImportReport
from golden_io.foreign import GOLDEN, JudgmentsFormat, golden_from_format
from labeling.models import Document, FrozenLabel, GoldenSet, Query, TierMove
from labeling.selectors.labels import HUMAN
from labeling.services import (
    pool_add_judged,
    retired_work_reopen,
)

# -------------------------------------------------------------------------------------- golden-file import
# With the freeze above, the only writer of the set's frozen labels (FrozenLabel).


@dataclass(frozen=True, slots=True)
class _GoldenImportPlan:
    """What a golden file that passed every check writes (`golden_import`)."""

    golden: GoldenFile
    documents: dict[str, Document]
    new_keys: dict[str, str]  # doc id -> the key the file gives a document that has none


def golden_import_check(
    *,
    golden_set: GoldenSet,
    data: bytes,
    source: str,
    max_queries: int | None = None,
    fmt: JudgmentsFormat = GOLDEN,
) -> ImportReport:
    """Every problem `golden_import` would refuse the file for, writing nothing: what the import page's
    CSV download lists (the page shows the first MAX_SHOWN)."""
    return _golden_import_plan(
        golden_set=golden_set, data=data, source=source, max_queries=max_queries, fmt=fmt
    )[0]


def too_many_queries(*, golden_set: GoldenSet, data: bytes, max_queries: int) -> str | None:
    """Why a file is refused for its size alone (None when it is not), decided by counting its queries
    without checking them, so that a file a web request could not check in time is refused at once."""
    count = count_queries(data)
    if count is None or count <= max_queries:
        return None
    return (
        f"the file holds {count:,} queries; a golden file uploaded here may hold at most {max_queries:,} "
        "(ASSAY_WEB_GOLDEN_MAX_QUERIES), so that it is checked and written within one web request. "
        f"Import it on the server with: python manage.py import_golden {golden_set.slug} <file>"
    )


def _golden_import_plan(
    *,
    golden_set: GoldenSet,
    data: bytes,
    source: str,
    max_queries: int | None = None,
    fmt: JudgmentsFormat = GOLDEN,
) -> tuple[ImportReport, _GoldenImportPlan | None]:
    """The file against the format and against the set (scale, rubric, locales, documents, keys): the
    report, and the plan when there is no problem. Reads only. With `max_queries`, a file of more
    queries is refused before anything else is read (`too_many_queries`). A file in another format is
    converted first (`golden_io.foreign`)."""
    report = ImportReport(kind="golden", source=source)
    if fmt.name not in GOLDEN_FORMATS:  # parse reads both golden forms
        converted = golden_from_format(
            golden_set=golden_set, data=data, source=source, fmt=fmt, report=report
        )
        if converted is None:
            return report, None
        data = converted
    if max_queries is not None:
        refused = too_many_queries(golden_set=golden_set, data=data, max_queries=max_queries)
        if refused:
            report.add("queries", refused, "too_many_queries")
            return report, None
    try:
        golden = parse(data)
    except GoldenFormatError as exc:
        for problem in exc.problems:
            report.add(problem.where, problem.message, problem.code, problem.query_id)
        return report, None
    rubric = golden_set.rubric
    if (golden.scale.min, golden.scale.max) != (rubric.scale_min, rubric.scale_max):
        report.add(
            "scale",
            f"the file's scale {golden.scale} differs from rubric {rubric}'s scale "
            f"{rubric.scale_min}..{rubric.scale_max}",
            "scale_mismatch",
        )
    if golden.rubric and golden.rubric != str(rubric):
        report.add(
            "rubric",
            f"the file was judged with rubric {golden.rubric}, this golden set uses {rubric}",
            "rubric_mismatch",
        )
    documents = {d.doc_id: d for d in golden_set.documents.all()}
    key_owners = {d.key: d.doc_id for d in documents.values() if d.key}
    new_keys: dict[str, str] = {}
    for i, q in enumerate(golden.queries):
        if q.locale and not golden_set.in_scope(q.locale):
            report.add(
                f"queries[{i}].locale",
                f"query {q.id}: locale {q.locale} is outside the golden set's scope "
                f"({', '.join(golden_set.locales)})",
                "locale_out_of_scope",
                q.id,
            )
        for j, judgment in enumerate(q.judgments):
            doc = documents.get(judgment.doc_id)
            where = f"queries[{i}].judgments[{j}]"
            if doc is None:
                report.add(
                    f"{where}.doc_id",
                    f"query {q.id}: {judgment.doc_id} is not a document of golden set {golden_set.slug} "
                    "(import its documents first)",
                    "unknown_document",
                    q.id,
                )
            elif judgment.key and doc.key and judgment.key != doc.key:
                report.add(
                    f"{where}.key",
                    f"query {q.id}: key {judgment.key} differs from the document's {doc.key}",
                    "key_mismatch",
                    q.id,
                )
            elif judgment.key and not doc.key:
                _key_to_set(new_keys, key_owners, doc, judgment.key, f"{where}.key", q.id, report)
    if not report.ok:
        return report, None
    return report, _GoldenImportPlan(golden=golden, documents=documents, new_keys=new_keys)


@transaction.atomic
def golden_import(
    *,
    golden_set: GoldenSet,
    data: bytes,
    source: str,
    max_queries: int | None = None,
    fmt: JudgmentsFormat = GOLDEN,
) -> ImportReport:
    """A golden file into the set: its queries (created or updated by id) and its judgments, which become
    the set's current frozen labels (replacing the previous ones). Every judged document must already be a
    document of the set (labeling's `documents_import`). The whole file is checked first and written in
    one transaction: a file with any problem imports nothing (docs/labeling.md, "Imports"). The web
    passes `max_queries` (ASSAY_WEB_GOLDEN_MAX_QUERIES); the command has no limit."""
    report, plan = _golden_import_plan(
        golden_set=golden_set, data=data, source=source, max_queries=max_queries, fmt=fmt
    )
    if plan is None:
        return report
    golden, documents, new_keys = plan.golden, plan.documents, plan.new_keys
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
            "traffic_band": q.traffic_band or "",
            "failure_mode": q.failure_mode or "",
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
                reopened += retired_work_reopen(query=row)
            updated += 1
    replaced = FrozenLabel.objects.filter(query__golden_set=golden_set).delete()[0]
    labels = [
        # A judge's label stays one (its source; the file names no judge: docs/golden-format.md).
        FrozenLabel(
            query=existing[q.id],
            document=documents[j.doc_id],
            grade=j.grade,
            version=golden.version,
            source=j.source or HUMAN,
        )
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
    query_id: str,
    report: ImportReport,
) -> None:
    """Plan giving `doc` (which has no key) the judgment's `key`, or report why it cannot have it."""
    owner = key_owners.get(key)
    planned = new_keys.get(doc.doc_id)
    what = f"query {query_id}"
    if owner is not None and owner != doc.doc_id:
        message = f"{what}: key {key} belongs to document {owner}, not {doc.doc_id}"
        report.add(where, message, "key_conflict", query_id)
    elif planned is not None and planned != key:
        report.add(
            where,
            f"{what}: key {key} for {doc.doc_id}, which another judgment keys {planned}",
            "key_conflict",
            query_id,
        )
    else:
        new_keys[doc.doc_id] = key
        key_owners[key] = doc.doc_id
