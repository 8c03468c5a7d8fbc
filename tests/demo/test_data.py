"""The demo data: corpus, golden file, rubric, query log, budgets and synonyms are consistent and current."""

from __future__ import annotations

import csv
import json
from collections import Counter

import pytest

from assay.drift import load_budgets
from assay.golden.format import dump_json, golden_warnings
from assay.golden.model import GoldenFile
from assay.labels.querylog import normalize, strip_pii
from demo import build_corpus, build_golden, build_query_log, build_sxs_answers
from demo.search_service import Document, SearchIndex, SynonymPack, filters_match, locale_matches
from tests.demo.conftest import DEMO

STRATA = {"billing", "account", "developer", "blog"}


# ------------------------------------------------------------------------------------------ corpus


def test_it_has_a_few_hundred_documents_with_unique_ids_and_keys(demo_docs: list[Document]) -> None:
    assert 300 <= len(demo_docs) <= 400
    assert len({d.id for d in demo_docs}) == len(demo_docs)
    assert len({d.key for d in demo_docs}) == len(demo_docs)
    assert all(d.id.startswith("doc-") and d.id[4:].isdigit() for d in demo_docs)
    assert all(d.title and d.body and d.snippet and d.url and d.key for d in demo_docs)


def test_it_spreads_documents_over_products_statuses_and_locales(demo_docs: list[Document]) -> None:
    fields = [d.fields for d in demo_docs]
    assert {f["product"] for f in fields} == STRATA
    statuses = Counter(f["status"] for f in fields)
    assert statuses["published"] > 0.9 * len(demo_docs)
    assert statuses["draft"] >= 2 and statuses["archived"] >= 5
    locales = Counter(f["locale"] for f in fields)
    assert locales["en-US"] > 0.8 * len(demo_docs)
    assert locales["de-DE"] >= 20 and locales["fr-FR"] >= 20


def test_it_keeps_the_seeds_canonical_refund_policy_at_doc_8821(demo_docs: list[Document]) -> None:
    doc = next(d for d in demo_docs if d.id == "doc-8821")
    assert doc.title == "Refund policy for Lanternly plans"
    assert dict(doc.fields) | {"updated": None} == {
        "product": "billing",
        "section": "refunds",
        "status": "published",
        "locale": "en-US",
        "updated": None,
    }
    assert doc.key == "https://help.lanternly.example/en-us/billing/refund-policy"


def test_it_has_committed_the_corpus_its_sources_build() -> None:
    assert build_corpus.main(["--check"]) == 0


def test_it_reports_every_bad_source_block_with_its_line() -> None:
    text = (
        "## billing/refunds/ok\n# Title\n> Snippet\nBody.\n\n"
        "## nope\n# T\n"
        "## blog/x/y locale=xx-XX\n# T\nno snippet\n"
    )
    with pytest.raises(build_corpus.SourceError) as caught:
        build_corpus.parse_source(text, source="s.txt")
    assert caught.value.problems == [
        "s.txt:6: header must be '## product/section/slug [name=value ...]'",
        "s.txt:8: a '> snippet' line must follow the title",
        "s.txt:8: locale 'xx-XX' is not one of ('en-US', 'de-DE', 'fr-FR')",
    ]


# ------------------------------------------------------------------------------------------ golden


def test_it_parses_the_golden_file_in_canonical_form(demo_golden: GoldenFile) -> None:
    assert dump_json(demo_golden) == (DEMO / "golden.json").read_bytes()
    assert demo_golden.version == "2026-08-01"
    assert demo_golden.k == 10
    assert golden_warnings(demo_golden) == []


def test_it_carries_the_seeds_refund_query(demo_golden: GoldenFile) -> None:
    query = demo_golden.query("q-0471")
    assert query.text == "refund policy for annual plan"
    assert dict(query.filters) == {"product": "billing", "status": "published"}
    assert query.grades["doc-8821"] == 3
    assert query.stratum == "billing"


def test_it_covers_strata_tiers_locales_and_flags(demo_golden: GoldenFile) -> None:
    queries = demo_golden.queries
    assert 70 <= len(queries) <= 100
    assert {q.stratum for q in queries} == STRATA
    tiers = Counter(q.tier for q in queries)
    assert tiers["shadow"] >= 2 and tiers["challenge"] >= 2
    assert {q.locale for q in queries} >= {"en-US", "de-DE", "fr-FR", None}
    assert sum(q.expect_empty for q in queries) >= 1
    assert sum(q.critical for q in queries) >= 1
    assert sum(bool(q.filters) for q in queries) > len(queries) / 2
    assert len({q.weight for q in queries}) > 20


def test_it_names_only_corpus_documents_by_their_id_and_key(
    demo_golden: GoldenFile, demo_docs: list[Document]
) -> None:
    keys = {d.id: d.key for d in demo_docs}
    for query in demo_golden.queries:
        for judgment in query.judgments:
            assert judgment.doc_id in keys, (query.id, judgment.doc_id)
            assert judgment.key == keys[judgment.doc_id], (query.id, judgment.doc_id)


def test_it_judges_only_documents_on_the_querys_surface(
    demo_golden: GoldenFile, demo_docs: list[Document]
) -> None:
    # Judgments are scoped to the product surface and locale (docs/labeling.md): a filter-excluded document
    # would only lower the ideal DCG of a query that can never retrieve it.
    fields = {d.id: d.fields for d in demo_docs}
    for query in demo_golden.queries:
        for judgment in query.judgments:
            doc_fields = fields[judgment.doc_id]
            assert filters_match(doc_fields, query.filters), (query.id, judgment.doc_id)
            assert locale_matches(doc_fields, query.locale), (query.id, judgment.doc_id)


def test_it_judges_every_document_either_run_returns(
    demo_golden: GoldenFile, demo_index: SearchIndex, demo_synonyms: SynonymPack
) -> None:
    for query in demo_golden.queries:
        judged = query.grades
        for rewrite in (False, True):
            hits = build_golden.run_query(
                demo_index, query, demo_synonyms, rewrite=rewrite, k=demo_golden.k
            ).hits
            unjudged = [h.id for h in hits if h.id not in judged]
            assert unjudged == [], (query.id, rewrite)
            if query.expect_empty:
                assert hits == ()


def test_it_has_committed_the_golden_file_its_spec_builds() -> None:
    assert build_golden.main(["--check"]) == 0


def test_it_has_committed_the_side_by_side_answers_its_builder_writes() -> None:
    """demo/sxs_answers.json (the demo study's answers, docs/sxs.md) is what the demo engine's lists and the
    golden grades give today: a change of either is a change of the answers, made by rebuilding them."""
    assert build_sxs_answers.main(["--check"]) == 0


def test_it_refuses_to_build_a_golden_file_with_unjudged_pool_documents(
    demo_docs: list[Document], demo_index: SearchIndex, demo_synonyms: SynonymPack
) -> None:
    spec = build_golden.QuerySpec("q-1", "refund policy", "billing", {"refund-policy": 3, "no-such-doc": 1})
    partial = build_golden.QuerySpec("q-2", "download invoices", "billing", {"download-invoices": 3})
    with pytest.raises(build_golden.SpecError) as caught:
        build_golden.build_golden([spec, partial], demo_docs, demo_index, demo_synonyms)
    assert caught.value.problems == [
        "q-1: unknown document references ['no-such-doc']",
        "q-2: pooled documents without a grade: ['billing-contacts']",
    ]


# ------------------------------------------------------------------------------------------ rubric


def test_it_describes_every_grade_with_three_examples_each_way() -> None:
    rubric = json.loads((DEMO / "rubric.json").read_text())
    assert (rubric["name"], rubric["version"], rubric["scale"]) == ("help-center", 1, {"min": 0, "max": 3})
    assert [g["grade"] for g in rubric["grades"]] == [3, 2, 1, 0]
    for grade in rubric["grades"]:
        assert grade["label"].strip() and grade["meaning"].strip()
        assert len(grade["positive_examples"]) == 3 and len(grade["negative_examples"]) == 3
        assert all(
            isinstance(e, str) and e.strip() for e in grade["positive_examples"] + grade["negative_examples"]
        )


# --------------------------------------------------------------------------------------- query log


def _log_rows() -> list[dict[str, str]]:
    with open(DEMO / "query_log.csv", encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def test_it_writes_the_same_log_as_csv_and_jsonl() -> None:
    rows = _log_rows()
    with open(DEMO / "query_log.jsonl", encoding="utf-8") as handle:
        records = [json.loads(line) for line in handle]
    assert list(rows[0]) == ["query", "count", "zero_hits", "locale"]
    assert [(r["query"], int(r["count"]), int(r["zero_hits"]), r["locale"]) for r in rows] == [
        (r["query"], r["count"], r["zero_hits"], r["locale"]) for r in records
    ]


def test_it_shapes_traffic_into_head_torso_and_tail() -> None:
    counts = sorted((int(r["count"]) for r in _log_rows()), reverse=True)
    total = sum(counts)
    assert len(counts) >= 2000
    # The top 5% of distinct queries carry 40% of the searches; most are searched once or twice.
    assert sum(counts[: len(counts) // 20]) >= 0.4 * total
    assert sum(c <= 2 for c in counts) >= 0.5 * len(counts)


def test_it_logs_near_duplicates_and_historical_zero_hit_queries() -> None:
    rows = _log_rows()
    spellings = Counter((normalize(r["query"]), r["locale"]) for r in rows)
    assert sum(n > 1 for n in spellings.values()) >= 50
    zero = [r for r in rows if int(r["zero_hits"]) > 0]
    assert len(zero) >= 100
    assert all(int(r["zero_hits"]) in (0, int(r["count"])) for r in rows)


def test_it_counts_every_golden_query_at_least_at_its_weight(demo_golden: GoldenFile) -> None:
    counts = {(r["query"], r["locale"]): int(r["count"]) for r in _log_rows()}
    for query in demo_golden.queries:
        assert counts[(query.text, query.locale or "")] >= query.weight, query.id


def test_it_hides_pii_of_every_kind_for_the_import_to_strip() -> None:
    found: Counter[str] = Counter()
    for row in _log_rows():
        found += strip_pii(row["query"])[1]
    assert {kind for kind, n in found.items() if n > 0} >= {"email", "card", "phone", "digits"}


def test_it_has_committed_the_log_its_generator_builds() -> None:
    assert build_query_log.main(["--check"]) == 0


# ------------------------------------------------------------------------------- budgets, synonyms


def test_it_budgets_each_stratum(demo_budgets: dict[str, object]) -> None:
    budgets = load_budgets(demo_budgets)
    assert set(budgets.strata) == STRATA
    assert budgets.core["ndcg"].fail == 0.025 and budgets.core["empty_rate"].fail == 0.015


def test_it_ships_a_versioned_pack_whose_refund_rule_expands(demo_synonyms: SynonymPack) -> None:
    assert demo_synonyms.label == "help-center-synonyms@2026.07.3"
    assert demo_synonyms.rewrite("refund") == ("refund", "return", "chargeback", "shipback")
    # The older rules swap one word for one word, so they never add a clause.
    assert demo_synonyms.rewrite("signin") == ("login",)
    assert demo_synonyms.rewrite("invoice") == ("invoice",)
