"""The management commands: imports, pools, assignments (the demo load is golden_io's:
tests/golden_io/test_demo_load.py)."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command

from labeling.models import Assignment, Candidate, Document, GoldenSet, Query
from tests import factories
from tests.conftest import REPO

pytestmark = pytest.mark.django_db


def _call(*args: Any, **kwargs: Any) -> str:
    out = StringIO()
    call_command(*args, stdout=out, **kwargs)
    return out.getvalue()


def test_a_golden_set_is_built_from_the_command_line(
    tmp_path: Path, alice: User, bob: User, rita: User
) -> None:
    rubric = tmp_path / "rubric.json"
    grades = [dict(g) for g in factories.GRADES]
    rubric.write_text(
        json.dumps({"name": "cli", "version": 1, "scale": {"min": 0, "max": 3}, "grades": grades})
    )
    assert "rubrics created: 1" in _call("import_rubric", str(rubric))
    _call(
        "create_golden_set",
        "cli-set",
        "--surface=docs",
        "--rubric=cli@1",
        "--locales=en-US",
        "--dual-rate=1",
        "--reviewers=rita",
    )
    docs = tmp_path / "docs.jsonl"
    docs.write_text("\n".join(json.dumps({"id": f"d{i}", "title": f"Doc {i}"}) for i in range(1, 4)))
    assert "documents created: 3" in _call("import_documents", "cli-set", str(docs))
    golden = tmp_path / "golden.json"
    query = {"id": "q1", "text": "refund", "locale": "en-US", "judgments": [{"doc_id": "d3", "grade": 2}]}
    golden.write_text(json.dumps({"version": "v1", "k": 5, "queries": [query]}))
    assert "labels added: 1" in _call("import_golden", "cli-set", str(golden), "--yes")
    run = tmp_path / "bm25.run"
    run.write_text("q1 Q0 d1 1 3.0 bm25\nq1 Q0 d2 2 2.0 bm25\n")
    assert "candidates added: 2" in _call("build_pools", "cli-set", "--run", str(run))
    out = _call("assign_queries", "cli-set", "--raters=alice,bob")
    assert "assigned 1 primary and 1 second assignments" in out
    gs = GoldenSet.objects.get(slug="cli-set")
    assert (gs.k, gs.dual_rate, list(gs.reviewers.all())) == (5, 1.0, [rita])
    assert set(Candidate.objects.values_list("document__doc_id", flat=True)) == {"d1", "d2", "d3"}
    assert set(Assignment.objects.values_list("rater__username", "kind")) == {
        ("alice", "primary"),
        ("bob", "second"),
    }


def test_create_golden_set_refuses_reviewers_without_the_role_and_writes_nothing(
    golden_set: GoldenSet, rita: User, charlie: User, alice: User
) -> None:
    rubric = golden_set.rubric
    with pytest.raises(CommandError) as refused:
        _call(
            "create_golden_set",
            "new-set",
            "--surface=help-center",
            f"--rubric={rubric.name}@{rubric.version}",
            "--reviewers=rita,charlie,alice",
        )
    assert str(refused.value) == (
        "--reviewers: alice, charlie are not in the reviewers group: a set's reviewers must hold the "
        "reviewer role (add them to the reviewers group first, or leave them off the list)"
    )
    assert not GoldenSet.objects.filter(slug="new-set").exists()
    _call(
        "create_golden_set",
        "new-set",
        "--surface=help-center",
        f"--rubric={rubric.name}@{rubric.version}",
        "--reviewers=rita",
    )
    assert list(GoldenSet.objects.get(slug="new-set").reviewers.all()) == [rita]


def test_a_failed_import_exits_with_every_problem_and_writes_nothing(tmp_path: Path) -> None:
    factories.GoldenSetFactory.create(slug="hc")
    docs = tmp_path / "docs.jsonl"
    docs.write_text('{"id": "d1", "title": "x"}\n{"id": "d1", "title": "y"}\n{"title": "z"}\n')
    with pytest.raises(CommandError) as info:
        _call("import_documents", "hc", str(docs))
    text = str(info.value)
    assert "FAILED with 2 problems, nothing imported" in text
    assert "line 2: id: duplicate id 'd1' (first on line 1)" in text and "line 3: id" in text
    assert not Document.objects.exists()


def test_commands_name_an_unknown_golden_set_and_an_unreadable_file(tmp_path: Path) -> None:
    factories.GoldenSetFactory.create(slug="hc")
    with pytest.raises(CommandError, match="no golden set 'nope' \\(known: hc\\)"):
        _call("import_golden", "nope", str(tmp_path / "g.json"))
    with pytest.raises(CommandError, match=r"cannot read .*missing\.jsonl"):
        _call("import_documents", "hc", str(tmp_path / "missing.jsonl"))


def test_the_query_log_command_samples_the_demo_log_with_a_cap(tmp_path: Path) -> None:
    gs = factories.GoldenSetFactory.create(slug="hc", locales=[])
    out = _call(
        "import_query_log", "hc", str(REPO / "demo" / "query_log.csv"), "--cap=120", "--reserve-share=0.15"
    )
    assert "queries created: 120" in out
    assert "known failures reserved: 18" in out
    for kind in ("email", "card", "phone", "digits"):
        removed = int(out.split(f"PII removed: {kind}: ")[1].split()[0])
        assert removed > 0, kind  # the demo log plants these kinds
    for kind in ("url query", "secret", "ip"):
        assert f"PII removed: {kind}: 0" in out  # counted even when none was found
    assert out.count("  sample: ") == 5 and "sample: '" in out  # before -> after
    queries = Query.objects.filter(golden_set=gs)
    assert queries.count() == 120
    assert not queries.filter(text__regex=r"@|\d{6,}").exists()
    # The log has no vertical column: the band goes to its own field, never to the stratum.
    assert set(queries.values_list("stratum", flat=True)) == {""}
    assert set(queries.values_list("traffic_band", flat=True)) == {"head", "torso", "tail"}
    for option in ("--band-shares", "--stratum-shares"):  # the option's former name still works
        with pytest.raises(CommandError, match="--band-shares: non-negative numbers for head, torso, tail"):
            _call(
                "import_query_log",
                "hc",
                str(REPO / "demo" / "query_log.csv"),
                "--cap=5",
                f'{option}={{"x": 1}}',
            )


@pytest.mark.parametrize(
    ("command", "says"),
    [
        # A RecursionError (deep nesting) and a ValueError (int() of "²") before: each a traceback.
        (
            ["import_query_log", "{set}", "log.csv", "--cap=5", "--band-shares=" + "[" * 100_000],
            "--band-shares is not usable JSON",
        ),
        (
            [
                "build_pools",
                "{set}",
                "--search-url=live=http://127.0.0.1:9/",
                "--param=live:k=" + "[" * 100_000,
            ],
            "k=[[[",
        ),
        (["create_golden_set", "other", "--surface=docs", "--rubric=help@²"], "no rubric 'help@²'"),
        (
            ["create_golden_set", "other", "--surface=docs", "--rubric=help@" + "9" * 5000],
            "no rubric 'help@999",
        ),
    ],
)
def test_a_command_given_a_value_beyond_what_is_read_says_so(
    golden_set: GoldenSet, command: list[str], says: str
) -> None:
    with pytest.raises(CommandError) as refused:
        _call(*[golden_set.slug if part == "{set}" else part for part in command])
    assert says in str(refused.value)
    if "build_pools" in command or "import_query_log" in command:
        assert "nested deeper than 64 levels" in str(refused.value)


def test_build_pools_calls_a_live_search_url_through_the_harness(search_url: str) -> None:
    gs = factories.GoldenSetFactory.create(slug="hc")
    for i in range(1, 31):
        factories.DocumentFactory.create(golden_set=gs, doc_id=f"d{i}")
    factories.QueryFactory.create(golden_set=gs, external_id="q1", text="refund", filters={})
    out = _call("build_pools", "hc", f"--search-url=live={search_url}", "--depth=5")
    assert "candidates added: 5" in out
    assert Candidate.objects.filter(provenance__contains=[{"system": "live"}]).count() == 5


@pytest.mark.parametrize("version", ["²", "٣", "99999999999999999999999", "0", "x", ""])
def test_create_golden_set_names_a_rubric_version_that_is_no_number(
    golden_set: GoldenSet, version: str
) -> None:
    """`²` passed isdigit() and then failed int(): a traceback instead of the command's own words."""
    name = golden_set.rubric.name
    with pytest.raises(CommandError, match=f"no rubric '{name}@{version}'; import it first"):
        _call("create_golden_set", "cli-set", "--surface=docs", f"--rubric={name}@{version}")
    assert not GoldenSet.objects.filter(slug="cli-set").exists()


def test_assign_queries_names_the_users_it_does_not_know_in_the_right_number(golden_set: GoldenSet) -> None:
    with pytest.raises(CommandError, match=r"^--raters: no user ghost$"):
        _call("assign_queries", golden_set.slug, "--raters=alice,ghost")
    with pytest.raises(CommandError, match=r"^--raters: no users ghost, nobody$"):
        _call("assign_queries", golden_set.slug, "--raters=nobody,ghost")
