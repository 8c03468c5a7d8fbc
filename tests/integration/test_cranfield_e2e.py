"""End to end on real text: the Cranfield collection indexed by the demo BM25 search service (its own
process, loopback), evaluated by the installed `assay run`, and the artifact checked against ir_measures
(an independent implementation) on the very lists the service returned.

The corpus is not in the repository: `$ASSAY_CRANFIELD_DIR`, else `<repo>/../shared/data/cranfield`.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import ir_measures
import pytest
from ir_measures import RR, P, Qrel, ScoredDoc, nDCG

from assay.golden.format import dump_json, load
from assay.golden.trec import golden_from_trec, read_qrels
from tests.assay.test_cli import assay
from tests.support.processes import REPO, serving


def cranfield_dir() -> Path | None:
    configured = os.environ.get("ASSAY_CRANFIELD_DIR")
    for candidate in ([Path(configured)] if configured else []) + [
        REPO.parent / "shared" / "data" / "cranfield"
    ]:
        if (candidate / "cran.all.1400").is_file():
            return candidate
    return None


CRANFIELD = cranfield_dir()
pytestmark = pytest.mark.skipif(
    CRANFIELD is None,
    reason="Cranfield corpus not found: set ASSAY_CRANFIELD_DIR or provide ../shared/data/cranfield",
)
QRELS = "qrels.graded0-3.minus1_as_0.derived.trec"
MEASURES = {
    "ndcg": nDCG(gains={0: 0, 1: 1, 2: 3, 3: 7}) @ 10,
    "p_at_k": P(rel=2) @ 10,
    "mrr": RR(rel=2) @ 10,
}


def smart_documents(text: str) -> Iterator[dict[str, str]]:
    """Records of the SMART format (`.I id`, then `.T` title, `.A` authors, `.B` source, `.W` abstract)."""
    for record in re.split(r"^\.I ", text.replace("\r\n", "\n"), flags=re.M)[1:]:
        first, *lines = record.split("\n")
        fields: dict[str, list[str]] = {}
        current: list[str] | None = None
        for line in lines:
            marker = re.fullmatch(r"\.([TABW])\s*", line)
            if marker:
                current = fields.setdefault(marker.group(1), [])
            elif current is not None:
                current.append(line)
        title = " ".join(" ".join(fields.get("T", [])).split())
        body = " ".join(" ".join(fields.get("W", [])).split())
        # Documents 471 and 995 have neither title nor abstract: nothing could retrieve them.
        if title or body:
            yield {"id": first.strip(), "title": title, "body": body}


@pytest.fixture(scope="module")
def collection(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    assert CRANFIELD is not None
    work = tmp_path_factory.mktemp("cranfield")
    corpus = work / "corpus.jsonl"
    docs = list(smart_documents((CRANFIELD / "cran.all.1400").read_text(encoding="ascii")))
    corpus.write_text("".join(json.dumps(d) + "\n" for d in docs))
    queries = dict(
        line.split("\t", 1)
        for line in (CRANFIELD / "queries.seqid.tsv").read_text().splitlines()
        if line.strip()
    )
    qrels = read_qrels((CRANFIELD / QRELS).read_text())
    golden = golden_from_trec(
        qrels, {qid: text.strip() for qid, text in queries.items()}, version="cranfield-1", k=10
    )
    golden_path = work / "golden.json"
    golden_path.write_bytes(dump_json(golden))
    return {"work": work, "corpus": corpus, "docs": docs, "golden": golden_path, "qrels": qrels}


def independent_scores(
    qrels: dict[str, dict[str, int]], ranked: dict[str, list[str]]
) -> dict[str, dict[str, float]]:
    """Per query and measure, from ir_measures. A query the service answered with nothing is absent from
    the run; ir_measures then yields nothing for it and docs/metrics.md's value is 0."""
    judged = [Qrel(qid, doc, grade) for qid, docs in qrels.items() for doc, grade in docs.items()]
    # Strictly decreasing scores so ir_measures keeps the service's order (no tie-breaking at all).
    run = [
        ScoredDoc(qid, doc, float(len(ids) - i)) for qid, ids in ranked.items() for i, doc in enumerate(ids)
    ]
    names = {measure: name for name, measure in MEASURES.items()}
    scores: dict[str, dict[str, float]] = {qid: dict.fromkeys(MEASURES, 0.0) for qid in qrels}
    for metric in ir_measures.iter_calc(list(MEASURES.values()), judged, run):
        scores[metric.query_id][names[metric.measure]] = metric.value
    return scores


def test_assay_run_on_cranfield_matches_ir_measures(collection: dict[str, Any]) -> None:
    golden = load(collection["golden"])
    assert len(golden.queries) == 225 and len(collection["docs"]) == 1398
    out = collection["work"] / "relevance.json"

    with serving(["-m", "demo.search_service", "--corpus", str(collection["corpus"]), "--port", "0"]) as url:
        proc = assay(
            "run", "--golden", str(collection["golden"]), "--search-url", f"{url}/search",
            "--concurrency", "8", "--generation-header", "X-Index-Generation", "--out", str(out),
        )  # fmt: skip

    assert proc.returncode == 0, proc.stderr
    artifact = json.loads(out.read_text())
    rows = {row["id"]: row for row in artifact["per_query"]}
    assert (
        artifact["error_rate"] == 0 and artifact["n"] == 225 and set(rows) == {q.id for q in golden.queries}
    )
    assert len(artifact["run"]["index_generations"]) == 1 and not artifact["run"]["index_moved"]

    expected = independent_scores(
        collection["qrels"], {qid: row["ids"] for qid, row in rows.items() if row["ids"]}
    )
    for qid, row in rows.items():
        for name in MEASURES:
            assert row[name] == pytest.approx(expected[qid][name], abs=1e-9), (qid, name)
    for name, key in (("ndcg", "ndcg"), ("mrr", "mrr"), ("p_at_k", "precision_at_k")):
        mean = sum(expected[qid][name] for qid in rows) / len(rows)
        assert artifact[key] == pytest.approx(mean, abs=1e-9), key
    # Real BM25 on Cranfield: the oracle run (k1=0.9, b=0.4) reaches 0.307; a broken pipeline sits near 0.
    assert artifact["ndcg"] > 0.2
    assert sum(1 for row in rows.values() if row["n"] == 10) > 200  # the service was asked for k = 10
