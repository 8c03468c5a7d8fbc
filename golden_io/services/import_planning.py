"""The golden-file import's reading and planning (docs/labeling.md, "Imports"): the file read (counted
first on the web, converted from another format, parsed), checked against the set, and the changes it
would make to the set worked out, as the preview lists them and as the writes make them, reading the set
and writing nothing. Part of `golden_io.services`."""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from django.conf import settings

from assay.convert.formats import FORMATS, GOLDEN_FORMATS, QUERY_FIELDS
from assay.convert.sizes import measure
from assay.golden.format import GoldenFormatError, parse
from assay.golden.model import GoldenFile, GoldenQuery
from assay.problems import ImportReport
from golden_io.foreign import JudgmentsFormat, golden_from_format
from golden_io.models import GoldenImport
from golden_io.services.bulk import id_list
from labeling.models import Candidate, Document, FrozenLabel, GoldenSet, Query
from labeling.selectors import FrozenRow, Unwritten
from labeling.selectors.labels import HUMAN

MERGE = GoldenImport.Mode.MERGE.value
REPLACE = GoldenImport.Mode.REPLACE.value

# A query field's value in the database when the file leaves it empty (the golden file's defaults).
_EMPTY: dict[str, Any] = {
    "text": "",
    "locale": "",
    "filters": {},
    "stratum": "",
    "traffic_band": "",
    "failure_mode": "",
    "weight": 1.0,
    "tier": Query.Tier.CORE.value,
    "expect_empty": False,
    "critical": False,
    "tags": [],
}
assert tuple(_EMPTY) == QUERY_FIELDS


def _stored(q: GoldenQuery) -> dict[str, Any]:
    """A golden query's fields as the Query row stores them."""
    return {
        "text": q.text,
        "locale": q.locale or "",
        "filters": dict(q.filters),
        "stratum": q.stratum or "",
        "traffic_band": q.traffic_band or "",
        "failure_mode": q.failure_mode or "",
        "weight": q.weight,
        "tier": q.tier,
        "expect_empty": q.expect_empty,
        "critical": q.critical,
        "tags": list(q.tags),
    }


# ------------------------------------------------------------------------------------------ changes


@dataclass(frozen=True, slots=True)
class LabelChange:
    """One frozen label added (old None), regraded, or removed (new None)."""

    query_id: str
    doc_id: str
    old: int | None
    new: int | None
    old_source: str = ""
    new_source: str = ""

    @property
    def kind(self) -> str:
        return "added" if self.old is None else "removed" if self.new is None else "changed"


@dataclass(frozen=True, slots=True)
class FieldChange:
    """A query's field (or, with `query_id` "", the set's own: k, relevant_min_grade, frozen_version)."""

    query_id: str
    field: str
    old: Any
    new: Any


@dataclass(slots=True)
class ImportChanges:
    """What an import (or its undo) changes, each listed: what the preview shows and counts."""

    labels: list[LabelChange] = field(default_factory=list)
    queries_created: list[tuple[str, str]] = field(default_factory=list)  # (id, text)
    queries_removed: list[str] = field(default_factory=list)  # an undo's: queries the import created
    fields: list[FieldChange] = field(default_factory=list)
    keys: list[tuple[str, str]] = field(default_factory=list)  # (doc id, key) set on a document without
    pools: list[tuple[str, str]] = field(default_factory=list)  # (query id, doc id) joining a pool

    @property
    def empty(self) -> bool:
        return not (self.labels or self.queries_created or self.queries_removed or self.fields or self.keys)

    def labels_of(self, kind: str) -> list[LabelChange]:
        return [c for c in self.labels if c.kind == kind]

    @property
    def query_fields(self) -> list[FieldChange]:
        return [c for c in self.fields if c.query_id]

    @property
    def set_fields(self) -> list[FieldChange]:
        return [c for c in self.fields if not c.query_id]

    def counts(self) -> dict[str, int]:
        """The preview's figures, in its words (every one shown, zeros too, so nothing hides)."""
        return {
            "labels added": len(self.labels_of("added")),
            "labels changed": len(self.labels_of("changed")),
            "labels removed": len(self.labels_of("removed")),
            "queries created": len(self.queries_created),
            "queries removed": len(self.queries_removed),
            "query fields changed": len(self.query_fields),
            "set settings changed": len(self.set_fields),
            "document keys set": len(self.keys),
            "documents joining pools": len(self.pools),
        }

    def digest(self) -> str:
        """Names exactly these changes: a confirmation writes only if the file still makes them."""
        body = json.dumps(
            [
                [list(map(_plain, (c.query_id, c.doc_id, c.old, c.new, c.new_source))) for c in self.labels],
                self.queries_created,
                self.queries_removed,
                [[c.query_id, c.field, _plain(c.old), _plain(c.new)] for c in self.fields],
                self.keys,
                self.pools,
            ],
            sort_keys=True,
        )
        return hashlib.sha256(body.encode()).hexdigest()


def _plain(value: Any) -> Any:
    return value if value is None or isinstance(value, str | int | float | bool | list | dict) else str(value)


# ------------------------------------------------------------------------------------------ the plan


class HeldLabel(NamedTuple):
    """A frozen label of the set as the plan read it (its columns, no model instance)."""

    pk: int
    query_id: int
    document_id: int
    grade: int
    version: str
    source: str
    judge_id: int | None
    judge_name: str


@dataclass(slots=True)
class ImportPlan:
    """A checked file's changes to the set and what writing them needs, all read before any write."""

    golden: GoldenFile
    mode: str
    changes: ImportChanges
    documents: dict[str, Document]
    queries: dict[str, Query]  # the set's queries by id
    created: dict[str, dict[str, Any]]  # new query id -> its stored fields
    updates: dict[str, dict[str, Any]]  # query id -> field -> new value
    # (query id, doc id) -> (grade, source) to write, or None to remove
    writes: dict[tuple[str, str], tuple[int, str] | None]
    existing: dict[tuple[str, str], HeldLabel]
    set_values: dict[str, Any]
    state: SetState  # what was read of the set: the confirmation writes only if it is still so
    source: str = ""  # the file's name, for the tier moves' reason

    def query_pks(self) -> dict[str, int]:
        """Every query's pk by id; a query to be created has a stand-in, negative (no row's), until it
        has its own."""
        pks = {query_id: row.pk for query_id, row in self.queries.items()}
        pks.update((query_id, -n) for n, query_id in enumerate(self.created, start=1))
        return pks

    def unwritten(self, golden_set: GoldenSet) -> Unwritten:
        """These changes as consolidation reads them before they are written: the set as it would be
        afterwards, for the freeze check in memory (a created query under its stand-in pk)."""
        pks = self.query_pks()
        rows: dict[int, Query] = {}
        for query_id, values in self.created.items():
            rows[pks[query_id]] = Query(
                pk=pks[query_id], golden_set=golden_set, external_id=query_id, **values
            )
        for query_id, values in self.updates.items():
            row = copy.copy(self.queries[query_id])  # the plan's row stays as read (the undo records it)
            for name, value in values.items():
                setattr(row, name, value)
            rows[row.pk] = row
        docs = {doc_id: doc.pk for doc_id, doc in self.documents.items()}
        return Unwritten(
            frozen={
                (pks[query_id], docs[doc_id]): None if wanted is None else FrozenRow(*wanted)
                for (query_id, doc_id), wanted in self.writes.items()
            },
            queries=rows,
            pool_added=frozenset((pks[query_id], docs[doc_id]) for query_id, doc_id in self.changes.pools),
            keys={docs[doc_id]: key for doc_id, key in self.changes.keys},
            settings={name: self.set_values[name] for name in SET_READ if name in self.set_values},
        )


# The set's own settings a golden file carries that the working golden file reads.
SET_READ = ("k", "relevant_min_grade")
# A query's columns a plan reads, and a document's.
QUERY_STATE = ("pk", "external_id", "status", *QUERY_FIELDS)
DOCUMENT_STATE = ("pk", "doc_id", "key")
SET_STATE = ("k", "relevant_min_grade", "frozen_version")


class SetState(NamedTuple):
    """What a plan read of the set, as plain values in pk order (labels, queries, documents, the
    number of pool candidates, the set's settings): the confirmation reads it again under the set's lock
    (`set_state`) and writes only if it is as the plan read it, with the import's own writes, so the plan
    made outside the lock is still the one written."""

    labels: tuple[tuple[Any, ...], ...]
    queries: tuple[tuple[Any, ...], ...]
    documents: tuple[tuple[Any, ...], ...]
    candidates: int
    settings: tuple[Any, ...]

    def without(self, skipped: Skipped) -> SetState:
        """This state but for the rows `skipped` (pks, first of each row)."""
        return self._replace(
            labels=tuple(row for row in self.labels if row[0] not in skipped.labels),
            queries=tuple(row for row in self.queries if row[0] not in skipped.queries),
            documents=tuple(row for row in self.documents if row[0] not in skipped.documents),
        )


class Skipped(NamedTuple):
    """Rows of the set (pks) a transaction wrote itself, and left out of its reading of the set: rows it
    inserted, or locked, compared with the plan and then changed (`set_state`)."""

    labels: frozenset[int] = frozenset()
    queries: frozenset[int] = frozenset()
    documents: frozenset[int] = frozenset()


def set_state(golden_set: GoldenSet, skipped: Skipped = Skipped()) -> SetState:  # noqa: B008
    """The set as it stands, as a plan reads it, but for the rows `skipped`: a few reads of plain columns,
    no model instances."""
    labels = FrozenLabel.objects.filter(query__golden_set=golden_set).order_by("pk")
    queries = golden_set.queries.order_by("pk")
    documents = golden_set.documents.order_by("pk")
    if skipped.labels:
        labels = labels.exclude(pk__in=id_list(skipped.labels))
    if skipped.queries:
        queries = queries.exclude(pk__in=id_list(skipped.queries))
    if skipped.documents:
        documents = documents.exclude(pk__in=id_list(skipped.documents))
    return SetState(
        labels=tuple(labels.values_list(*HeldLabel._fields)),
        queries=tuple(queries.values_list(*QUERY_STATE)),
        documents=tuple(documents.values_list(*DOCUMENT_STATE)),
        candidates=Candidate.objects.filter(query__golden_set=golden_set).count(),
        settings=tuple(GoldenSet.objects.filter(pk=golden_set.pk).values_list(*SET_STATE).get()),
    )


def too_large(*, golden_set: GoldenSet, data: bytes, fmt: JudgmentsFormat) -> tuple[str, str, str] | None:
    """Why a file uploaded on the web is refused for its size alone, as (where, message, code), or None:
    decided by counting its queries and judgments (`assay.convert.sizes`, which stops once past a limit)
    before anything converts or checks it, so that a file a web request could not check in time is
    refused at once, in any format."""
    size = measure(
        fmt.name,
        data,
        max_queries=settings.ASSAY_WEB_GOLDEN_MAX_QUERIES,
        max_judgments=settings.ASSAY_WEB_GOLDEN_MAX_JUDGMENTS,
        topics_data=fmt.topics[1] if fmt.topics else None,
        unzip_limit=settings.ASSAY_MAX_UPLOAD_BYTES,
    )
    command = f"python manage.py import_golden {golden_set.slug} <file>"
    if fmt.name not in GOLDEN_FORMATS:
        command += f" --from {fmt.name}" + (" --topics <topics file>" if fmt.topics else "")
    for what, counted, setting in (
        ("queries", size.queries, "ASSAY_WEB_GOLDEN_MAX_QUERIES"),
        ("judgments", size.judgments, "ASSAY_WEB_GOLDEN_MAX_JUDGMENTS"),
    ):
        most = getattr(settings, setting)
        if counted > most:
            message = (
                f"the file holds more than {most:,} {what}; a file uploaded here may hold at most "
                f"{most:,} ({setting}), so that it is checked and written within one web request. "
                f"Import it on the server with: {command}"
            )
            return what, message, f"too_many_{what}"
    return None


def file_read(
    *, golden_set: GoldenSet, data: bytes, source: str, web_limits: bool, fmt: JudgmentsFormat
) -> tuple[ImportReport, GoldenFile | None]:
    """The report and the file as a golden file (None when it has problems): on the web counted first
    (`too_large`), converted when in another format, parsed. Reads nothing of the set but its settings."""
    report = ImportReport(kind="golden", source=source)
    if web_limits:
        refused = too_large(golden_set=golden_set, data=data, fmt=fmt)
        if refused:
            report.add(*refused)
            return report, None
    if fmt.name not in GOLDEN_FORMATS:  # parse reads both golden forms
        converted = golden_from_format(
            golden_set=golden_set, data=data, source=source, fmt=fmt, report=report
        )
        if converted is None:
            return report, None
        data = converted
    try:
        return report, parse(data)
    except GoldenFormatError as exc:
        for problem in exc.problems:
            report.add(problem.where, problem.message, problem.code, problem.query_id)
        return report, None


def file_checked(
    *, golden_set: GoldenSet, golden: GoldenFile, report: ImportReport
) -> tuple[dict[str, Document], dict[str, str]] | None:
    """The file against the set (scale, rubric, locales, documents, keys): every problem in `report`, and
    when there is none the set's documents by id and the keys to set on documents that have none."""
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
    documents = {d.doc_id: d for d in golden_set.documents.order_by("pk").only(*DOCUMENT_STATE)}
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
        return None
    return documents, new_keys


def _carried(fmt: JudgmentsFormat) -> tuple[str, ...]:
    """The query fields a file of this format gives (TREC qrels: the text only with a topics file)."""
    if fmt.name == "trec-qrels" and fmt.topics is None:
        return ()
    return FORMATS[fmt.name].carries


def import_plan(
    *,
    golden_set: GoldenSet,
    golden: GoldenFile,
    fmt: JudgmentsFormat,
    mode: str,
    report: ImportReport,
    source: str = "",
) -> ImportPlan | None:
    """The changes the file would make to the set in `mode`, reading the set as it stands (None, and the
    problems in `report`, when the file does not fit the set)."""
    checked = file_checked(golden_set=golden_set, golden=golden, report=report)
    if checked is None:
        return None
    documents, new_keys = checked
    changes = ImportChanges(keys=sorted(new_keys.items()))
    carried = _carried(fmt)
    queries = {q.external_id: q for q in golden_set.queries.order_by("pk")}
    created: dict[str, dict[str, Any]] = {}
    updates: dict[str, dict[str, Any]] = {}
    for q in golden.queries:
        values = _stored(q)
        row = queries.get(q.id)
        if row is None:
            created[q.id] = values  # a new query takes what the file gives (the format's defaults)
            changes.queries_created.append((q.id, q.text))
            continue
        wanted: dict[str, Any] = {}
        for name in carried:
            value = values[name]
            if value == _EMPTY[name] and mode == MERGE:
                continue  # left empty: kept
            if getattr(row, name) != value:
                wanted[name] = value
        if row.status != Query.Status.ACTIVE:
            wanted["status"] = Query.Status.ACTIVE.value  # named by the file: it returns
        if wanted:
            updates[q.id] = wanted
            changes.fields += [
                FieldChange(q.id, name, getattr(row, name), new) for name, new in wanted.items()
            ]

    sources = fmt.name in GOLDEN_FORMATS  # only Assay's own files say which labels a judge gave
    frozen_labels = FrozenLabel.objects.filter(query__golden_set=golden_set).order_by("pk")
    label_rows = tuple(frozen_labels.values_list(*HeldLabel._fields))
    query_ids = {row.pk: query_id for query_id, row in queries.items()}
    doc_ids = {doc.pk: doc_id for doc_id, doc in documents.items()}
    strays = {label[2] for label in label_rows if label[2] not in doc_ids}  # another set's document
    doc_ids |= dict(Document.objects.filter(pk__in=strays).values_list("pk", "doc_id")) if strays else {}
    existing = {
        (query_ids[label.query_id], doc_ids[label.document_id]): label
        for label in map(HeldLabel._make, label_rows)
    }
    writes: dict[tuple[str, str], tuple[int, str] | None] = {}
    named: set[tuple[str, str]] = set()
    for q in golden.queries:
        for j in q.judgments:
            pair = (q.id, j.doc_id)
            named.add(pair)
            source_ = (j.source or HUMAN) if sources else HUMAN
            held = existing.get(pair)
            if held is None:
                writes[pair] = (j.grade, source_)
                changes.labels.append(LabelChange(*pair, None, j.grade, "", source_))
            elif held.grade != j.grade or (sources and held.source != source_):
                writes[pair] = (j.grade, source_)
                changes.labels.append(LabelChange(*pair, held.grade, j.grade, held.source, source_))
    if mode == REPLACE:
        for pair, held in existing.items():
            if pair not in named:
                writes[pair] = None
                changes.labels.append(LabelChange(*pair, held.grade, None, held.source, ""))
    changes.labels.sort(key=lambda c: (c.kind, c.query_id, c.doc_id))

    pooled = list(
        Candidate.objects.filter(query__golden_set=golden_set).values_list("query_id", "document_id")
    )
    pooled_pairs = {(query_ids[q], doc_ids.get(d)) for q, d in pooled}
    changes.pools = sorted(pair for pair in named if pair not in pooled_pairs)

    set_values: dict[str, Any] = {}
    if fmt.name in GOLDEN_FORMATS:  # only Assay's own files carry k, the cutoff and a version name
        set_values = {"k": golden.k, "relevant_min_grade": golden.relevant_min_grade}
        if mode == REPLACE or not golden_set.frozen_version:
            set_values["frozen_version"] = golden.version
    for name, value in set_values.items():
        if getattr(golden_set, name) != value:
            changes.fields.append(FieldChange("", name, getattr(golden_set, name), value))
    state = SetState(
        labels=label_rows,
        queries=tuple(tuple(getattr(row, name) for name in QUERY_STATE) for row in queries.values()),
        documents=tuple(tuple(getattr(doc, name) for name in DOCUMENT_STATE) for doc in documents.values()),
        candidates=len(pooled),
        settings=tuple(getattr(golden_set, name) for name in SET_STATE),
    )
    return ImportPlan(
        golden=golden,
        mode=mode,
        changes=changes,
        documents=documents,
        queries=queries,
        created=created,
        updates=updates,
        writes=writes,
        existing=existing,
        set_values=set_values,
        state=state,
        source=source,
    )


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
