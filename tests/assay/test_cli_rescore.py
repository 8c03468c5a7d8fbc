"""`assay gate --rescore-baseline --golden NEW`, in-process through `assay.cli.main`: the baseline's stored
lists re-scored against the new version equal `assay score` of the same run file against it, to the last
digit; the gate then compares like with like; every unusable input is a worded exit 2.

The case (tests/assay/test_rescore.py's `relabel_case`): a new golden version with grades changed,
judgments added and judgments retired. The baseline run is written as a run file, `assay score`d against
the old version (the baseline artifact) and against the new one (what the re-score must give)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from assay.cli import main
from assay.golden.format import dump_json
from assay.golden.model import GoldenFile
from assay.golden.trec import write_run
from assay.results import QueryResult
from tests.assay.test_rescore import Case, past_k_unknown, relabel_case, without_rescore


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    assert "Traceback" not in out.err, out.err
    return code, out.out, out.err


def write_golden(path: Path, golden: GoldenFile) -> str:
    path.write_bytes(dump_json(golden))
    return str(path)


def write_jsonl(path: Path, results: dict[str, QueryResult]) -> str:
    lines = [
        json.dumps({"query_id": r.query_id, "ids": list(r.ids), "titles": list(r.titles)})
        for r in results.values()
    ]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def write_trec(path: Path, results: dict[str, QueryResult]) -> str:
    # A TREC run holds each document once per topic and cannot say "returned nothing" (an absent topic).
    path.write_text(write_run({qid: list(dict.fromkeys(r.ids)) for qid, r in results.items() if r.ids}))
    return str(path)


def score(capsys: pytest.CaptureFixture[str], golden: str, run: str, out: Path) -> dict[str, Any]:
    code, _, err = run_cli(capsys, "score", "--golden", golden, "--run", run, "--out", str(out))
    assert code == 0, err
    data: dict[str, Any] = json.loads(out.read_text())
    return data


@pytest.fixture
def case() -> Case:
    generated = relabel_case(20260901, k=5, queries=30)
    # Errored calls, critical queries and hits on expected-empty ones would fail or warn the current run
    # whatever the baseline: left out here, so that an unchanged engine passes (tests/assay/test_rescore.py
    # re-scores them all).
    empty = {q.id for q in generated.new.queries if q.expect_empty}

    def not_critical(golden: GoldenFile) -> GoldenFile:
        return replace(golden, queries=tuple(replace(q, critical=False) for q in golden.queries))

    return Case(
        old=not_critical(generated.old),
        new=not_critical(generated.new),
        results={
            qid: replace(r, ids=(), titles=()) if qid in empty else r
            for qid, r in generated.results.items()
            if r.ok
        },
    )


@pytest.mark.parametrize("fmt", ["jsonl", "trec"])
def test_the_rescored_baseline_equals_assay_score_against_the_new_version(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, case: Case, fmt: str
) -> None:
    old = write_golden(tmp_path / "old.json", case.old)
    new = write_golden(tmp_path / "new.json", case.new)
    writer = write_jsonl if fmt == "jsonl" else write_trec
    run = writer(tmp_path / f"baseline.{fmt}", case.results)
    baseline_path = tmp_path / "baseline.json"
    baseline = score(capsys, old, run, baseline_path)
    expected = score(capsys, new, run, tmp_path / "expected.json")
    rescored_path = tmp_path / "rescored.json"

    code, out, err = run_cli(
        capsys,
        "gate",
        "--current", str(tmp_path / "expected.json"),
        "--baseline", str(baseline_path),
        "--rescore-baseline",
        "--golden", new,
        "--rescore-out", str(rescored_path),
    )  # fmt: skip

    assert code == 0, out + err
    assert "refusing to compare" not in out
    assert out.startswith("Relevance gate: PASS"), out
    note = f"re-scored from version 2026-08-01 on 2026-09-01 (30 queries in both); written to {rescored_path}"
    assert note in err
    rescored = json.loads(rescored_path.read_text())
    # Every aggregate and per-query value, to the last digit (ranks past k are not in an artifact).
    assert without_rescore(rescored) == past_k_unknown(without_rescore(expected), case.new.k)
    aggregates = ("n", "ndcg", "mrr", "precision_at_k", "empty_rate", "lt3_rate", "judged_at_k", "tiers")
    assert {key: rescored[key] for key in aggregates} == {key: expected[key] for key in aggregates}
    assert (rescored["all"], rescored["slices"]) == (expected["all"], expected["slices"])
    assert [row["ndcg"] for row in rescored["per_query"]] == [row["ndcg"] for row in expected["per_query"]]
    assert rescored["ndcg"] != baseline["ndcg"]  # the new labels were read
    assert rescored["run"] == baseline["run"]
    record = rescored["rescored"]
    assert (record["from_version"], record["golden_version"], record["source"]) == (
        "2026-08-01",
        "2026-09-01",
        str(baseline_path),
    )
    assert record["at"].endswith("Z") and "by" in record


def test_without_the_option_a_new_version_is_refused_and_with_it_a_regression_still_fails(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, case: Case
) -> None:
    old = write_golden(tmp_path / "old.json", case.old)
    new = write_golden(tmp_path / "new.json", case.new)
    baseline = tmp_path / "baseline.json"
    score(capsys, old, write_jsonl(tmp_path / "baseline.jsonl", case.results), baseline)
    # The current engine returns nothing for half the queries: a real regression under any labels.
    worse = {q: replace(r, ids=()) if i % 2 else r for i, (q, r) in enumerate(case.results.items())}
    current = tmp_path / "current.json"
    score(capsys, new, write_jsonl(tmp_path / "current.jsonl", worse), current)

    refused = run_cli(capsys, "gate", "--current", str(current), "--baseline", str(baseline))
    gated = run_cli(
        capsys, "gate", "--current", str(current), "--baseline", str(baseline), "--rescore-baseline",
        "--golden", new,
    )  # fmt: skip

    assert refused[0] == 1 and "refusing to compare" in refused[1]
    assert gated[0] == 1 and "refusing to compare" not in gated[1]
    assert "FAIL" in gated[1] and "nDCG" in gated[1]


def test_a_baseline_already_on_the_version_is_gated_as_it_is(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, case: Case
) -> None:
    new = write_golden(tmp_path / "new.json", case.new)
    current = tmp_path / "current.json"
    score(capsys, new, write_jsonl(tmp_path / "run.jsonl", case.results), current)
    out_path = tmp_path / "rescored.json"

    code, out, err = run_cli(
        capsys, "gate", "--current", str(current), "--baseline", str(current), "--rescore-baseline",
        "--golden", new, "--rescore-out", str(out_path),
    )  # fmt: skip

    assert code == 0 and out.startswith("Relevance gate: PASS")
    assert "note: the baseline is already on version 2026-09-01: nothing to re-score" in err
    assert not out_path.exists()


@pytest.fixture
def files(capsys: pytest.CaptureFixture[str], tmp_path: Path, case: Case) -> dict[str, str]:
    old = write_golden(tmp_path / "old.json", case.old)
    new = write_golden(tmp_path / "new.json", case.new)
    run = write_jsonl(tmp_path / "run.jsonl", case.results)
    score(capsys, old, run, tmp_path / "baseline.json")
    score(capsys, new, run, tmp_path / "current.json")
    return {
        "old": old,
        "new": new,
        "baseline": str(tmp_path / "baseline.json"),
        "current": str(tmp_path / "current.json"),
    }


def _gate(capsys: pytest.CaptureFixture[str], files: dict[str, str], *extra: str) -> tuple[int, str]:
    code, _, err = run_cli(
        capsys, "gate", "--current", files["current"], "--baseline", files["baseline"], *extra
    )
    return code, err


def test_unusable_inputs_are_worded_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, files: dict[str, str], case: Case
) -> None:
    bad_golden = tmp_path / "bad.json"
    bad_golden.write_text(json.dumps({"version": "v3", "queries": [{"id": "q 1", "text": "x"}]}))
    wider = write_golden(tmp_path / "wider.json", replace(case.new, k=10))
    wider_current = tmp_path / "wider-current.json"
    score(capsys, wider, write_jsonl(tmp_path / "wider.jsonl", case.results), wider_current)
    no_ids = json.loads(Path(files["baseline"]).read_text())
    for row in no_ids["per_query"]:
        row.pop("ids")
    no_ids_path = tmp_path / "old-artifact.json"
    no_ids_path.write_text(json.dumps(no_ids))

    cases = {
        "--golden alone": _gate(capsys, files, "--golden", files["new"]),
        "no --golden": _gate(capsys, files, "--rescore-baseline"),
        "missing golden": _gate(capsys, files, "--rescore-baseline", "--golden", str(tmp_path / "none.json")),
        "bad golden": _gate(capsys, files, "--rescore-baseline", "--golden", str(bad_golden)),
        "other version": _gate(capsys, files, "--rescore-baseline", "--golden", files["old"]),
        "k differs": run_cli(
            capsys, "gate", "--current", str(wider_current), "--baseline", files["baseline"],
            "--rescore-baseline", "--golden", wider,
        )[::2],
        "no ids": run_cli(
            capsys, "gate", "--current", files["current"], "--baseline", str(no_ids_path),
            "--rescore-baseline", "--golden", files["new"],
        )[::2],
    }  # fmt: skip

    assert {name: code for name, (code, _) in cases.items()} == dict.fromkeys(cases, 2)
    messages = {name: err for name, (_, err) in cases.items()}
    together = (
        "assay gate: error: --rescore-baseline and --golden FILE (the new version's golden file) go together"
    )
    assert together in messages["--golden alone"] and together in messages["no --golden"]
    assert "golden file" in messages["missing golden"] and "no such file" in messages["missing golden"]
    assert "nothing evaluated" in messages["bad golden"]
    assert (
        f"--golden {files['old']} is version 2026-08-01 but --current was scored on 2026-09-01"
        in messages["other version"]
    )
    wider_k = "cannot re-score: baseline was scored at k=5 and golden version 2026-09-01 scores at k=10"
    assert wider_k in messages["k differs"]
    no_ids_text = f"--baseline {no_ids_path}: cannot re-score: baseline: per_query has no ids for q-0"
    assert no_ids_text in messages["no ids"]
