"""The reviewer's list pages on a 2,000-query golden set, timed at the server (Django's test client, DEBUG
off, against a PostgreSQL database made for this run).

The set: 2,000 queries in six strata (a twentieth in shadow), 20 pooled documents each (40,000 documents and
candidates, each with a frozen label), every query graded by one of four raters and a fifth of them by a
second (50,000 grades), one document of each dual-labeled query graded one apart (400 documents a
reviewer decides) and a tenth of those queries disputed and quarantined; 20 golden versions; a target with
300 runs, two of them with a 2,000-query report for the side-by-side's query picker. Each page is requested
twice to warm up, then 15 times: the table gives the median and the 95th percentile of the time the
client waited for the whole response (view, queries, template), the median CPU time of the web process
itself (PostgreSQL's work not included: what stays when other processes compete for the CPUs), and the
SQL statements one request ran. Target: every page under 300 ms.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from benchmarks import bench_grading
from benchmarks._report import measure_in_django, page_timed, seeded, write_section

REPO = Path(__file__).resolve().parent.parent
QUERIES = 2_000
DOCS_PER_QUERY = 20
STRATA = ("billing", "account", "developer", "blog", "shipping", "security")
RATERS = 4
DUAL_EVERY = 5  # every fifth query is dual-labeled
DISPUTED_EVERY = 10  # of those, every tenth is disputed
VERSIONS = 20
RUNS = 300
REPEAT = 15
TARGET_MS = 300.0
# The set page's consolidated-labels line: fetched by the page after it has rendered (htmx), not a list.
AFTER_THE_PAGE = "set page's consolidated-labels line (loaded after the page)"


def bench_database_url() -> str:
    """A database of its own next to the suite's (DATABASE_URL, as `make bench` sets it), named as
    bench_grading names its own."""
    return bench_grading.bench_database_url().replace("_bench_grading", "_bench_lists")


# --- inside the Django process (`python -m benchmarks.bench_lists measure`) ---------------------------


def seed() -> dict[str, Any]:
    """The 2,000-query set and everything its lists show; returns the ids the pages need."""
    from django.contrib.auth.models import Group, User

    from evaluation.runs.models import EvaluationRun, SearchTarget
    from golden_io.models import GoldenVersion
    from golden_io.services import golden_version_freeze
    from labeling.models import (
        Assignment,
        Candidate,
        DisputeCheck,
        Document,
        FrozenLabel,
        GoldenSet,
        Judgment,
        Query,
        Rubric,
    )

    reviewer = User.objects.create_user("reviewer", password="-")
    reviewer.groups.add(Group.objects.get(name="reviewers"))
    raters = [User.objects.create_user(f"rater{i}", password="-") for i in range(RATERS)]
    for rater in raters:
        rater.groups.add(Group.objects.get(name="raters"))
    rubric = Rubric.objects.create(
        name="bench", grades=[{"grade": g, "label": str(g), "meaning": str(g)} for g in (3, 2, 1, 0)]
    )
    golden_set = GoldenSet.objects.create(slug="bench", name="Bench", surface="bench", rubric=rubric)
    golden_set.reviewers.add(reviewer)
    golden_set.raters.add(*raters)

    words = ("refund", "invoice", "login", "password", "export", "webhook", "shipping", "plan", "seat", "tax")
    queries = Query.objects.bulk_create(
        [
            Query(
                golden_set=golden_set,
                external_id=f"q-{i:04d}",
                text=f"{words[i % len(words)]} {words[(i // 10) % len(words)]} {i}",
                locale=("en-US", "de-DE", "fr-FR")[i % 3],
                stratum=STRATA[i % len(STRATA)],
                tier="shadow" if i % 20 == 0 else "core",
            )
            for i in range(QUERIES)
        ]
    )
    documents = Document.objects.bulk_create(
        [
            Document(
                golden_set=golden_set,
                doc_id=f"doc-{q.pk}-{d}",
                title=f"Article {d} about {q.text}",
                snippet="A short snippet of the article. " * 4,
                content_hash=f"h{q.pk}-{d}",
            )
            for q in queries
            for d in range(DOCS_PER_QUERY)
        ],
        batch_size=5_000,
    )
    by_query = [documents[i * DOCS_PER_QUERY : (i + 1) * DOCS_PER_QUERY] for i in range(QUERIES)]
    Candidate.objects.bulk_create(
        [
            Candidate(query=q, document=doc, provenance=[{"system": "bench", "rank": r + 1}], best_rank=r + 1)
            for q, docs in zip(queries, by_query, strict=True)
            for r, doc in enumerate(docs)
        ],
        batch_size=5_000,
    )
    grade = [3, 2, 2, 1, 1] + [0] * (DOCS_PER_QUERY - 5)
    FrozenLabel.objects.bulk_create(
        [
            FrozenLabel(query=q, document=doc, grade=grade[r], version="v0")
            for q, docs in zip(queries, by_query, strict=True)
            for r, doc in enumerate(docs)
        ],
        batch_size=5_000,
    )
    assignments = []
    for i, q in enumerate(queries):
        assignments.append(Assignment(query=q, rater=raters[i % RATERS], kind="primary", status="done"))
        if i % DUAL_EVERY == 0:
            assignments.append(
                Assignment(query=q, rater=raters[(i + 1) % RATERS], kind="second", status="done")
            )
    assignments = Assignment.objects.bulk_create(assignments, batch_size=5_000)
    judgments = []
    for a in assignments:
        i = int(a.query.external_id[2:])
        for r, doc in enumerate(by_query[i]):
            value = grade[r]
            if a.kind == "second" and r == 1:
                value = 1 if i % (DUAL_EVERY * DISPUTED_EVERY) == 0 else 3  # 1 vs 2 flips, 2 vs 3 does not
            judgments.append(
                Judgment(
                    assignment=a, document=doc, grade=value, time_spent_ms=4000, content_hash=doc.content_hash
                )
            )
    Judgment.objects.bulk_create(judgments, batch_size=5_000)
    disputed = [q for i, q in enumerate(queries) if i % (DUAL_EVERY * DISPUTED_EVERY) == 0]
    DisputeCheck.objects.bulk_create(
        [
            DisputeCheck(
                query=q,
                fingerprint="bench",
                disputed=True,
                reasons=[f"relevance flip on doc-{q.pk}-1: 1 vs 2 (relevant from grade 2)"],
                disagreeing=[f"doc-{q.pk}-1"],
                actions=["moved to shadow"],
            )
            for q in disputed
        ]
    )
    Query.objects.filter(pk__in=[q.pk for q in disputed]).update(tier="shadow", quarantine_reason="disputed")

    first = golden_version_freeze(golden_set=golden_set, by=reviewer, name="v-00", quarantine_unresolved=True)
    GoldenVersion.objects.bulk_create(
        [
            GoldenVersion(
                golden_set=golden_set,
                name=f"v-{n:02d}",
                content=first.content,
                sha256=first.sha256,
                parent=first,
                rubric_name=first.rubric_name,
                rubric_version=first.rubric_version,
                k=first.k,
                relevant_min_grade=first.relevant_min_grade,
                scale_min=first.scale_min,
                scale_max=first.scale_max,
                counts=first.counts,
                created_by=reviewer,
            )
            for n in range(1, VERSIONS)
        ]
    )
    target = SearchTarget.objects.create(name="bench-search", url="http://127.0.0.1:9/search", owner=reviewer)
    target.golden_sets.add(golden_set)

    def report(shift: float) -> dict[str, Any]:
        return {
            "per_query": [
                {"id": q.external_id, "text": q.text, "stratum": q.stratum, "ndcg": (i % 97) / 97 * shift}
                for i, q in enumerate(queries)
            ]
        }

    runs = EvaluationRun.objects.bulk_create(
        [
            EvaluationRun(
                golden_version=first,
                target=target,
                triggered_by=reviewer,
                status="succeeded",
                verdict=("pass", "warn", "fail")[n % 3],
                params={"rewrite": True} if n % 4 == 0 else {},
                total=QUERIES,
                done=QUERIES,
                errors=n % 7,
                report=report(1.0 - n / 1000) if n >= RUNS - 2 else None,
            )
            for n in range(RUNS)
        ]
    )
    return {"disputed": disputed[0].pk, "a": runs[-2].pk, "b": runs[-1].pk}


def pages(ids: dict[str, Any]) -> list[tuple[str, str]]:
    compare = f"/runs/compare/?a={ids['a']}&b={ids['b']}"
    return [
        ("golden sets", "/sets/"),
        ("set page: queries, page 1", "/sets/bench/"),
        ("set page: search, tier filter, largest pool first", "/sets/bench/?q=refund&tier=core&sort=pool"),
        ("set page: the last page", f"/sets/bench/?page={QUERIES // 50}"),
        ("set page: assignments filter (all done)", "/sets/bench/?progress=done&stratum=billing"),
        (AFTER_THE_PAGE, "/sets/bench/labels-summary/"),
        ("review queue", "/sets/bench/disputes/"),
        ("review queue: documents, page 5", "/sets/bench/disputes/?r-page=5"),
        ("adjudication page", f"/sets/bench/queries/{ids['disputed']}/adjudicate/"),
        ("golden versions", "/sets/bench/versions/"),
        ("golden versions: search", "/sets/bench/versions/?q=v-1"),
        ("runs", "/runs/"),
        ("runs: filters, most errors, page 3", "/runs/?verdict=fail&overrides=yes&sort=errors&page=2"),
        ("targets", "/targets/"),
        ("side by side: query picker", compare),
        ("side by side: picker, lost nDCG, page 2", f"{compare}&change=worse&page=2"),
    ]


def measure() -> None:
    """Migrate, seed and time every page; print the figures as JSON on stdout."""
    ids, seeded_s = seeded(seed)  # Django set up first: the imports below need it
    from django.contrib.auth.models import User
    from django.test import Client

    client = Client()
    client.force_login(User.objects.get(username="reviewer"))
    rows = []
    for label, url in pages(ids):
        rows.append({"page": label, **page_timed(client, url, REPEAT)})
    print(json.dumps({"seeded": seeded_s, "rows": rows}))


# --- the driver (`make bench`) -----------------------------------------------------------------------


def main() -> None:
    url = bench_database_url()
    bench_grading.recreate_database(url)
    result, load_before, load_after = measure_in_django("benchmarks.bench_lists", url)
    worst = max(row["p95"] for row in result["rows"] if row["page"] != AFTER_THE_PAGE)
    after = next(row for row in result["rows"] if row["page"] == AFTER_THE_PAGE)
    lines = [
        "## List pages on a 2,000-query set",
        "",
        f"`benchmarks/bench_lists.py`: {__doc__.split(chr(10), 2)[2].strip()}",
        "",
        f"Seeding took {result['seeded']:.0f} s. Load average (1 min) {load_before:.1f} before,"
        f" {load_after:.1f} after, on a machine shared with whatever else runs on it.",
        "",
        "| page | address | median ms | p95 ms | max ms | web CPU ms | SQL statements | KiB |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in result["rows"]:
        lines.append(
            f"| {row['page']} | `{row['url']}` | {row['median']:.1f} | **{row['p95']:.1f}**"
            f" | {row['max']:.1f} | {row['cpu']:.1f} | {row['queries']} | {row['bytes'] / 1024:.0f} |"
        )
    verdict = "meets" if worst < TARGET_MS else "misses"
    lines += [
        "",
        f"Target: every list page under {TARGET_MS:.0f} ms at the server. The slowest list page's p95 is"
        f" {worst:.1f} ms, which {verdict} the target on this machine. The set page's consolidated-labels"
        f" line is not a list: it consolidates every document of the set (40,000 here), so the page asks"
        f" for it after it has rendered; it takes {after['median']:.0f} ms (median).",
    ]
    write_section("lists", "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    if sys.argv[1:] == ["measure"]:
        measure()
    else:
        main()
