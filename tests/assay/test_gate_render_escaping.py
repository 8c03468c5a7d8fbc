"""User text in the gate's output cannot forge a GitHub workflow command nor inject Markdown or HTML."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assay.drift import compare, github_annotations, load_budgets, render_markdown, render_text
from assay.golden.model import GoldenFile, GoldenQuery, Judgment
from assay.report import build_report
from assay.results import QueryResult

LINE_BREAKS = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"
ATTACKS = (
    "\n::error ::forged",
    "\r\n::warning file=x::forged",
    "\n  ::add-mask::x",
    "\u2028::error::x",
    "\x85::set-output name=a::b",
    "##[error]legacy",
    "<img src=x onerror=alert(1)>",
    "</td><script>x</script>",
    "| cell | break |",
    "`code` *bold* _em_ [link](http://x) ~~del~~ \\",
    "%0A::error::encoded",
)
hostile = st.builds(
    lambda prefix, attack, suffix: prefix + attack + suffix,
    st.text(max_size=5),
    st.sampled_from(ATTACKS),
    st.text(alphabet=st.sampled_from(LINE_BREAKS + ":<>&|`*_[]#%,a"), max_size=8),
)


def gate_output(stratum: str, query_id: str, text: str, doc_ids: list[str]) -> tuple[str, str, list[str]]:
    judged = tuple(Judgment(doc, 3 - i) for i, doc in enumerate(doc_ids))
    golden = GoldenFile(
        version="v1",
        queries=(
            GoldenQuery(query_id, text, judged, stratum=stratum, critical=True),
            GoldenQuery("plain", "plain", judged, stratum=stratum),
        ),
    )

    def report(ranked: tuple[str, ...]) -> dict:
        results = {q.id: QueryResult(q.id, ranked) for q in golden.queries}
        return json.loads(json.dumps(build_report(golden, results)))

    current = report(("other-1", "other-2", "other-3", *reversed(doc_ids)))
    baseline = report(tuple(doc_ids))
    result = compare(current, baseline, load_budgets({"strata": {stratum: {"ndcg": {"fail": 0.01}}}}))
    assert result.failures  # the hostile stratum and query id reach the findings
    return render_text(result), render_markdown(result), github_annotations(result)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    stratum=hostile,
    query_id=hostile,
    text=hostile,
    doc_ids=st.lists(hostile, min_size=3, max_size=3, unique=True),
)
def test_no_user_text_starts_a_workflow_command_or_injects_markup(
    stratum: str, query_id: str, text: str, doc_ids: list[str]
) -> None:
    plain, markdown, annotations = gate_output(stratum, query_id, text, doc_ids)
    lines = plain.split("\n")
    # Each value stays on its line: the log has no line break but the ones between its lines.
    assert not any(c in plain for c in LINE_BREAKS.replace("\n", ""))
    for line in lines:
        assert not line.lstrip().startswith("::"), line
        assert "##[" not in line
    assert lines[0].startswith("Relevance gate: FAIL")
    assert sum(line.startswith("FAIL  ") for line in lines) == len(annotations)
    for annotation in annotations:
        assert annotation.startswith(("::error title=", "::warning title="))
        assert not any(c in annotation for c in LINE_BREAKS[:2])
        # The title ends at the command's own `::`: its `:` and `,` are escaped.
        title = annotation.split("::")[1].split("title=", 1)[1]
        assert ":" not in title and "," not in title
    assert "<" not in markdown
    assert not any(c in markdown for c in LINE_BREAKS.replace("\n", ""))
    # Every row of a table has its header's columns: a `|` inside a value is escaped.
    tables = "\n".join(line if line.startswith("|") else "" for line in markdown.splitlines()).split("\n\n")
    for table in filter(None, (t.strip("\n") for t in tables)):
        widths = {row.replace("\\|", "").count("|") for row in table.split("\n")}
        assert len(widths) == 1, table


def test_a_forged_command_in_a_stratum_is_shown_inline() -> None:
    plain, markdown, _ = gate_output("billing\n::error ::forged", "q<1>", "t", ["d1", "d2", "d3"])
    assert "FAIL  stratum billing\\n::error ::forged nDCG@k drop" in plain
    assert "q&lt;1&gt;" in markdown


def test_assay_remote_prints_the_servers_verdict_on_safe_lines(capsys: pytest.CaptureFixture[str]) -> None:
    from assay.remote import _print_verdict

    forged = "stratum x\n::error ::forged"
    _print_verdict(
        {
            "verdict": "fail",
            "run_id": 7,
            "status": "succeeded",
            "failures": [{"message": forged}],
            "warnings": [{"message": "::warning::forged"}],
            "top_losers": [{"id": "q\r\n::error::x", "text": "t", "baseline_ndcg": 1.0, "current_ndcg": 0.5}],
            "page": "http://assay.example/runs/7/",
        }
    )
    lines = capsys.readouterr().out.splitlines()
    assert "FAIL  stratum x\\n::error ::forged" in lines
    assert not any(line.lstrip().startswith("::") for line in lines)
    assert len(lines) == 6
