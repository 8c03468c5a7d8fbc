"""Build demo/sxs_answers.json: two demo raters' answers to the side-by-side study `make run` creates (the
demo baseline against the rewriter run on the billing stratum, docs/sxs.md), for `manage.py demo_runs` to
load.

    python -m demo.build_sxs_answers            write demo/sxs_answers.json
    python -m demo.build_sxs_answers --check    exit 1 if demo/sxs_answers.json is out of date

Deterministic stand-ins for people, not a model of them: each rater reads the top five of both lists (the
demo engine in-process, rewriter off and on, as the two runs return them) and prefers the list whose top
five holds more graded relevance (DCG@5 with golden.json's grades; unjudged documents count 0). rater1
answers the difference on the whole scale; rater2 is more cautious (one point nearer "the same", and a
small difference is "the same"). A side whose top three holds a document graded 0 or unjudged is flagged
junk; the reasons are "relevance at the top" for every preference, and "missing an obvious result" when
the worse list lacks the query's best document. Preferences are in the candidate's (rewriter on) favour.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from assay.golden.format import parse_json
from demo.search_service import build_index, load_corpus, load_synonyms, search

DEMO_DIR = Path(__file__).resolve().parent
OUT = DEMO_DIR / "sxs_answers.json"
STRATUM = "billing"
SHOWN = 5
RATERS = ("rater1", "rater2")


def _dcg(ids: Sequence[str], grades: Mapping[str, int]) -> float:
    return sum((2 ** grades.get(doc, 0) - 1) / math.log2(rank + 2) for rank, doc in enumerate(ids[:SHOWN]))


def _scale(difference: float, cautious: bool) -> int:
    """A DCG@5 difference on the seven-point scale (thresholds in gain units)."""
    size = abs(difference)
    point = 0 if size < 0.5 else 1 if size < 2 else 2 if size < 5 else 3
    if cautious:
        point = 0 if size < 1 else max(point - 1, 1)
    return int(math.copysign(point, difference)) if point else 0


def answers() -> dict[str, Any]:
    golden = parse_json((DEMO_DIR / "golden.json").read_bytes())
    index = build_index(load_corpus(DEMO_DIR / "corpus.jsonl"))
    synonyms = load_synonyms(DEMO_DIR / "synonyms.json")
    out: dict[str, Any] = {}
    for query in golden.queries:
        if query.stratum != STRATUM:
            continue
        grades = {j.doc_id: j.grade for j in query.judgments}
        lists = {}
        for side, rewrite in (("baseline", False), ("candidate", True)):
            result = search(
                index,
                query.text,
                filters=query.filters,
                size=SHOWN,
                locale=query.locale or None,
                rewrite=rewrite,
                synonyms=synonyms if rewrite else None,
            )
            lists[side] = [hit.id for hit in result.hits]
        if lists["baseline"] == lists["candidate"]:
            continue  # identical in the shown top: not asked
        difference = _dcg(lists["candidate"], grades) - _dcg(lists["baseline"], grades)
        best = max(grades, key=lambda doc: (grades[doc], doc)) if grades else None
        worse = "baseline" if difference > 0 else "candidate"
        reasons = ["relevance"] if abs(difference) >= 0.5 else []
        if reasons and best is not None and best not in lists[worse]:
            reasons.append("missing")
        junk = {side: any(grades.get(doc, 0) == 0 for doc in ids[:3]) for side, ids in lists.items()}
        out[query.id] = {
            rater: {
                "preference": _scale(difference, cautious=rater == "rater2"),
                "reasons": reasons,
                "junk_baseline": junk["baseline"],
                "junk_candidate": junk["candidate"],
            }
            for rater in RATERS
        }
    return {"stratum": STRATUM, "shown": SHOWN, "raters": list(RATERS), "answers": out}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the file is out of date")
    args = parser.parse_args(argv)
    text = json.dumps(answers(), indent=2, sort_keys=True) + "\n"
    if args.check:
        current = OUT.read_text(encoding="utf-8") if OUT.exists() else ""
        if current != text:
            print(f"{OUT} is out of date: run python -m demo.build_sxs_answers", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT}: {len(json.loads(text)['answers'])} queries")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
