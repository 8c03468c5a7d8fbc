"""`assay sweep` against a loopback stub engine: the selection, the held-out confirmation, shared requests
and the bad inputs (assay/experiment.py, assay/cli/search.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from assay.cli import main
from assay.experiment import split_queries
from assay.golden.format import dump_json, parse_json
from tests.support.processes import REPO
from tests.support.stub_server import Recorded, Reply, StubServer, hits_reply

ASSAY = Path(sys.executable).with_name("assay")
SEED = 7


def _golden() -> dict[str, Any]:
    queries = []
    for i in range(24):
        queries.append(
            {
                "id": f"q-{i:02d}",
                "text": f"question {i}",
                "stratum": ["billing", "account", "docs"][i % 3],
                "judgments": [
                    {"doc_id": "d1", "grade": 3},
                    {"doc_id": "d2", "grade": 2},
                    {"doc_id": "d3", "grade": 1},
                ],
            }
        )
    # A shadow query: never in the split, never searched by a sweep.
    queries.append(
        {"id": "s-1", "text": "shadow", "tier": "shadow", "judgments": [{"doc_id": "d1", "grade": 3}]}
    )
    return {"version": "v1", "k": 5, "queries": queries}


# The engine's answer by the title weight `w`: the higher, the better on every query; no `w` (the
# baseline) is worst but for w=1. w=4 is a little less good on every fourth query, so the changes vary.
ANSWERS: dict[Any, list[str]] = {
    None: ["x", "d3", "d2"],
    1: ["x", "y", "d3"],
    2: ["d2", "d3", "d1"],
    3: ["d2", "d1", "d3"],
    4: ["d1", "d2", "d3"],
}


def _body(request: Recorded) -> dict[str, Any]:
    body = request.json
    assert isinstance(body, dict)
    return body


def engine(degrade: Callable[[dict[str, Any]], bool] = lambda _body: False) -> Callable[[Recorded], Reply]:
    def answer(request: Recorded) -> Reply:
        body = _body(request)
        if degrade(body):
            return hits_reply(["z"])
        ids = list(ANSWERS[body.get("w") or None])  # w=0 is the engine's default: no weight
        if int(body["q"].split()[-1]) % 4 == 0 and body.get("w") == 4:
            ids[1], ids[2] = ids[2], ids[1]  # still the best, by less on these
        return hits_reply(ids)

    return answer


@pytest.fixture
def golden_file(tmp_path: Path) -> Path:
    path = tmp_path / "golden.json"
    path.write_text(json.dumps(_golden()))
    return path


@pytest.fixture
def grid_file(tmp_path: Path) -> Path:
    path = tmp_path / "grid.json"
    path.write_text(json.dumps({"params": {"w": [1, 2, 3, 4]}}))
    return path


@pytest.fixture
def engine_server() -> Iterator[StubServer]:
    with StubServer(default=engine()) as server:
        yield server


def sweep(golden: Path, grid: Path, url: str, out: Path, *extra: str) -> dict[str, Any]:
    code = main(
        [
            "sweep", "--golden", str(golden), "--grid", str(grid), "--search-url", f"{url}/search",
            "--seed", str(SEED), "--out", str(out), "--quiet", "--retries", "0", *extra,
        ]
    )  # fmt: skip
    assert code == 0
    data: dict[str, Any] = json.loads(out.read_text())
    return data


def test_the_sweep_ranks_on_tuning_and_confirms_on_held_out(
    engine_server: StubServer, golden_file: Path, grid_file: Path, tmp_path: Path
) -> None:
    data = sweep(golden_file, grid_file, engine_server.url, tmp_path / "sweep.json")

    split = split_queries(parse_json(golden_file.read_bytes()).queries, 0.7, SEED)
    assert data["split"]["seed"] == SEED
    assert data["split"]["tuning"] == list(split.tuning) and data["split"]["holdout"] == list(split.holdout)
    assert len(data["split"]["tuning"]) == 24 - len(data["split"]["holdout"]) == 18  # 8 per stratum, 6 tune
    # Ranked by tuning nDCG: w=4 best, w=1 worst; each configuration's tuning means are recorded.
    ranks = {c["params"]["w"]: c["rank"] for c in data["configs"]}
    assert ranks == {4: 1, 3: 2, 2: 3, 1: 4}
    for config in data["configs"]:
        assert set(config["tuning"]) >= {
            "ndcg",
            "mrr",
            "precision_at_k",
            "empty_rate",
            "error_rate",
            "errors",
        }
        assert (config["holdout"] is None) == (config["rank"] > 3)
    winner = data["best"]
    assert winner["params"] == {"w": 4}
    assert winner["holdout"]["ndcg"] > data["baseline"]["holdout"]["ndcg"]
    change = winner["change"]["ndcg"]
    assert change["delta"] == pytest.approx(winner["holdout"]["ndcg"] - data["baseline"]["holdout"]["ndcg"])
    assert change["interval"]["low"] <= change["delta"] <= change["interval"]["high"]
    assert 0 <= winner["p_value"] <= winner["p_adjusted"] <= 1
    # Six held-out queries, all better: the randomization test's smallest two-sided p is 2/2^6, 0.0312,
    # which Holm's adjustment over three confirmed configurations lifts past 0.05. The gain is shown as the
    # best one's, and nothing is called a winner (docs/experiments.md, "The winner").
    assert change["n"] == 6 and winner["p_adjusted"] > 0.05 and data["winner"] is None
    # The same engine on both parts: the gain holds out, nothing to be optimistic about beyond the split.
    assert data["optimism"] == pytest.approx(winner["tuning_gain"] - winner["holdout_gain"])
    # The shadow query is never asked.
    assert not engine_server.requests_for("shadow")


def test_degrading_only_the_held_out_answers_of_the_tuning_winner_keeps_the_ranking_and_raises_the_optimism(
    golden_file: Path, grid_file: Path, tmp_path: Path
) -> None:
    golden = parse_json(golden_file.read_bytes())
    held = set(split_queries(golden.queries, 0.7, SEED).holdout)
    holdout = {q.text for q in golden.queries if q.id in held}
    with StubServer(default=engine()) as honest:
        before = sweep(golden_file, grid_file, honest.url, tmp_path / "a.json", "--top", "1")
    with StubServer(default=engine(lambda body: body.get("w") == 4 and body["q"] in holdout)) as rigged:
        after = sweep(golden_file, grid_file, rigged.url, tmp_path / "b.json", "--top", "1")

    # The held-out answers never reach the tuning ranking.
    assert [(c["params"], c["rank"], c["tuning"]) for c in after["configs"]] == [
        (c["params"], c["rank"], c["tuning"]) for c in before["configs"]
    ]
    assert after["best"]["params"] == before["best"]["params"] == {"w": 4}
    assert after["best"]["holdout"]["ndcg"] < before["best"]["holdout"]["ndcg"]
    assert after["optimism"] > before["optimism"]


def test_the_held_out_ndcg_equals_assay_run_on_a_golden_file_of_the_held_out_queries(
    engine_server: StubServer, golden_file: Path, grid_file: Path, tmp_path: Path
) -> None:
    data = sweep(golden_file, grid_file, engine_server.url, tmp_path / "sweep.json")
    golden = parse_json(golden_file.read_bytes())
    held = set(data["split"]["holdout"])
    part = tmp_path / "holdout.json"
    part.write_bytes(dump_json(replace(golden, queries=tuple(q for q in golden.queries if q.id in held))))

    def run(*params: str) -> dict[str, Any]:
        out = tmp_path / f"run{len(params)}.json"
        argv = [
            "run",
            "--golden",
            str(part),
            "--search-url",
            f"{engine_server.url}/search",
            "--out",
            str(out),
        ]
        assert main([*argv, "--quiet", *(x for p in params for x in ("--param", p))]) == 0
        report: dict[str, Any] = json.loads(out.read_text())
        return report

    winner = run(*(f"{k}={json.dumps(v)}" for k, v in data["best"]["params"].items()))
    baseline = run()
    assert winner["n"] == baseline["n"] == len(held)
    assert data["best"]["holdout"]["ndcg"] == winner["ndcg"]
    assert data["baseline"]["holdout"]["ndcg"] == baseline["ndcg"]
    assert data["best"]["holdout"]["mrr"] == winner["mrr"]


def test_identical_requests_are_sent_once_and_concurrency_is_shared(
    golden_file: Path, tmp_path: Path
) -> None:
    grid = tmp_path / "grid.json"
    # w=4 twice, and {} which is the baseline's request: three configurations, one new request body.
    grid.write_text(json.dumps({"configs": [{"w": 4}, {"w": 4}, {}]}))
    with StubServer(default=lambda request: Reply(**{**vars(engine()(request)), "delay": 0.02})) as server:
        data = sweep(
            golden_file, grid, server.url, tmp_path / "sweep.json", "--concurrency", "3", "--top", "3"
        )
        bodies = [r.body for r in server.requests]
        assert server.max_in_flight == 3  # one pool for every configuration, never more than asked

    assert len(bodies) == len(set(bodies))  # not one body twice
    # Tuning: 18 queries x (baseline, w=4); held out: 6 x (baseline, w=4).
    assert len(bodies) == 2 * 24
    assert data["requests"] == {"asked": 18 * 4 + 6 * 4, "sent": 48, "shared": 18 * 4 + 6 * 4 - 48}
    first, second, same = data["configs"]
    assert first["tuning"] == second["tuning"]
    # the baseline's request: its values, and every list the baseline's (docs/metrics.md, "Overlap")
    overlap = same["tuning"].pop("overlap")
    assert same["tuning"] == data["baseline"]["tuning"]
    assert overlap["n"] == overlap["identical"] == 18 and overlap["rbo"]["mean"] == 1.0


def test_errors_are_counted_never_ranked_as_empty(golden_file: Path, grid_file: Path, tmp_path: Path) -> None:
    def answer(request: Recorded) -> Reply:
        # w=1 errors on every query: as empty it would be the worst, as errors its mean is over nothing.
        return Reply(status=500, text="down") if _body(request).get("w") == 1 else engine()(request)

    with StubServer(default=answer) as server:
        code = main(
            [
                "sweep", "--golden", str(golden_file), "--grid", str(grid_file), "--search-url",
                f"{server.url}/search", "--seed", str(SEED), "--out", str(tmp_path / "s.json"), "--quiet",
                "--retries", "0",
            ]
        )  # fmt: skip
    assert code == 1  # written, and the errors said
    data = json.loads((tmp_path / "s.json").read_text())
    errored = next(c for c in data["configs"] if c["params"] == {"w": 1})
    assert errored["tuning"]["errors"] == 18 and errored["tuning"]["error_rate"] == 1.0
    assert errored["tuning"]["empty_rate"] is None and errored["tuning"]["ndcg"] is None
    assert errored["tuning"]["empty"] == 0
    assert errored["rank"] == 4


def assay(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(ASSAY), *args], capture_output=True, text=True, timeout=120, cwd=REPO)


@pytest.mark.parametrize(
    ("grid", "said"),
    [
        (json.dumps({"params": {"w": list(range(501))}}), "501 configurations"),
        (json.dumps({"params": {"w": [1], "msm": []}}), '"params.msm": an empty list of values'),
        ('{"params": {"w": [1, 2}', "--grid"),
        (
            json.dumps({"configs": [{"w": 1}, {"size": 3}]}),
            "configuration 2 {size=3}: params size: would overwrite",
        ),
    ],
    ids=["501-configurations", "empty-values", "not-json", "refused-param"],
)
def test_bad_input_exits_2_naming_the_problem_with_no_artifact(
    golden_file: Path, tmp_path: Path, grid: str, said: str
) -> None:
    path = tmp_path / "grid.json"
    path.write_text(grid)
    out = tmp_path / "sweep.json"
    # Port 9 (discard) on loopback: nothing is searched before the input is refused.
    done = assay(
        "sweep",
        "--golden",
        str(golden_file),
        "--grid",
        str(path),
        "--search-url",
        "http://127.0.0.1:9/search",
        "--out",
        str(out),
    )
    assert done.returncode == 2, done.stderr
    assert said in done.stderr
    assert done.stderr.startswith("assay sweep: error:")
    assert "Traceback" not in done.stderr
    assert sorted(tmp_path.iterdir()) == sorted([golden_file, path])  # nothing written, not even a temporary


def test_a_sweep_imports_no_django_celery_sklearn_pyarrow_or_psycopg(
    engine_server: StubServer, golden_file: Path, grid_file: Path, tmp_path: Path
) -> None:
    # `assay sweep` belongs to the core install (numpy, orjson, msgspec, httpx, aiohttp, certifi).
    argv = [
        "sweep", "--golden", str(golden_file), "--grid", str(grid_file), "--search-url",
        f"{engine_server.url}/search", "--out", str(tmp_path / "s.json"), "--quiet",
    ]  # fmt: skip
    code = f"""
import sys
from assay.cli import main
assert main({argv!r}) == 0
heavy = ("django", "celery", "rest_framework", "sklearn", "pyarrow", "psycopg")
print(sorted(m for m in heavy if m in sys.modules))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"
    assert json.loads((tmp_path / "s.json").read_text())["best"]["params"] == {"w": 4}


def test_ranked_on_mrr_the_winner_carries_the_mrr_and_the_ndcg_change(
    engine_server: StubServer, golden_file: Path, grid_file: Path, tmp_path: Path
) -> None:
    data = sweep(golden_file, grid_file, engine_server.url, tmp_path / "sweep.json", "--metric", "mrr")

    assert data["metric"] == "mrr"
    # MRR sees only the first relevant document: w=2, 3 and 4 all put one first (a tie kept in grid
    # order), w=1 puts it third.
    assert [c["rank"] for c in data["configs"]] == [4, 1, 2, 3]
    winner = data["best"]
    assert set(winner["change"]) == {"mrr", "ndcg"}
    assert winner["change"]["mrr"]["p_value"] == winner["p_value"]
    assert winner["tuning_gain"] == pytest.approx(winner["tuning"]["mrr"] - data["baseline"]["tuning"]["mrr"])


def test_a_winner_needs_a_held_out_gain_with_p_holm_below_alpha(
    engine_server: StubServer, golden_file: Path, grid_file: Path, tmp_path: Path, capsys: Any
) -> None:
    # One configuration confirmed: no adjustment, and six held-out queries all better give p about 2/2^6.
    won = sweep(golden_file, grid_file, engine_server.url, tmp_path / "a.json", "--top", "1")
    assert won["alpha"] == 0.05 and won["best"]["p_adjusted"] < 0.05
    assert won["winner"] == won["best"] and won["winner"]["params"] == {"w": 4}
    assert "winner {'w': 4}: ndcg" in capsys.readouterr().err

    strict = sweep(
        golden_file, grid_file, engine_server.url, tmp_path / "b.json", "--top", "1", "--alpha", "0.01"
    )
    assert strict["alpha"] == 0.01 and strict["winner"] is None
    assert strict["best"] == {**won["best"]}  # the same figures, not called a winner
    said = capsys.readouterr().err
    assert (
        "no winner: no configuration beat the baseline on the held-out queries (a gain with p (Holm) below "
        "0.01); the best, {'w': 4}: ndcg" in said
    )


def test_a_parameter_the_engine_ignores_names_no_winner_and_is_flagged(
    engine_server: StubServer, golden_file: Path, tmp_path: Path, capsys: Any
) -> None:
    grid = tmp_path / "grid.json"
    # Misspelt: the engine reads `w` and ignores every other field, so each configuration is the baseline.
    grid.write_text(json.dumps({"params": {"titel_weight": [1, 2, 3]}}))
    data = sweep(golden_file, grid, engine_server.url, tmp_path / "sweep.json", "--top", "1")

    assert data["winner"] is None
    assert data["best"]["holdout_gain"] == 0 and data["best"]["p_adjusted"] == 1
    assert [c["same_as_baseline"] for c in data["configs"]] == [True, True, True]
    message = (
        "3 configurations (1, 2, 3) returned the baseline's results on every query: does the target read "
        "`titel_weight`?"
    )
    assert data["echoes"] == [
        {"params": ["titel_weight"], "configs": [1, 2, 3], "queries": 18, "read": False, "message": message}
    ]
    said = capsys.readouterr().err
    assert "no winner: no configuration beat the baseline" in said and message in said


def test_a_configuration_equal_to_the_baseline_is_not_flagged(
    engine_server: StubServer, golden_file: Path, tmp_path: Path
) -> None:
    grid = tmp_path / "grid.json"
    # w=4 is also the fixed parameter: that configuration is the baseline, meant to return the same.
    grid.write_text(json.dumps({"configs": [{"w": 4}, {"w": 4, "titel_weight": 2}]}))
    data = sweep(golden_file, grid, engine_server.url, tmp_path / "sweep.json", "--param", "w=4")
    assert [c["same_as_baseline"] for c in data["configs"]] == [False, True]
    assert [e["params"] for e in data["echoes"]] == [["titel_weight"]]


def test_a_value_that_is_the_engines_default_is_flagged_as_one_not_as_a_parameter_it_ignores(
    engine_server: StubServer, golden_file: Path, tmp_path: Path
) -> None:
    grid = tmp_path / "grid.json"
    # w=0 is what the engine does without `w`; w=4 shows that it reads `w`.
    grid.write_text(json.dumps({"params": {"w": [0, 4]}}))
    data = sweep(golden_file, grid, engine_server.url, tmp_path / "sweep.json")
    assert [(e["configs"], e["read"]) for e in data["echoes"]] == [([1], True)]
    assert data["echoes"][0]["message"] == (
        "1 configuration (1) returned the baseline's results on every query: other values of `w` changed "
        "them, so these may be what the target does without them"
    )


def test_judged_at_k_is_recorded_per_part_and_a_best_that_loses_coverage_warns(
    engine_server: StubServer, golden_file: Path, tmp_path: Path, capsys: Any
) -> None:
    grid = tmp_path / "grid.json"
    # w=1 answers x, y, d3: one judged document in three, where the baseline's x, d3, d2 has two.
    grid.write_text(json.dumps({"configs": [{"w": 1}]}))
    data = sweep(golden_file, grid, engine_server.url, tmp_path / "sweep.json")

    config, baseline = data["configs"][0], data["baseline"]
    assert config["tuning"]["judged_at_k"] == pytest.approx(1 / 3)
    assert config["holdout"]["judged_at_k"] == pytest.approx(1 / 3)
    assert baseline["tuning"]["judged_at_k"] == pytest.approx(2 / 3)
    assert baseline["holdout"]["judged_at_k"] == pytest.approx(2 / 3)
    coverage = data["coverage"]
    assert coverage["margin"] == 0.05 and coverage["holdout"]["drop"] == pytest.approx(1 / 3)
    assert coverage["warning"].startswith(
        "judged@k 0.3333 on the tuning queries against the baseline's 0.6667 and 0.3333 on the held-out "
        "queries against the baseline's 0.6667, more than 0.05 below"
    )
    assert f"the best, {{'w': 1}}: {coverage['warning']}" in capsys.readouterr().err
    loose = sweep(golden_file, grid, engine_server.url, tmp_path / "b.json", "--coverage-margin", "0.5")
    assert loose["coverage"]["margin"] == 0.5 and loose["coverage"]["warning"] is None


def test_each_configuration_carries_its_overlap_with_the_baseline(
    engine_server: StubServer, golden_file: Path, tmp_path: Path
) -> None:
    # w=2 answers d2, d3, d1 where the baseline answers x, d3, d2, on every query: Jaccard@5 2/4 = 0.5; RBO
    # (eq. 32, agreements 0, 1/2, 2/3, p = 0.9) 0.1/0.9 * (0.81 / 2 + 0.729 * 2/3) + 2/3 * 0.729 = 0.585.
    grid = tmp_path / "grid.json"
    grid.write_text(
        json.dumps({"configs": [{"w": 2}, {"w": 0}]})
    )  # w=0: the engine's default, the baseline's
    data = sweep(golden_file, grid, engine_server.url, tmp_path / "sweep.json", "--top", "2")
    moved, same = data["configs"]
    tuning, held = moved["tuning"]["overlap"], moved["holdout"]["overlap"]
    assert (tuning["k"], tuning["p"], tuning["n"], tuning["identical"]) == (5, 0.9, 18, 0)
    assert tuning["jaccard"]["mean"] == pytest.approx(0.5) and tuning["rbo"]["mean"] == pytest.approx(0.585)
    assert tuning["rbo"]["low"] == pytest.approx(0.585) == tuning["rbo"]["high"]  # every query alike
    assert (held["n"], held["identical"]) == (6, 0) and held["rbo"]["mean"] == pytest.approx(0.585)
    assert same["tuning"]["overlap"]["identical"] == 18 and same["holdout"]["overlap"]["identical"] == 6
    assert "overlap" not in data["baseline"]["tuning"]
