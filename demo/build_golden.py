"""Build demo/golden.json from the judged query specs in demo/golden_spec.py.

    python -m demo.build_golden            write demo/golden.json
    python -m demo.build_golden --check    exit 1 if demo/golden.json is out of date
    python -m demo.build_golden --pools [QUERY_ID ...]
                                           print each query's pool (what the engine returns with the
                                           rewriter off and on, top k) with the grades given so far

Judgments name documents by a short reference: the slug of an en-US document (`refund-policy`), or
`de:`/`fr:` + slug for a localized one; they are written with the live doc id and the durable key.
The build refuses (exit 2) while any query's pool holds a document without a grade, so both runs
(rewriter off and on) are fully judged.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from assay.golden.format import dump_json
from assay.golden.model import GoldenFile, GoldenQuery, Judgment
from demo.golden_spec import QUERIES, RUBRIC_NAME, VERSION, QuerySpec
from demo.search_service import (
    DEFAULT_SYNONYMS_PATH,
    Document,
    SearchIndex,
    SearchResult,
    SynonymPack,
    build_index,
    load_corpus,
    load_synonyms,
    search,
)

DEMO_DIR = Path(__file__).resolve().parent
CORPUS_PATH = DEMO_DIR / "corpus.jsonl"
GOLDEN_PATH = DEMO_DIR / "golden.json"
K = 10
LOCALE_PREFIXES = {"de": "de-DE", "fr": "fr-FR"}


class SpecError(ValueError):
    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


def doc_refs(docs: Sequence[Document]) -> dict[str, Document]:
    """Reference -> document: `slug` for en-US, `de:slug` / `fr:slug` for the localized ones."""
    refs: dict[str, Document] = {}
    for doc in docs:
        slug = (doc.key or doc.id).rstrip("/").rsplit("/", 1)[-1]
        locale = doc.fields.get("locale", "en-US")
        prefix = next((p for p, loc in LOCALE_PREFIXES.items() if loc == locale), None)
        refs[f"{prefix}:{slug}" if prefix else slug] = doc
    return refs


@dataclass(frozen=True, slots=True)
class Pool:
    off: tuple[str, ...]
    on: tuple[str, ...]

    @property
    def ids(self) -> list[str]:
        return list(dict.fromkeys((*self.off, *self.on)))


class QueryLike(Protocol):
    @property
    def text(self) -> str: ...
    @property
    def filters(self) -> Mapping[str, Any]: ...
    @property
    def locale(self) -> str | None: ...


def run_query(
    index: SearchIndex, query: QueryLike, synonyms: SynonymPack, *, rewrite: bool, k: int = K
) -> SearchResult:
    """One golden query (a QuerySpec or a GoldenQuery) as the harness would send it: filters, locale, k."""
    return search(
        index,
        query.text,
        filters=query.filters,
        locale=query.locale,
        size=k,
        rewrite=rewrite,
        synonyms=synonyms,
    )


def query_pool(index: SearchIndex, spec: QueryLike, synonyms: SynonymPack, *, k: int = K) -> Pool:
    off, on = (run_query(index, spec, synonyms, rewrite=rewrite, k=k) for rewrite in (False, True))
    return Pool(off=tuple(h.id for h in off.hits), on=tuple(h.id for h in on.hits))


def build_golden(
    specs: Sequence[QuerySpec], docs: Sequence[Document], index: SearchIndex, synonyms: SynonymPack
) -> GoldenFile:
    """The golden file; raises SpecError naming every unknown reference and every unjudged pooled doc."""
    refs = doc_refs(docs)
    ref_of = {doc.id: ref for ref, doc in refs.items()}
    problems: list[str] = []
    seen: set[str] = set()
    queries: list[GoldenQuery] = []
    for spec in specs:
        if spec.id in seen:
            problems.append(f"{spec.id}: duplicate query id")
        seen.add(spec.id)
        unknown = sorted(ref for ref in spec.grades if ref not in refs)
        if unknown:
            problems.append(f"{spec.id}: unknown document references {unknown}")
            continue
        pool = query_pool(index, spec, synonyms)
        judged_ids = {refs[ref].id for ref in spec.grades}
        unjudged = [ref_of[doc_id] for doc_id in pool.ids if doc_id not in judged_ids]
        if unjudged:
            problems.append(f"{spec.id}: pooled documents without a grade: {unjudged}")
            continue
        judgments = tuple(
            Judgment(doc_id=refs[ref].id, grade=grade, key=refs[ref].key)
            for ref, grade in spec.grades.items()
        )
        queries.append(
            GoldenQuery(
                id=spec.id,
                text=spec.text,
                judgments=judgments,
                locale=spec.locale,
                filters=dict(spec.filters),
                stratum=spec.stratum,
                weight=spec.weight,
                tier=spec.tier,
                expect_empty=spec.expect_empty,
                critical=spec.critical,
                tags=tuple(spec.tags),
            )
        )
    if problems:
        raise SpecError(problems)
    return GoldenFile(version=VERSION, queries=tuple(queries), k=K, rubric=RUBRIC_NAME)


def print_pools(
    specs: Sequence[QuerySpec],
    docs: Sequence[Document],
    index: SearchIndex,
    synonyms: SynonymPack,
    only: Sequence[str] = (),
) -> None:
    refs = doc_refs(docs)
    ref_of = {doc.id: ref for ref, doc in refs.items()}
    by_id = {doc.id: doc for doc in docs}
    for spec in specs:
        if only and spec.id not in only:
            continue
        pool = query_pool(index, spec, synonyms)
        where = f"[{spec.stratum}/{spec.tier}] filters={dict(spec.filters)} {spec.locale}"
        print(f"\n{spec.id} {spec.text!r} {where}")
        for doc_id in pool.ids:
            doc = by_id[doc_id]
            ref = ref_of[doc_id]
            grade = spec.grades.get(ref, "?")
            ranks = _rank(pool.off, doc_id) + "/" + _rank(pool.on, doc_id)
            print(f"  {grade} {ranks:>5} {ref:<40} {_describe(doc.fields)} {doc.title}")
        extra = [ref for ref in spec.grades if ref in refs and refs[ref].id not in pool.ids]
        if extra:
            print("    judged, not pooled: " + ", ".join(f"{ref}={spec.grades[ref]}" for ref in extra))


def _rank(ids: Sequence[str], doc_id: str) -> str:
    return str(ids.index(doc_id) + 1) if doc_id in ids else "-"


def _describe(fields: Mapping[str, object]) -> str:
    return f"[{fields.get('product')}/{fields.get('section')}/{fields.get('status')}/{fields.get('locale')}]"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m demo.build_golden", description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if demo/golden.json is out of date")
    parser.add_argument("--pools", nargs="*", metavar="QUERY_ID", help="print pools instead of writing")
    args = parser.parse_args(argv)
    docs = load_corpus(CORPUS_PATH)
    index = build_index(docs)
    synonyms = load_synonyms(DEFAULT_SYNONYMS_PATH)
    if args.pools is not None:
        print_pools(QUERIES, docs, index, synonyms, args.pools)
        return 0
    try:
        data = dump_json(build_golden(QUERIES, docs, index, synonyms))
    except SpecError as exc:
        print(exc, file=sys.stderr)
        return 2
    if args.check:
        if not GOLDEN_PATH.exists() or GOLDEN_PATH.read_bytes() != data:
            print(f"{GOLDEN_PATH} is out of date: run python -m demo.build_golden", file=sys.stderr)
            return 1
        return 0
    tmp = GOLDEN_PATH.with_suffix(".json.tmp")
    tmp.write_bytes(data)
    tmp.replace(GOLDEN_PATH)
    print(f"wrote {GOLDEN_PATH} ({len(QUERIES)} queries)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
