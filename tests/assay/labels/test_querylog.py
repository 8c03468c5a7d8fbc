"""The query-log pipeline, pure (no database): parsing, PII stripping, dedup, traffic bands, sampling."""

from __future__ import annotations

import json
import random
from collections import Counter
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.labels import querylog
from assay.labels.querylog import LogQuery, LogRow
from assay.problems import ImportReport


def _report() -> ImportReport:
    return ImportReport(kind="query log", source="test")


def _parse(text: str | bytes, name: str = "log.csv") -> tuple[list[LogRow], ImportReport]:
    report = _report()
    data = text.encode() if isinstance(text, str) else text
    return querylog.parse_log(data, name=name, report=report), report


# --- PII --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "clean", "kinds"),
    [
        ("refund for jane.doe+billing@example.co.uk please", "refund for please", {"email": 1}),
        ("card 4111 1111 1111 1111 declined", "card declined", {"card": 1}),
        ("charge on 5500-0000-0000-0004 twice", "charge on twice", {"card": 1}),
        ("4111111111111111", "", {"card": 1}),
        ("call me +1 (415) 555-0132", "call me", {"phone": 1}),
        ("rückruf 030 1234567 bitte", "rückruf bitte", {"phone": 1}),
        ("sms to +4915112345678", "sms to", {"phone": 1}),
        ("order 123456789 not delivered", "order not delivered", {"digits": 1}),
        ("account 1234-5678-9012-3456 locked", "account locked", {"digits": 1}),  # fails Luhn: not a card
        ("invoice 2024-01-15 missing", "invoice 2024-01-15 missing", {}),
        ("error 500 on checkout", "error 500 on checkout", {}),
        ("windows 10 install", "windows 10 install", {}),
        ("zip 90210 shipping", "zip 90210 shipping", {}),
        ("a@b.io and 4111 1111 1111 1111 and 555-0132", "and and", {"email": 1, "card": 1, "phone": 1}),
        # Addresses, whole: not `ip .4 blocked`.
        ("ip 192.168.10.4 blocked", "ip blocked", {"ip": 1}),
        ("from 8.8.8.8, then 10.0.0.5:8080", "from , then :8080", {"ip": 2}),
        ("ping 2001:db8::1 fails", "ping fails", {"ip": 1}),
        ("fe80::1%eth0 unreachable", "unreachable", {"ip": 1}),
        ("mapped ::ffff:10.0.0.1 here", "mapped here", {"ip": 1}),
        ("meeting 10:30:00 today", "meeting 10:30:00 today", {}),
        ("release 1.2.300.4 notes", "release 1.2.300.4 notes", {}),
        # Secret-like tokens.
        ("token sk_live_51H8xYzAbCdEf", "token", {"secret": 1}),
        ("pk_test_TYooMQauvdEDq54NiTphI7jx invalid", "invalid", {"secret": 1}),
        ("ghp_16C7e42F292c6912E7710c838347Ae178B4a leaked", "leaked", {"secret": 1}),
        ("AKIAIOSFODNN7EXAMPLE denied", "denied", {"secret": 1}),
        (
            "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N expired",
            "jwt expired",
            {"secret": 1},
        ),
        ("hash 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b", "hash", {"secret": 1}),
        ("key QWxhZGRpbjpvcGVuIHNlc2FtZQ== rejected", "key rejected", {"secret": 1}),
        ("internationalization settings", "internationalization settings", {}),
        ("deadbeefcafebabe recipe", "deadbeefcafebabe recipe", {}),
        # A URL's query string, names and values: no `?email=` left behind.
        (
            "see https://shop.example.com/a?email=bob@x.com&ref=2 now",
            "see https://shop.example.com/a now",
            {"url query": 1},
        ),
        ("/reset?token=abc&uid=7", "/reset", {"url query": 1}),
        ("what? why=because", "what? why=because", {}),
    ],
)
def test_it_strips_pii_and_counts_each_kind(raw: str, clean: str, kinds: dict[str, int]) -> None:
    text, found = querylog.strip_pii(raw)
    assert text == clean
    assert dict(found) == kinds


def test_it_strips_every_planted_pii_from_a_realistic_log() -> None:
    rng = random.Random(7)
    topics = [
        "refund annual plan",
        "cancel subscription",
        "api rate limit",
        "reset password",
        "export invoices",
    ]
    planted: Counter[str] = Counter()
    rows = []
    for i in range(600):
        text = rng.choice(topics)
        kind = rng.choice(["email", "card", "phone", "digits", None, None, None])
        if kind == "email":
            text += f" customer{i}@mail.example.com"
        elif kind == "card":
            text += " 4242 4242 4242 4242"
        elif kind == "phone":
            text += f" +44 20 7946 {i % 10000:04d}"
        elif kind == "digits":
            text += f" {100000000 + i}"
        if kind:
            planted[kind] += 1
        rows.append(LogRow(query=text, count=rng.randint(1, 50), zero_hits=0, locale="en-US", line=i + 2))
    result = querylog.clean(rows)
    assert dict(result.pii) == dict(planted)
    assert result.queries_with_pii == sum(planted.values())
    assert sorted(q.norm for q in result.queries) == sorted(topics)  # PII gone, variants merged
    for q in result.queries:
        assert "@" not in q.text and not any(ch.isdigit() for ch in q.text)


# --- normalisation and dedup ------------------------------------------------------------------------


def test_it_merges_queries_equal_after_normalising_within_a_locale() -> None:
    rows = [
        LogRow("Refund  Policy", 10, 0, "en-US", 2),
        LogRow("refund policy", 30, 3, "en-US", 3),
        LogRow("REFUND POLICY ", 5, 5, "en-US", 4),
        LogRow("refund policy", 7, 0, "de-DE", 5),
        LogRow("   ", 9, 0, "en-US", 6),
        LogRow("a@b.io", 4, 0, "en-US", 7),
    ]
    result = querylog.clean(rows)
    by_locale = {q.locale: q for q in result.queries}
    assert set(by_locale) == {"en-US", "de-DE"}
    merged = by_locale["en-US"]
    assert (merged.text, merged.count, merged.zero_hits, merged.variants) == ("refund policy", 45, 8, 3)
    assert (result.blank, result.empty_after_stripping, result.duplicates_merged) == (1, 1, 2)
    assert merged.external_id == LogQuery("x", "refund policy", "en-US", 1, 0).external_id


# --- traffic bands and sampling ---------------------------------------------------------------------


def _log(n: int, *, failures_every: int = 0) -> list[LogQuery]:
    """A Zipf-shaped log: query i is searched ~1000/(i+1) times."""
    out = []
    for i in range(n):
        count = max(1, 1000 // (i + 1))
        zero = count if failures_every and i % failures_every == 0 and i > 0 else 0
        out.append(
            LogQuery(text=f"query {i}", norm=f"query {i}", locale="en-US", count=count, zero_hits=zero)
        )
    return out


def test_it_assigns_head_torso_tail_by_cumulative_traffic() -> None:
    queries = [
        LogQuery(f"q{i}", f"q{i}", "", c, 0) for i, c in enumerate([50, 20, 10, 10, 5, 3, 1, 1])
    ]  # total 100
    bands = querylog.assign_bands(queries)
    assert [bands[q] for q in queries] == ["head", "torso", "torso", "tail", "tail", "tail", "tail", "tail"]


def test_it_reserves_the_share_for_known_failures_and_respects_the_cap() -> None:
    queries = _log(2000, failures_every=9)
    result = querylog.sample(queries, cap=200, reserve_share=0.15, seed=1)
    assert len(result.selected) == 200
    reserved = [s for s in result.selected if s.reserved]
    assert len(reserved) == 30 == result.taken["reserved"]
    assert all(s.query.zero_hit_share >= 0.5 for s in reserved)
    rest = Counter(s.band for s in result.selected if not s.reserved)
    assert sum(rest.values()) == 170
    # Equal thirds of the rest, but the head has fewer queries than its third: it gives places away.
    head_left = result.available["head"] - sum(1 for s in reserved if s.band == "head")
    assert rest["head"] == head_left < 170 // 3
    assert abs(rest["torso"] - rest["tail"]) <= 1
    assert len({s.query for s in result.selected}) == 200


def test_it_is_deterministic_for_a_seed_and_varies_with_it() -> None:
    queries = _log(1500, failures_every=7)
    a = querylog.sample(queries, cap=100, seed=3)
    b = querylog.sample(list(reversed(queries)), cap=100, seed=3)
    c = querylog.sample(queries, cap=100, seed=4)
    assert [s.query for s in a.selected] == [s.query for s in b.selected]
    assert {s.query for s in a.selected} != {s.query for s in c.selected}


def test_it_takes_everything_when_the_log_is_smaller_than_the_cap() -> None:
    queries = _log(40, failures_every=5)
    result = querylog.sample(queries, cap=100, reserve_share=0.2)
    assert {s.query for s in result.selected} == set(queries)
    # 20% of 40 places is 8, but the log has only 7 known failures (queries 5, 10, ..., 35).
    assert result.taken["reserved"] == 7


def test_it_reserves_no_more_failures_than_exist() -> None:
    queries = _log(300, failures_every=100)  # two failures: queries 100 and 200
    result = querylog.sample(queries, cap=50, reserve_share=0.2)
    assert result.taken["reserved"] == 2
    assert len(result.selected) == 50


def test_it_honours_custom_band_shares() -> None:
    queries = _log(3000)
    result = querylog.sample(
        queries, cap=100, reserve_share=0, band_shares={"head": 0, "torso": 0, "tail": 1}
    )
    assert Counter(s.band for s in result.selected) == {"tail": 100}


def test_it_refuses_bad_sampling_arguments() -> None:
    with pytest.raises(ValueError, match="cap"):
        querylog.sample([], cap=-1)
    with pytest.raises(ValueError, match="reserve_share"):
        querylog.sample([], cap=1, reserve_share=1.5)
    with pytest.raises(ValueError, match="band_shares"):
        querylog.sample([], cap=1, band_shares={"middle": 1})


# --- parsing ----------------------------------------------------------------------------------------


def test_it_parses_csv_and_jsonl_alike() -> None:
    csv_rows, csv_report = _parse('query,count,zero_hits,locale\nrefund,12,0,en-US\n"a, b",3,true,de-DE\n')
    jsonl = "\n".join(
        json.dumps(o)
        for o in [
            {"query": "refund", "count": 12, "zero_hits": 0, "locale": "en-US"},
            {"query": "a, b", "count": 3, "zero_hits": True, "locale": "de-DE"},
        ]
    )
    jsonl_rows, jsonl_report = _parse(jsonl, "log.jsonl")
    assert csv_report.ok and jsonl_report.ok
    strip = [(r.query, r.count, r.zero_hits, r.locale) for r in csv_rows]
    assert strip == [(r.query, r.count, r.zero_hits, r.locale) for r in jsonl_rows]
    assert strip[1] == ("a, b", 3, 3, "de-DE")


def test_it_names_missing_columns() -> None:
    rows, report = _parse("query,zero_hits,locale\nrefund,0,en-US\n")
    assert rows == []
    assert [str(p) for p in report.problems] == [
        "header: missing column count; found query, zero_hits, locale "
        "(expected query,count[,zero_hits][,locale][,vertical])"
    ]


def test_it_reports_a_file_that_is_not_utf8_with_its_place() -> None:
    data = b"query,count\nrefund,1\n" + "r\u00e9sum\u00e9,2\n".encode("latin-1")
    rows, report = _parse(data)
    assert rows == []
    assert len(report.problems) == 1
    assert report.problems[0].where == "line 3"
    assert "not UTF-8: byte 0xe9 at offset 22" in report.problems[0].message


def test_it_reports_every_bad_row_with_its_line() -> None:
    text = (
        "query,count,zero_hits,locale\nok,1,0,en-US\nbad count,-3,0,en-US\nx,2,5,en-US\ny,two,0,\nshort,1\n"
    )
    _, report = _parse(text)
    assert [p.where for p in report.problems] == [
        "line 3: count",
        "line 4: zero_hits",
        "line 5: count",
        "line 6",
    ]
    assert "between 0 and count (2)" in report.problems[1].message


def test_it_reports_malformed_jsonl_lines() -> None:
    text = '{"query": "a", "count": 1}\n{"query": "b", "count": \n["c"]\n{"count": 2}\n'
    _, report = _parse(text, "log.jsonl")
    assert [p.where for p in report.problems] == ["line 2", "line 3", "line 4"]
    assert "missing field query" in report.problems[2].message


# --- the vertical, apart from the band --------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("query,count,vertical\nrefund,12,billing\napi keys,3, developer \nreset,2,\n", "log.csv"),
        ("Query,Count,Stratum\nrefund,12,billing\napi keys,3,developer\nreset,2,\n", "log.csv"),
        (
            '{"query": "refund", "count": 12, "vertical": "billing"}\n'
            '{"query": "api keys", "count": 3, "stratum": "developer"}\n'
            '{"query": "reset", "count": 2, "vertical": null}\n',
            "log.jsonl",
        ),
    ],
    ids=["csv vertical", "csv stratum", "jsonl"],
)
def test_it_reads_the_vertical_from_a_vertical_or_a_stratum_column(text: str, name: str) -> None:
    rows, report = _parse(text, name)

    assert report.ok, report.problems
    assert [(r.query, r.vertical) for r in rows] == [
        ("refund", "billing"),
        ("api keys", "developer"),
        ("reset", ""),
    ]


def test_a_log_without_a_vertical_column_gives_no_vertical() -> None:
    rows, report = _parse("query,count,zero_hits,locale\nrefund,12,0,en-US\n")

    assert report.ok and [r.vertical for r in rows] == [""]
    assert report.notes == []  # a vertical column is no longer an ignored one either
    _, with_extra = _parse("query,count,vertical,team\nrefund,12,billing,x\n")
    assert with_extra.notes == ["ignored column: team"]


def test_it_refuses_a_vertical_given_in_two_columns() -> None:
    rows, report = _parse("query,count,vertical,stratum\nrefund,12,billing,billing\n")
    assert rows == []
    assert [str(p) for p in report.problems] == [
        "header: the vertical goes in one column, vertical or stratum, not both"
    ]
    _, jsonl = _parse('{"query": "a", "count": 1, "vertical": "x", "stratum": "x"}\n', "log.jsonl")
    assert [str(p) for p in jsonl.problems] == [
        "line 1: the vertical goes in one column, vertical or stratum, not both"
    ]


def test_it_reports_a_vertical_that_cannot_be_a_stratum_with_its_place() -> None:
    lines = [
        {"query": "a", "count": 1, "vertical": 7},
        {"query": "b", "count": 1, "stratum": "x" * 101},
        {"query": "c", "count": 1, "vertical": "x" * 100},
    ]
    text = (
        "\n".join(json.dumps(line) for line in lines)
        + '\n{"query": "d", "count": 1, "vertical": "\\ud800"}\n'
    )

    rows, report = _parse(text, "log.jsonl")

    assert [str(p) for p in report.problems] == [
        "line 1: vertical: expected text, found 7",
        "line 2: stratum: at most 100 characters (a query's stratum), found 101",
        "line 4: vertical: '\\ud800' is not valid Unicode (a lone surrogate)",
    ]
    assert [r.query for r in rows] == ["c"]


def test_a_merged_query_keeps_the_vertical_most_of_its_searches_were_logged_under() -> None:
    rows = [
        LogRow("Refund", 10, 0, "en-US", 2, vertical="billing"),
        LogRow("refund", 30, 0, "en-US", 3, vertical="account"),
        LogRow("refund ", 25, 0, "en-US", 4, vertical="billing"),
        LogRow("refund", 99, 0, "en-US", 5),  # no vertical: does not vote
        LogRow("api keys", 4, 0, "en-US", 6, vertical="developer"),
        LogRow("reset", 4, 0, "en-US", 7),
    ]

    result = querylog.clean(rows)

    assert {q.norm: q.vertical for q in result.queries} == {
        "refund": "billing",
        "api keys": "developer",
        "reset": "",
    }
    assert result.several_verticals == 1


def test_the_reserve_records_its_failure_mode_and_the_band_is_never_the_vertical() -> None:
    queries = [
        replace(q, vertical="billing" if i % 2 else "") for i, q in enumerate(_log(400, failures_every=4))
    ]
    bands = querylog.assign_bands(queries)

    result = querylog.sample(queries, cap=80, reserve_share=0.25, seed=2)

    assert {s.failure_mode for s in result.selected if s.reserved} == {querylog.ZERO_RESULTS}
    assert {s.failure_mode for s in result.selected if not s.reserved} == {None}
    assert all(s.band == bands[s.query] for s in result.selected)
    assert {s.query.vertical for s in result.selected} == {"billing", ""}


def test_it_samples_by_the_bands_it_is_given() -> None:
    queries = _log(90)
    # The queries left to sample are the log's tail, but the caller banded them over the whole log.
    rest = queries[60:]
    whole = querylog.assign_bands(queries)

    by_rest = querylog.sample(rest, cap=30, reserve_share=0)
    by_whole = querylog.sample(rest, cap=30, reserve_share=0, bands=whole)

    assert {s.band for s in by_whole.selected} == {"tail"}
    assert by_whole.available == {"head": 0, "torso": 0, "tail": 30, "failures": 0}
    assert {s.band for s in by_rest.selected} == {"head", "torso", "tail"}


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["refund", "Refund", "api keys", "reset password", "invoice"]),
            st.integers(0, 50),
            st.sampled_from(["", "billing", "developer", "head", "tail"]),
        ),
        min_size=1,
        max_size=30,
    ),
    st.integers(1, 10),
)
def test_the_vertical_comes_from_the_log_and_the_band_from_the_traffic(
    rows: list[tuple[str, int, str]], cap: int
) -> None:
    logged = [LogRow(q, c, 0, "en-US", i + 2, vertical=v) for i, (q, c, v) in enumerate(rows)]
    cleaned = querylog.clean(logged)
    bands = querylog.assign_bands(cleaned.queries)

    result = querylog.sample(cleaned.queries, cap=cap)

    for s in result.selected:
        assert s.band == bands[s.query] and s.band in querylog.BANDS
        said = {v for q, _, v in rows if querylog.normalize(q) == s.query.norm and v}
        assert s.query.vertical in said if said else s.query.vertical == ""


def test_it_reports_a_query_that_is_not_valid_unicode_instead_of_failing_to_store_it() -> None:
    rows, report = _parse(
        '{"query": "refund \\ud83d", "count": 3}\n{"query": "ok", "count": 1}\n', "log.jsonl"
    )

    assert [str(p) for p in report.problems] == [
        "line 1: query: 'refund \\ud83d' is not valid Unicode (a lone surrogate)"
    ]
    assert [r.query for r in rows] == ["ok"]


def test_the_report_keeps_the_first_rows_changed_as_samples() -> None:
    rows = [LogRow(f"login from 10.0.0.{i} failed", 1, 0, "en-US", i + 2) for i in range(8)]
    rows.insert(0, LogRow("refund policy", 5, 0, "en-US", 1))
    result = querylog.clean(rows)
    assert result.samples == [(f"login from 10.0.0.{i} failed", "login from failed") for i in range(5)]
    assert result.pii == {"ip": 8}
