"""The side-by-side study pages, timed at the server (Django's test client, DEBUG off, against a PostgreSQL
database made for this run), each beside its peer in the same run.

The set: 400 queries in four strata, ten documents each; two finished runs of one golden version whose
top ten differ on three queries in four; a study of every query, 5 results a side, three raters answering
each asked query (900 answers, all but ten of the first rater's given). The rater's page (an open task)
is timed beside the grading page of a ten-document query (its peer: the other page a rater works on);
the study's results page beside the side-by-side query picker of the same two runs (its peer: the other
page that compares two runs), both warm (the analysis kept from the last request) and cold (an answer
changed since, so the page makes the analysis again: 1,000 bootstrap resamples). Each page is requested
twice to warm up, then 15 times: the median and the 95th percentile of the time the client waited for the
whole response, the web process's own CPU time and the SQL statements of one request. Targets: the
rater's page under 150 ms, the results page under 300 ms.
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
from pathlib import Path
from typing import Any

from benchmarks import bench_grading
from benchmarks._report import measure_in_django, page_timed, seeded, write_section

REPO = Path(__file__).resolve().parent.parent
QUERIES = 400
DOCS = 10
STRATA = ("billing", "account", "developer", "blog")
RATERS = 3
REPEAT = 15
TARGETS = {"rater": 150.0, "results": 300.0}


def bench_database_url() -> str:
    return bench_grading.bench_database_url().replace("_bench_grading", "_bench_sxs")


def seed() -> dict[str, Any]:
    """The set, its two runs, the study and its answers, and the grading peer; returns what the pages
    need."""
    from django.contrib.auth.models import Group, User

    from assay.golden.format import dump_json
    from assay.golden.model import GoldenFile, GoldenQuery, Judgment
    from evaluation.runs.models import EvaluationRun, QueryRunResult, SearchTarget
    from evaluation.studies.models import StudyTask
    from evaluation.studies.services import StudySpec, study_create
    from golden_io.models import GoldenVersion
    from labeling.models import Assignment, Candidate, Document, GoldenSet, Query, Rubric

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
    ids = [f"q-{i:04d}" for i in range(QUERIES)]
    golden = GoldenFile(
        version="v-1",
        rubric="bench@1",
        queries=tuple(
            GoldenQuery(
                id=qid,
                text=f"how do I change my plan {i}",
                judgments=(Judgment(f"doc-{i}-0", 3), Judgment(f"doc-{i}-1", 2)),
                stratum=STRATA[i % len(STRATA)],
                locale="en-US",
            )
            for i, qid in enumerate(ids)
        ),
    )
    content = dump_json(golden)
    version = GoldenVersion.objects.create(
        golden_set=golden_set,
        name="v-1",
        content=content,
        sha256=hashlib.sha256(content).hexdigest(),
        rubric_name="bench",
        rubric_version=1,
        k=golden.k,
        relevant_min_grade=golden.relevant_min_grade,
        scale_min=golden.scale.min,
        scale_max=golden.scale.max,
        counts={"queries": {"core": QUERIES}},
    )
    Document.objects.bulk_create(
        [
            Document(
                golden_set=golden_set,
                doc_id=f"doc-{i}-{d}",
                title=f"Article {d} about plans {i}",
                url=f"https://help.example.org/articles/{i}-{d}",
                snippet="A short snippet of the article that says what it holds. " * 2,
                content_hash=f"h{i}-{d}",
            )
            for i in range(QUERIES)
            for d in range(DOCS)
        ],
        batch_size=5_000,
    )
    target = SearchTarget.objects.create(name="bench-search", url="http://127.0.0.1:9/search", owner=reviewer)
    target.golden_sets.add(golden_set)
    runs = []
    for n in range(2):
        run = EvaluationRun.objects.create(
            golden_version=version,
            target=target,
            triggered_by=reviewer,
            status="succeeded",
            total=QUERIES,
            done=QUERIES,
            params={"rewrite": True} if n else {},
            report={
                "per_query": [
                    {
                        "id": qid,
                        "text": f"query {i}",
                        "stratum": STRATA[i % 4],
                        "ndcg": ((i * (n + 3)) % 97) / 97,
                    }
                    for i, qid in enumerate(ids)
                ]
            },
        )
        results = []
        for i, qid in enumerate(ids):
            docs = [f"doc-{i}-{d}" for d in range(DOCS)]
            if n and i % 4:
                docs = docs[::-1]
            results.append(
                QueryRunResult(run=run, query_id=qid, ids=docs, titles=[f"Article {d}" for d in docs])
            )
        QueryRunResult.objects.bulk_create(results)
        runs.append(run)
    study = study_create(
        spec=StudySpec(run_a=runs[0], run_b=runs[1], raters=raters, seed=1, answers_per_query=RATERS),
        by=reviewer,
    )
    rng = random.Random(1)
    tasks = list(StudyTask.objects.filter(study=study).order_by("token"))
    open_tokens = [t.token for t in tasks if t.rater_id == raters[0].pk][:10]
    for task in tasks:
        if task.token in open_tokens:
            continue
        task.preference = rng.choice((-2, -1, 0, 0, 1, 1, 2, 3))
        task.reasons = rng.sample(["relevance", "snippet", "duplicates", "missing"], 2)
        task.junk_left = rng.random() < 0.1
        task.answered_at = study.created
        task.revision = 1
    StudyTask.objects.bulk_update(tasks, ["preference", "reasons", "junk_left", "answered_at", "revision"])
    query = Query.objects.create(golden_set=golden_set, external_id="peer", text="change my plan")
    peer_docs = Document.objects.bulk_create(
        [
            Document(
                golden_set=golden_set,
                doc_id=f"peer-{d}",
                title=f"Peer {d}",
                snippet="A snippet.",
                content_hash="-",
            )
            for d in range(DOCS)
        ]
    )
    Candidate.objects.bulk_create(
        [Candidate(query=query, document=doc, best_rank=r + 1) for r, doc in enumerate(peer_docs)]
    )
    assignment = Assignment.objects.create(query=query, rater=raters[0])
    return {
        "study": study.pk,
        "token": open_tokens[0],
        "assignment": assignment.pk,
        "a": runs[0].pk,
        "b": runs[1].pk,
        "asked": study.queries.filter(identical=False).count(),
        "answers": sum(1 for t in tasks if t.answered_at is not None),
    }


def measure() -> None:
    """Migrate, seed and time every page; print the figures as JSON on stdout."""
    ids, seeded_s = seeded(seed)  # Django set up first: the imports below need it
    from django.contrib.auth.models import User
    from django.test import Client

    from evaluation.studies.models import SxsStudy

    rater, reviewer = Client(), Client()
    rater.force_login(User.objects.get(username="rater0"))
    reviewer.force_login(User.objects.get(username="reviewer"))

    def forget() -> None:
        SxsStudy.objects.filter(pk=ids["study"]).update(analysed_key="")

    pages = [
        ("rater", "the rater's page (an open task)", rater, f"/sxs/{ids['token']}/", None),
        (
            "peer",
            "the grading page, ten documents (peer)",
            rater,
            f"/assignments/{ids['assignment']}/",
            None,
        ),
        ("results", "the study's results page, analysis kept", reviewer, f"/studies/{ids['study']}/", None),
        (
            "results",
            "the study's results page, an answer changed since",
            reviewer,
            f"/studies/{ids['study']}/",
            forget,
        ),
        (
            "peer",
            "side by side: query picker of the two runs (peer)",
            reviewer,
            f"/runs/compare/?a={ids['a']}&b={ids['b']}",
            None,
        ),
    ]
    rows = [
        {"kind": kind, "page": label, **page_timed(client, url, REPEAT, before)}
        for kind, label, client, url, before in pages
    ]
    print(json.dumps({"seeded": seeded_s, "rows": rows, "asked": ids["asked"], "answers": ids["answers"]}))


def main() -> None:
    url = bench_database_url()
    bench_grading.recreate_database(url)
    result, load_before, load_after = measure_in_django("benchmarks.bench_sxs_pages", url)
    lines = [
        "## Side-by-side study pages",
        "",
        f"`benchmarks/bench_sxs_pages.py`: {__doc__.split(chr(10), 2)[2].strip()}",
        "",
        f"{result['asked']} queries asked, {result['answers']} answers. Seeding took"
        f" {result['seeded']:.0f} s. Load average (1 min) {load_before:.1f} before, {load_after:.1f} after,"
        " on a machine shared with whatever else runs on it.",
        "",
        "| page | address | median ms | p95 ms | web CPU ms | SQL statements |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for row in result["rows"]:
        lines.append(
            f"| {row['page']} | `{row['url']}` | {row['median']:.1f} | **{row['p95']:.1f}**"
            f" | {row['cpu']:.1f} | {row['queries']} |"
        )
    verdicts = []
    for kind, target in TARGETS.items():
        worst = max(row["p95"] for row in result["rows"] if row["kind"] == kind)
        verdicts.append(
            f"the {'rater' if kind == 'rater' else 'results'} page's slowest p95 is {worst:.1f} ms, which"
            f" {'meets' if worst < target else 'misses'} its target of {target:.0f} ms"
        )
    lines += [
        "",
        f"On this machine {'; '.join(verdicts)}. The results page after an answer changed spends its time in"
        " `assay.sxs.analyse` (the bootstraps), which the page runs in the request; kept, the page reads the"
        " stored analysis. Compare the web CPU column with the wall times when the load average is high.",
    ]
    write_section("sxs_pages", "\n".join(lines))


if __name__ == "__main__":
    if sys.argv[1:] == ["measure"]:
        measure()
    else:
        main()
