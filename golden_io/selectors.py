"""Reads for golden versions: lists, the live durable keys, stale documents, export status."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.db.models import Q, QuerySet

from assay.convert.formats import FORMATS
from assay.convert.options import Options
from assay.convert.zipped import zip_folder
from assay.golden.diff import GoldenDiff, diff
from assay.golden.format import natural_key
from assay.golden.model import JUDGE, TIERS, GoldenFile, GoldenQuery, Judgment, Scale
from assay.golden.refusals import checked
from golden_io.models import GitExport, GoldenVersion
from labeling.models import Document, GoldenSet, Query

if TYPE_CHECKING:
    from labeling.selectors import Unwritten


def live_keys(golden_set: GoldenSet) -> dict[str, str]:
    """Durable key -> current doc id for every keyed document of the set (what `resolve_keys` takes)."""
    rows = Document.objects.filter(golden_set=golden_set, key__isnull=False).values_list("key", "doc_id")
    return {key: doc_id for key, doc_id in rows if key}


def version_list(*, golden_set: GoldenSet) -> QuerySet[GoldenVersion]:
    """The set's versions, newest first, without their content (the list page does not need the bytes)."""
    return (
        GoldenVersion.objects.filter(golden_set=golden_set)
        .select_related("golden_set", "parent", "created_by")
        .defer("content", "documents", "parent__content", "parent__documents")
        .order_by("-created", "-id")
    )


def version_get(*, golden_set: GoldenSet, name: str) -> GoldenVersion | None:
    return (
        GoldenVersion.objects.filter(golden_set=golden_set, name=name)
        .select_related("golden_set__rubric", "parent", "created_by")
        .first()
    )


def version_latest(*, golden_set: GoldenSet) -> GoldenVersion | None:
    """The newest version of the set (the next freeze's parent), or None before the first freeze. Its file
    is read when parsed, once per process (`GoldenVersion.golden`)."""
    newest = GoldenVersion.objects.filter(golden_set=golden_set).defer("content")
    return newest.order_by("-created", "-id").first()


_JSON = "application/json"
_CSV = "text/csv; charset=utf-8"
_TEXT = "text/plain; charset=utf-8"
_ZIP = "application/zip"


@dataclass(frozen=True, slots=True)
class VersionFile:
    """One file of a version to download (the version page, the API's `files`), made by the writer of
    an `assay convert` format (`writes`, assay/convert/formats.py) as `assay convert --from golden --to
    <writes>` makes it; `writes` None: the frozen bytes themselves.

    `label` names the file as the tool that reads it does; the file is `<set>@<version><suffix>`. A
    format that writes several files comes as a zip of one folder of that name, holding the command's
    OUTPUT at `output` ("": the folder itself), its `--topics FILE` at `topics`, and with `corpus`,
    its `--documents FILE` being the set's documents (`corpus_get`)."""

    label: str
    content_type: str
    suffix: str
    writes: str | None
    output: str | None = None  # None: one file, not a zip
    topics: str | None = None
    corpus: bool = False


# A version's files by the name in their URL (`json`, `jsonl` and `qrels` as they always were).
VERSION_FILES: dict[str, VersionFile] = {
    "json": VersionFile("Golden file (JSON)", _JSON, ".json", None),
    "jsonl": VersionFile("Golden file (JSONL)", "application/x-ndjson", ".jsonl", "golden-jsonl"),
    "qrels": VersionFile("TREC qrels", _TEXT, ".qrels", "trec-qrels"),
    "trec-qrels": VersionFile(
        "TREC qrels + topics (zip)", _ZIP, ".trec.zip", "trec-qrels", output="qrels.txt", topics="topics.tsv"
    ),
    "quepid-csv": VersionFile("Quepid ratings CSV", _CSV, ".quepid.csv", "quepid-csv"),
    "srw-json": VersionFile("OpenSearch SRW judgments (JSON)", _JSON, ".srw.json", "srw-json"),
    "srw-csv": VersionFile("OpenSearch SRW judgments (CSV)", _CSV, ".srw.csv", "srw-csv"),
    "rre": VersionFile("RRE ratings (JSON)", _JSON, ".rre.json", "rre"),
    "beir": VersionFile("BEIR dataset with corpus (zip)", _ZIP, ".beir.zip", "beir", output="", corpus=True),
    "ltr": VersionFile("LTR judgment list", _TEXT, ".ltr.txt", "ltr"),
}


def version_file_get(*, version: GoldenVersion, fmt: str) -> tuple[bytes, str, str, dict[str, str]]:
    """(body, content type, file name, extra headers) of one of a version's files (`VERSION_FILES`), for
    the version page's download and the API alike. `json` is the frozen bytes themselves, never a re-dump,
    with their SHA-256 in `X-Content-SHA256`. Raises ValueError for another format (views check first)."""
    if fmt not in VERSION_FILES:
        raise ValueError(f"no file format {fmt!r}: one of {', '.join(VERSION_FILES)}")
    spec = VERSION_FILES[fmt]
    name = f"{version.golden_set.slug}@{version.name}"
    headers: dict[str, str] = {}
    if spec.writes is None:
        body = version.content_bytes
        headers["X-Content-SHA256"] = version.sha256
    else:
        options = Options(
            topics=Path(spec.topics) if spec.topics is not None else None,
            corpus=corpus_get(golden_set=version.golden_set) if spec.corpus else None,
        )
        output = Path(name + spec.suffix if spec.output is None else spec.output)
        files = FORMATS[spec.writes].write(version.golden(), output, options)
        body = files[output] if spec.output is None else zip_folder(files, name)
    return body, spec.content_type, name + spec.suffix, headers


def corpus_get(*, golden_set: GoldenSet) -> tuple[dict[str, Any], ...]:
    """The set's documents as they are now, in natural id order, as `assay.convert.beir.read_documents`
    reads a documents import file (docs/labeling.md): what `--documents FILE` gives `assay convert`."""
    rows = Document.objects.filter(golden_set=golden_set).values_list("doc_id", "title", "body", "snippet")
    return tuple(
        {"id": doc_id, "title": title, "body": body, "snippet": snippet}
        for doc_id, title, body, snippet in sorted(rows, key=lambda row: natural_key(row[0]))
    )


def export_list(*, version: GoldenVersion) -> QuerySet[GitExport]:
    return GitExport.objects.filter(version=version).select_related("by").order_by("-created", "-id")


# ------------------------------------------------------------------------------------------ working labels

WORKING = "working"  # the version label of the working labels in a diff ("what the next freeze changes")


@dataclass(frozen=True, slots=True)
class UnresolvedLabel:
    """A (query, document) the consolidated labels have no final grade for yet."""

    query_id: str  # external id
    doc_id: str
    tier: str
    reason: str

    def __str__(self) -> str:
        return f"{self.query_id} / {self.doc_id} ({self.tier}): {self.reason}"


# A version's count of documents graded on work not marked done, whose grades it left out.
NOT_DONE_COUNT = "left_out_not_done"


@dataclass(frozen=True, slots=True)
class NotDoneLabel:
    """A (query, document) graded on single-rater work the rater has not marked done: those grades are
    left out (`labeling.selectors.grade_counts`). `label` is the grade the file has for it without them
    (an earlier label, an adjudication, a judge's), None when the document is not in the file."""

    query_id: str  # external id
    doc_id: str
    grades: tuple[int, ...]
    label: int | None

    def __str__(self) -> str:
        graded = ", ".join(map(str, self.grades))
        kept = "not in the file" if self.label is None else f"the file keeps {self.label}"
        return f"{self.query_id} / {self.doc_id}: graded {graded}, not marked done ({kept})"


@dataclass(frozen=True, slots=True)
class WorkingGolden:
    """The golden file a freeze would write now, and what stands in its way.

    `blocked`: unresolved labels in core queries (a freeze refuses them or moves their queries to shadow).
    `left_out`: unresolved labels in shadow and challenge queries, left out of the file and listed.
    `not_done`: documents graded on single-rater work not marked done: those grades are left out.
    `documents`: per judged doc id, its durable key and the content hash that was judged.
    """

    golden: GoldenFile
    blocked: tuple[UnresolvedLabel, ...]
    left_out: tuple[UnresolvedLabel, ...]
    methods: dict[str, int]
    documents: dict[str, dict[str, str | None]]
    query_pks: dict[str, int]  # external id -> Query pk, for the queries in `golden`
    document_pks: dict[str, int]  # doc id -> Document pk, for the judged documents
    # (query external id, doc id) -> (judge pk or None, judge name) for each label a judge gave (its
    # judgment's source is "judge"): the frozen labels record which judge.
    judged_by: dict[tuple[str, str], tuple[int | None, str]]
    not_done: tuple[NotDoneLabel, ...] = ()

    @property
    def counts(self) -> dict[str, Any]:
        return (
            golden_counts(self.golden)
            | {
                "methods": dict(sorted(self.methods.items())),
                "left_out_unresolved": len(self.left_out),
                NOT_DONE_COUNT: len(self.not_done),
            }
            | judge_counts(self.golden, self.judged_by)
        )


def judge_counts(
    golden: GoldenFile, judged_by: dict[tuple[str, str], tuple[int | None, str]]
) -> dict[str, Any]:
    """How many of the file's labels a judge gave, and which judges (none: {}, so a version without judge
    labels records what it always did): {"judge_labels": n, "judges": [{"id", "name", "labels"}, ...]}."""
    n = golden.sources.get(JUDGE, 0)
    if not n:
        return {}
    by_judge = Counter(
        judged_by.get((q.id, j.doc_id), (None, ""))
        for q in golden.queries
        for j in q.judgments
        if j.source == JUDGE
    )
    judges = [
        {"id": judge_id, "name": name or "a judge not named (imported)", "labels": count}
        for (judge_id, name), count in sorted(
            by_judge.items(), key=lambda item: (item[0][1], item[0][0] or 0)
        )
    ]
    return {"judge_labels": n, "judges": judges}


def golden_counts(golden: GoldenFile) -> dict[str, Any]:
    tiers = Counter(q.tier for q in golden.queries)
    return {
        "queries": {tier: tiers.get(tier, 0) for tier in TIERS},
        "total_queries": len(golden.queries),
        "judgments": sum(len(q.judgments) for q in golden.queries),
        "documents": len({j.doc_id for q in golden.queries for j in q.judgments}),
    }


class WorkingGoldenInvalid(ValueError):
    """The working labels do not make a valid golden file (e.g. a query id with a space in it)."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("the working labels do not make a valid golden file:\n" + "\n".join(problems))


def working_golden_get(
    *, golden_set: GoldenSet, name: str = WORKING, unwritten: Unwritten | None = None
) -> WorkingGolden:
    """Build the golden file from the consolidated labels, the active queries and their tiers.

    Retired queries are left out. Raises `WorkingGoldenInvalid` when the result would not be a valid
    golden file (each problem names the query). With `unwritten`, changes not written yet are read as if
    they were (`labeling.selectors.Unwritten`).
    """
    built = _working_build(golden_set, name, unwritten)
    golden, problems = checked(built.raw)  # validated, and canonical (sorted) as the dump will be
    if golden is None:
        raise WorkingGoldenInvalid(problems)
    docs = built.docs
    return WorkingGolden(
        golden=golden,
        blocked=tuple(sorted(built.blocked, key=_label_order)),
        left_out=tuple(sorted(built.left_out, key=_label_order)),
        methods=dict(built.methods),
        documents=_judged_documents(golden_set, docs, built.doc_methods),
        query_pks={q.external_id: pk for pk, q in built.queries.items()},
        document_pks={d.doc_id: d.pk for d in docs.values()},
        judged_by=built.judged_by,
        not_done=tuple(built.not_done),
    )


def working_golden_raw(*, golden_set: GoldenSet, unwritten: Unwritten | None = None) -> GoldenFile:
    """The golden file a freeze would write now (or, with `unwritten`, once those changes are written),
    not yet checked: `assay.golden.refusals` says what a freeze would refuse in it."""
    return _working_build(golden_set, WORKING, unwritten).raw


@dataclass(slots=True)
class _Built:
    raw: GoldenFile
    queries: dict[int, Query]
    docs: dict[int, Document]
    blocked: list[UnresolvedLabel]
    left_out: list[UnresolvedLabel]
    not_done: list[NotDoneLabel]
    methods: Counter[str]
    doc_methods: dict[int, set[str]]
    judged_by: dict[tuple[str, str], tuple[int | None, str]]


def _working_build(golden_set: GoldenSet, name: str, unwritten: Unwritten | None) -> _Built:
    from labeling.selectors import labels_consolidated

    rubric = golden_set.rubric
    consolidated = labels_consolidated(golden_set=golden_set, unwritten=unwritten)
    queries = {q.pk: q for q in golden_set.queries.filter(status=Query.Status.ACTIVE)}
    settings: Mapping[str, Any] = {}
    if unwritten is not None:
        settings = unwritten.settings
        queries.update(unwritten.queries)
        queries = {pk: q for pk, q in queries.items() if q.status == Query.Status.ACTIVE}
    doc_pks = (
        {label.document_id for label in consolidated.labels}
        | {u.document_id for u in consolidated.unresolved}
        | {n.document_id for n in consolidated.not_done}
    )
    docs = {
        d.pk: d
        for d in Document.objects.filter(golden_set=golden_set, pk__in=doc_pks).only(
            "pk", "doc_id", "key", "content_hash"
        )
    }
    if unwritten is not None:
        for pk, key in unwritten.keys.items():
            if pk in docs:
                docs[pk].key = key
    judgments: dict[int, list[Judgment]] = {pk: [] for pk in queries}
    methods: Counter[str] = Counter()
    doc_methods: dict[int, set[str]] = {}
    judged_by: dict[tuple[str, str], tuple[int | None, str]] = {}
    for label in consolidated.labels:
        doc = docs.get(label.document_id)
        if label.query_id not in queries or doc is None:
            continue  # a retired query, or a document of another set: not part of this set's version
        source = JUDGE if label.source == JUDGE else None
        judgments[label.query_id].append(
            Judgment(doc_id=doc.doc_id, grade=label.grade, key=doc.key or None, source=source)
        )
        if source is not None:
            judged_by[(queries[label.query_id].external_id, doc.doc_id)] = (label.judge_id, label.judge_name)
        methods[label.method] += 1
        doc_methods.setdefault(doc.pk, set()).add(label.method)
    blocked: list[UnresolvedLabel] = []
    left_out: list[UnresolvedLabel] = []
    for u in consolidated.unresolved:
        query, doc = queries.get(u.query_id), docs.get(u.document_id)
        if query is None or doc is None:
            continue
        item = UnresolvedLabel(query.external_id, doc.doc_id, query.tier, u.reason)
        (blocked if query.tier == Query.Tier.CORE else left_out).append(item)
    not_done = sorted(
        (
            NotDoneLabel(queries[n.query_id].external_id, docs[n.document_id].doc_id, n.grades, n.label)
            for n in consolidated.not_done
            if n.query_id in queries and n.document_id in docs
        ),
        key=_label_order,
    )
    raw = GoldenFile(
        version=name,
        queries=tuple(_golden_query(q, judgments[pk]) for pk, q in queries.items()),
        k=settings.get("k", golden_set.k),
        relevant_min_grade=settings.get("relevant_min_grade", golden_set.relevant_min_grade),
        scale=Scale(rubric.scale_min, rubric.scale_max),
        rubric=str(rubric),
    )
    return _Built(raw, queries, docs, blocked, left_out, not_done, methods, doc_methods, judged_by)


def _label_order(u: UnresolvedLabel | NotDoneLabel) -> tuple[Any, ...]:
    return (natural_key(u.query_id), natural_key(u.doc_id))


def _golden_query(q: Query, judgments: list[Judgment]) -> GoldenQuery:
    return GoldenQuery(
        id=q.external_id,
        text=q.text,
        judgments=tuple(judgments),
        locale=q.locale or None,
        filters=q.filters,
        stratum=q.stratum or None,
        traffic_band=q.traffic_band or None,
        failure_mode=q.failure_mode or None,
        weight=q.weight,
        tier=q.tier,
        expect_empty=q.expect_empty,
        critical=q.critical,
        tags=tuple(q.tags) if isinstance(q.tags, list) else q.tags,
    )


def _judged_documents(
    golden_set: GoldenSet, docs: dict[int, Document], doc_methods: dict[int, set[str]]
) -> dict[str, dict[str, str | None]]:
    """doc id -> {"key", "content_hash"}: the hash that was judged.

    A document whose labels are all carried over from the frozen labels keeps the hash the previous
    version recorded for it (so a change since then stays visible as stale); otherwise the current hash.
    """
    previous = version_latest(golden_set=golden_set)
    recorded = previous.documents if previous is not None else {}
    by_key = {meta.get("key"): meta for meta in recorded.values() if meta.get("key")}
    out: dict[str, dict[str, str | None]] = {}
    for pk, methods in doc_methods.items():
        doc = docs[pk]
        content_hash = doc.content_hash
        if methods == {"frozen"}:
            before = by_key.get(doc.key) if doc.key else recorded.get(doc.doc_id)
            if before is not None and before.get("content_hash"):
                content_hash = str(before["content_hash"])
        out[doc.doc_id] = {"key": doc.key or None, "content_hash": content_hash}
    return dict(sorted(out.items(), key=lambda item: natural_key(item[0])))


# ------------------------------------------------------------------------------------------ diffs


def version_diff(*, old: GoldenVersion, new: GoldenVersion) -> GoldenDiff:
    return diff(old.golden(), new.golden())


def working_diff(*, golden_set: GoldenSet) -> tuple[GoldenVersion | None, WorkingGolden, GoldenDiff]:
    """What the next freeze would change against the newest version (everything, before the first)."""
    latest = version_latest(golden_set=golden_set)
    working = working_golden_get(golden_set=golden_set)
    base = latest.golden() if latest is not None else _empty_like(working.golden)
    return latest, working, diff(base, working.golden)


def _empty_like(golden: GoldenFile) -> GoldenFile:
    return replace(golden, version="(none)", queries=())


# ------------------------------------------------------------------------------------------ version page


@dataclass(frozen=True, slots=True)
class StaleDocument:
    """A judged document whose content changed since it was judged (or that is gone)."""

    doc_id: str  # as the version recorded it
    key: str | None
    live_doc_id: str | None  # None: no live document matches any more
    judged_hash: str
    live_hash: str | None
    queries: tuple[str, ...]  # the version's queries that judged it


def stale_documents(*, version: GoldenVersion, golden: GoldenFile | None = None) -> list[StaleDocument]:
    """Judged documents whose live content hash differs from the one recorded at the freeze.

    Matched by durable key when the document had one, else by doc id. A document that no longer exists
    is not stale but unresolved (the version page lists it with the unresolved keys).
    """
    golden = golden or version.golden()
    judged_in: dict[str, list[str]] = {}
    for q in golden.queries:
        for j in q.judgments:
            judged_in.setdefault(j.doc_id, []).append(q.id)
    recorded: dict[str, Any] = version.documents
    keys = [m["key"] for m in recorded.values() if m.get("key")]
    plain = [doc_id for doc_id, m in recorded.items() if not m.get("key")]
    live = Document.objects.filter(golden_set_id=version.golden_set_id).filter(
        Q(key__in=keys) | Q(doc_id__in=plain)
    )
    by_key = {d.key: d for d in live if d.key}
    by_id = {d.doc_id: d for d in live}
    out: list[StaleDocument] = []
    for doc_id, meta in recorded.items():
        doc = by_key.get(meta["key"]) if meta.get("key") else by_id.get(doc_id)
        if doc is None or doc.content_hash == meta.get("content_hash"):
            continue
        out.append(
            StaleDocument(
                doc_id=doc_id,
                key=meta.get("key"),
                live_doc_id=doc.doc_id,
                judged_hash=str(meta.get("content_hash")),
                live_hash=doc.content_hash,
                queries=tuple(sorted(judged_in.get(doc_id, ()), key=natural_key)),
            )
        )
    return sorted(out, key=lambda s: natural_key(s.doc_id))
