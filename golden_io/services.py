"""Writes for golden versions: freeze, golden-file import, export to git, re-judging queue, export
configuration. The freeze and the golden-file import are the only writers of the frozen labels.

The freeze (`golden_version_freeze`) locks the golden set row while it names and writes the version, so
two freezes at once are serialised: the second sees the first as its parent and takes the next name
(or, asked for the same explicit name, is refused). Nothing is half-written: a refused freeze changes
nothing, not even the tiers it would have moved. A freeze whose content is its parent's is refused
(`FreezeUnchanged`): a version is a change, never a new name for the same labels.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from django.contrib.auth.models import User
from django.db import IntegrityError, OperationalError, transaction
from django.db.models import Count
from django.utils import timezone

from assay import git_export
from assay.convert.formats import GOLDEN_FORMATS
from assay.display import counted
from assay.golden.diff import GoldenDiff, diff
from assay.golden.format import GoldenFormatError, count_queries, dump_json, dump_jsonl, parse
from assay.golden.model import GoldenFile
from assay.problems import ImportReport
from golden_io import selectors
from golden_io.foreign import GOLDEN, JudgmentsFormat, golden_from_format
from golden_io.models import (
    GitExport,
    GitExportConfig,
    GoldenVersion,
    credential_problems,
    version_name_problem,
)
from golden_io.selectors import UnresolvedLabel, WorkingGolden, WorkingGoldenInvalid
from labeling.models import Assignment, Document, FrozenLabel, GoldenSet, Query, TierMove
from labeling.selectors import proposals_pending_count
from labeling.selectors.labels import HUMAN
from labeling.services import (
    PoolEntry,
    assignment_rejudge_create,
    candidates_add,
    pool_add_judged,
    query_move_tier,
    retired_work_reopen,
)

REJUDGE_SYSTEM = "stale"  # pool provenance of a document queued again because its content changed


class FreezeError(Exception):
    """The freeze was refused; nothing was written. `problems` lists every reason."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


class FreezeUnchanged(FreezeError):
    """The labels, queries, documents and settings are the parent version's: a freeze would only rename
    them (`_unchanged` says what counts). `not_done` counts the documents graded on work not marked done,
    which would have changed it once done."""

    def __init__(self, parent: GoldenVersion, not_done: int = 0) -> None:
        self.parent = parent
        problems = [f"nothing changed since version {parent.name}: not frozen"]
        if not_done:
            problems.append(not_done_text(not_done))
        super().__init__(problems)


def not_done_text(n: int) -> str:
    """The freeze's words for the documents whose grades were left out as work not marked done."""
    return (
        f"{counted(n, 'document')} graded on work not marked done yet {'was' if n == 1 else 'were'} left"
        " out: a rater's grades count once the rater marks the query done"
    )


class FreezeBlocked(FreezeError):
    """Core queries have documents without a final grade; `unresolved` lists each (query, document)."""

    def __init__(self, unresolved: Sequence[UnresolvedLabel]) -> None:
        self.unresolved = list(unresolved)
        queries = len({u.query_id for u in unresolved})
        super().__init__(
            [
                f"{counted(len(unresolved), 'document')} in {queries} core "
                f"{'query' if queries == 1 else 'queries'} {'has' if len(unresolved) == 1 else 'have'} no "
                "final grade yet: resolve them, or freeze with quarantine_unresolved to move those "
                "queries to the shadow tier first",
                *(str(u) for u in unresolved),
            ]
        )


# ------------------------------------------------------------------------------------------ freeze


def version_name_next(*, golden_set: GoldenSet, on: dt.date) -> str:
    """`2026-08-01`, then `2026-08-01.2`, `.3`... for further freezes on the same day."""
    base = on.isoformat()
    taken = set(
        GoldenVersion.objects.filter(golden_set=golden_set, name__startswith=base).values_list(
            "name", flat=True
        )
    )
    if base not in taken:
        return base
    suffixes = [int(m.group(1)) for name in taken if (m := re.fullmatch(re.escape(base) + r"\.(\d+)", name))]
    return f"{base}.{max([1, *suffixes]) + 1}"


def golden_version_freeze(
    *,
    golden_set: GoldenSet,
    by: User | None,
    name: str | None = None,
    notes: str = "",
    quarantine_unresolved: bool = False,
    on: dt.date | None = None,
) -> GoldenVersion:
    """Cut an immutable version from the consolidated labels, the active queries and their tiers.

    `name` defaults to the date (`on`, default today in the configured time zone), `.2` etc. for more
    on the same day. Unresolved labels in core queries refuse the freeze (`FreezeBlocked`) unless
    `quarantine_unresolved`, which first moves those queries to shadow (listed in the notes).
    Content identical to the newest version's refuses the freeze (`FreezeUnchanged`, naming it).
    Afterwards the set's frozen labels and `frozen_version` are the new version's.
    """
    try:
        return _freeze(
            golden_set=golden_set,
            by=by,
            name=name,
            notes=notes,
            quarantine_unresolved=quarantine_unresolved,
            on=on,
        )
    except OperationalError as exc:
        # SQLite (`make run`) locks the whole database for a writer instead of waiting on the set's row
        # lock as PostgreSQL does: the second of two simultaneous freezes is refused, nothing written.
        if "locked" not in str(exc):
            raise
        problem = f"another write held the database ({exc}): nothing was frozen; try again"
        raise FreezeError([problem]) from exc


@transaction.atomic
def _freeze(
    *,
    golden_set: GoldenSet,
    by: User | None,
    name: str | None,
    notes: str,
    quarantine_unresolved: bool,
    on: dt.date | None,
) -> GoldenVersion:
    # The lock serialises freezes of one set: naming, parent and content are read under it.
    locked = GoldenSet.objects.select_for_update().select_related("rubric").get(pk=golden_set.pk)
    parent = selectors.version_latest(golden_set=locked)
    if name is None:
        name = version_name_next(golden_set=locked, on=on or timezone.localdate())
    problems: list[str] = []
    if problem := version_name_problem(name):
        problems.append(problem)
    elif GoldenVersion.objects.filter(golden_set=locked, name=name).exists():
        problems.append(
            f"golden set {locked.slug} already has a version {name!r}: versions are never replaced"
        )
    if problems:
        raise FreezeError(problems)
    try:
        working = selectors.working_golden_get(golden_set=locked, name=name)
    except WorkingGoldenInvalid as exc:
        raise FreezeError(exc.problems) from None
    extra_notes: list[str] = []
    if working.blocked:
        if not quarantine_unresolved:
            raise FreezeBlocked(working.blocked)
        extra_notes.append(_quarantine(locked, working, name, by))
        working = selectors.working_golden_get(golden_set=locked, name=name)
        if working.blocked:  # labels changed under us in a way the lock does not cover: refuse, roll back
            raise FreezeBlocked(working.blocked)
    if parent is not None and _unchanged(parent, working):
        raise FreezeUnchanged(parent, len(working.not_done))
    if working.not_done:
        extra_notes.append(
            f"Left out: {not_done_text(len(working.not_done))}.\n"
            + "\n".join(f"- {n}" for n in working.not_done)
        )
    if working.left_out:
        extra_notes.append(
            "Left out (no final grade yet, shadow or challenge queries):\n"
            + "\n".join(f"- {u}" for u in working.left_out)
        )
    pending = proposals_pending_count(golden_set=locked)
    if pending:
        extra_notes.append(
            f"{counted(pending, 'proposed label change')} {'was' if pending == 1 else 'were'} pending"
            " review: those documents keep their earlier labels until a reviewer accepts the change."
        )
    content = dump_json(working.golden)
    try:
        with transaction.atomic():
            version = GoldenVersion.objects.create(
                golden_set=locked,
                name=name,
                content=content,
                sha256=hashlib.sha256(content).hexdigest(),
                parent=parent,
                rubric_name=locked.rubric.name,
                rubric_version=locked.rubric.version,
                k=working.golden.k,
                relevant_min_grade=working.golden.relevant_min_grade,
                scale_min=working.golden.scale.min,
                scale_max=working.golden.scale.max,
                counts=working.counts | {"pending_proposals": pending},
                documents=working.documents,
                notes="\n\n".join(part for part in (notes.strip(), *extra_notes) if part),
                created_by=by,
            )
    except IntegrityError:
        # Only reachable without the row lock (SQLite ignores select_for_update): same name, raced.
        raise FreezeError([f"golden set {locked.slug} already has a version {name!r}"]) from None
    _replace_frozen_labels(working, name)
    locked.frozen_version = name
    locked.save(update_fields=["frozen_version"])
    golden_set.frozen_version = name
    return version


def _unchanged(parent: GoldenVersion, working: WorkingGolden) -> bool:
    """Is the working golden the parent's content? Content is what a version holds about the labels:
    the golden file but for its version name (the queries with every field and tier, their labels,
    k, the cutoff, the scale, the rubric) and the judged documents (doc id -> key and judged content
    hash). Per-version metadata is not content: name, notes, counts (pending proposals included), who
    froze it and when."""
    if parent.documents != working.documents:
        return False
    try:
        frozen = parent.golden()
    except GoldenFormatError:  # a version the current format cannot read back: something changed
        return False
    return replace(frozen, version=working.golden.version) == working.golden


def _quarantine(golden_set: GoldenSet, working: WorkingGolden, name: str, by: User | None) -> str:
    """Move the core queries with unresolved labels to shadow; the text for the version's notes."""
    by_query: dict[str, list[UnresolvedLabel]] = {}
    for u in working.blocked:
        by_query.setdefault(u.query_id, []).append(u)
    lines = [f"Moved to shadow before freezing (unresolved labels in core queries, freeze {name}):"]
    for query_id, items in by_query.items():
        reason = f"freeze {name}: no final grade for " + ", ".join(f"{u.doc_id} ({u.reason})" for u in items)
        for query in Query.objects.filter(golden_set=golden_set, external_id=query_id):
            query_move_tier(query=query, tier=Query.Tier.SHADOW, by=by, reason=reason)
        lines.append(f"- {query_id}: " + ", ".join(f"{u.doc_id} ({u.reason})" for u in items))
    return "\n".join(lines)


def _replace_frozen_labels(working: WorkingGolden, name: str) -> None:
    """The version's judgments become the frozen labels of its queries (retired queries keep theirs).

    Only what changed is written (deleted, regraded, created), then one UPDATE stamps the version name:
    re-creating every row would cost seconds on a large set for a freeze that changed a few grades.
    """
    query_pks = [working.query_pks[q.id] for q in working.golden.queries]
    # (grade, source, judge pk, judge name) per pair: who decided a label is frozen with it.
    wanted: dict[tuple[int, int], _Frozen] = {}
    for q in working.golden.queries:
        for j in q.judgments:
            judge_id, judge_name = working.judged_by.get((q.id, j.doc_id), (None, ""))
            pair = (working.query_pks[q.id], working.document_pks[j.doc_id])
            wanted[pair] = _Frozen(j.grade, j.source or HUMAN, judge_id, judge_name)
    existing: dict[tuple[int, int], tuple[int, _Frozen]] = {}
    for chunk in _chunks(query_pks):
        rows = FrozenLabel.objects.filter(query_id__in=chunk).values_list(
            "pk", "query_id", "document_id", "grade", "source", "judge_id", "judge_name"
        )
        existing.update({(q, d): (pk, _Frozen(g, s, j, n)) for pk, q, d, g, s, j, n in rows})
    gone = [pk for pair, (pk, _) in existing.items() if pair not in wanted]
    changed: dict[_Frozen, list[int]] = {}
    for pair, (pk, held) in existing.items():
        if pair in wanted and wanted[pair] != held:
            changed.setdefault(wanted[pair], []).append(pk)
    for chunk in _chunks(gone):
        FrozenLabel.objects.filter(pk__in=chunk).delete()
    for label, pks in changed.items():
        for chunk in _chunks(pks):
            FrozenLabel.objects.filter(pk__in=chunk).update(**label._asdict())
    for chunk in _chunks(query_pks):
        FrozenLabel.objects.filter(query_id__in=chunk).update(version=name)
    FrozenLabel.objects.bulk_create(
        [
            FrozenLabel(query_id=q, document_id=d, version=name, **label._asdict())
            for (q, d), label in wanted.items()
            if (q, d) not in existing
        ],
        batch_size=1000,
    )


class _Frozen(NamedTuple):
    """A frozen label's values beside its pair: the grade and who decided it."""

    grade: int
    source: str
    judge_id: int | None
    judge_name: str


def _chunks(values: Sequence[int], size: int = 10_000) -> list[Sequence[int]]:
    """Slices of `values` small enough for one statement's parameters (PostgreSQL allows 65535)."""
    return [values[i : i + size] for i in range(0, len(values), size)]


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


# ------------------------------------------------------------------------------------------ git export


class ExportConfigError(ValueError):
    def __init__(self, problems: dict[str, str]) -> None:
        self.problems = problems
        super().__init__("; ".join(f"{k}: {v}" for k, v in problems.items()))


def git_export_configure(
    *,
    golden_set: GoldenSet,
    repository_path: str,
    file_path: str,
    branch: str = "main",
    file_format: str = GitExportConfig.Format.JSON,
    remote_url: str = "",
    username_env: str = "",
    password_env: str = "",
) -> GitExportConfig:
    """Create or replace the set's export configuration; `ExportConfigError` names each bad field."""
    problems = git_export.config_problems(
        repository_path=repository_path,
        branch=branch,
        file_path=file_path,
        remote_url=remote_url,
        username_env=username_env,
        password_env=password_env,
    )
    if file_format not in GitExportConfig.Format.values:
        problems["file_format"] = f"file format {file_format!r} must be json or jsonl"
    # The name rule's refusals are config_problems' already (its words kept).
    problems = {**credential_problems(golden_set, username_env, password_env), **problems}
    if problems:
        raise ExportConfigError(problems)
    config, _ = GitExportConfig.objects.update_or_create(
        golden_set=golden_set,
        defaults={
            "repository_path": repository_path,
            "branch": branch,
            "file_path": file_path,
            "file_format": file_format,
            "remote_url": remote_url,
            "username_env": username_env,
            "password_env": password_env,
        },
    )
    return config


def export_message(*, version: GoldenVersion, change: GoldenDiff | None) -> str:
    """The commit (and tag) message: a subject with the counts, the diff summary, the methodology."""
    counts = version.counts
    tiers = counts.get("queries", {})
    subject = (
        f"golden {version}: {counts.get('total_queries', 0)} queries ("
        + ", ".join(f"{tier} {n}" for tier, n in tiers.items())
        + f"), {counts.get('judgments', 0)} judgments"
    )
    body = [
        change.summary() if change is not None else f"First version of golden set {version.golden_set.slug}.",
        f"Rubric {version.rubric_label}, k={version.k}, relevant_min_grade={version.relevant_min_grade}, "
        f"scale {version.scale_min}..{version.scale_max}.",
        f"sha256 {version.sha256}",
        f"Frozen by {version.created_by or 'unknown'} at {version.created:%Y-%m-%d %H:%M} UTC.",
    ]
    return subject + "\n\n" + "\n\n".join(body) + "\n"


def export_author(user: User | None) -> git_export.Author:
    if user is None:
        return git_export.Author("Assay", "assay@localhost")
    return git_export.Author(
        user.get_full_name() or user.username, user.email or f"{user.username}@localhost"
    )


def golden_version_export(*, version: GoldenVersion, by: User | None) -> GitExport:
    """Write the version to its set's git repository, tag `golden@<name>`, push when a remote is set.

    Always returns the recorded `GitExport` row: its status says exported / unchanged / push_failed /
    refused / failed, and its message what happened and what to do.
    """
    config = GitExportConfig.objects.filter(golden_set_id=version.golden_set_id).first()
    row = GitExport(version=version, tag=version.tag, by=by)
    if config is None:
        row.status = GitExport.Status.FAILED
        row.message = (
            f"golden set {version.golden_set.slug} has no git export configured: set the repository path, "
            "branch and file path first"
        )
        row.save()
        return row
    row.repository_path, row.branch, row.file_path = config.repository_path, config.branch, config.file_path
    row.remote_url = config.remote_url
    # The credentials granted to the set still (a grant withdrawn since the export was configured stops
    # the push here): refused before anything is written or sent.
    refused = credential_problems(version.golden_set, config.username_env, config.password_env)
    if config.remote_url and refused:
        row.status = GitExport.Status.FAILED
        row.message = "nothing was written: " + "; ".join(f"{k}: {v}" for k, v in refused.items())
        row.save()
        return row
    golden = version.golden()
    content = (
        version.content_bytes if config.file_format == GitExportConfig.Format.JSON else dump_jsonl(golden)
    )
    change = diff(version.parent.golden(), golden) if version.parent is not None else None
    message = export_message(version=version, change=change)
    remote = (
        git_export.Remote(config.remote_url, config.username_env, config.password_env)
        if config.remote_url
        else None
    )
    try:
        result = git_export.git_write(
            repository_path=config.repository_path,
            branch=config.branch,
            files={config.file_path: content},
            message=message,
            author=export_author(by if by is not None else version.created_by),
            tag=version.tag,
            remote=remote,
        )
    except git_export.TagConflict as exc:
        row.status, row.message = GitExport.Status.REFUSED, str(exc)
    except (git_export.GitExportError, OSError) as exc:
        row.status, row.message = GitExport.Status.FAILED, f"nothing was written: {exc}"
    else:
        row.commit, row.pushed = result.commit, result.pushed
        if result.push_error is not None:
            row.status, row.message = GitExport.Status.PUSH_FAILED, result.push_error
        elif not result.created:
            row.status = GitExport.Status.UNCHANGED
            row.message = (
                f"{version.tag} already holds this content at {result.commit[:12]}: nothing written"
                + ("; pushed" if result.pushed else "")
            )
        else:
            row.status = GitExport.Status.EXPORTED
            row.message = f"committed {result.commit[:12]} on {config.branch} and tagged {version.tag}" + (
                f"; pushed to {config.remote_url}" if result.pushed else ""
            )
    row.save()
    return row


# ------------------------------------------------------------------------------------------ re-judging


@dataclass(slots=True)
class RequeueReport:
    assignments: int = 0
    candidates_added: int = 0
    queued: list[str] = field(default_factory=list)  # "q-1: doc-7, doc-9 -> bob"
    notes: list[str] = field(default_factory=list)


@transaction.atomic
def stale_requeue(*, version: GoldenVersion, doc_ids: Sequence[str] | None = None) -> RequeueReport:
    """Queue the version's stale documents (all, or `doc_ids`) for re-judging.

    Per query that judged them, one assignment scoped to those documents goes to a rater of the set who
    has not held the query (nobody grades a query twice; see labeling's Assignment constraint), the
    least loaded first. A query with no such rater left is reported, not skipped silently.
    """
    golden_set = version.golden_set
    stale = selectors.stale_documents(version=version)
    if doc_ids is not None:
        wanted = set(doc_ids)
        unknown = wanted - {s.doc_id for s in stale}
        if unknown:
            raise FreezeError([f"{d} is not a stale document of {version}" for d in sorted(unknown)])
        stale = [s for s in stale if s.doc_id in wanted]
    report = RequeueReport()
    if not stale:
        report.notes.append(f"{version} has no stale documents")
        return report
    by_query: dict[str, list[str]] = {}
    for s in stale:
        if s.live_doc_id is not None:
            for qid in s.queries:
                by_query.setdefault(qid, []).append(s.live_doc_id)
    raters = list(golden_set.raters.order_by("id"))
    load = dict(
        Assignment.objects.filter(rater__in=raters, status=Assignment.Status.OPEN)
        .values_list("rater")
        .annotate(n=Count("id"))
        .values_list("rater", "n")
    )
    queries = {
        q.external_id: q
        for q in Query.objects.filter(golden_set=golden_set, external_id__in=list(by_query)).prefetch_related(
            "assignments"
        )
    }
    for qid, live_ids in sorted(by_query.items()):
        query = queries.get(qid)
        if query is None or query.status != Query.Status.ACTIVE:
            report.notes.append(f"query {qid} is retired or gone: not queued")
            continue
        docs = list(Document.objects.filter(golden_set=golden_set, doc_id__in=live_ids))
        report.candidates_added += candidates_add(
            query=query, entries=[PoolEntry(d, REJUDGE_SYSTEM, None) for d in docs]
        )
        held = {a.rater_id for a in query.assignments.all() if a.calibration_round_id is None}
        free = [r for r in raters if r.pk not in held]
        if not free:
            report.notes.append(f"query {qid}: every rater of the set has graded it before; add a rater")
            continue
        rater = min(free, key=lambda r: (load.get(r.pk, 0), r.pk))
        assignment_rejudge_create(query=query, rater=rater, documents=docs)
        load[rater.pk] = load.get(rater.pk, 0) + 1
        report.assignments += 1
        report.queued.append(f"{qid}: {', '.join(sorted(d.doc_id for d in docs))} -> {rater.username}")
    return report
