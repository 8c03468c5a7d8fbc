"""The budgets page's form (evaluation.runs.budgets_form): metric x scope x warn/fail with units and the
defaults shown; posted as it stands it saves the same budgets, an edited cell changes just that threshold,
every mistake is worded with its cell and nothing is saved; the JSON file downloads and uploads."""

from __future__ import annotations

import json
import re

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from assay.budgets import Budget, load_budgets
from evaluation.models import BudgetSet
from evaluation.runs import selectors, services
from labeling.models import GoldenSet
from tests import factories
from tests.support.evaluation import form_fields, logged_in, page_text, section_text

pytestmark = pytest.mark.django_db

URL = "/sets/help-center/budgets/"


@pytest.fixture
def client(golden_set: GoldenSet, rita: User) -> Client:
    for i, (stratum, band) in enumerate((("billing", "head"), ("account", ""), ("billing", "tail"))):
        factories.QueryFactory.create(
            golden_set=golden_set, external_id=f"q-{i}", stratum=stratum, traffic_band=band
        )
    return logged_in(rita)


def _row(markup: str, scope: str) -> str:
    return re.search(rf'<tr data-scope="{re.escape(scope)}"[^>]*>(.*?)</tr>', markup, re.S).group(1)  # type: ignore[union-attr]


def test_the_form_shows_each_scope_metric_and_level_with_units_and_defaults(client: Client) -> None:
    page = client.get(URL)
    markup = page.content.decode()
    assert "No budgets stored: these are the defaults of docs/metrics.md, “Budgets file”" in page_text(page)
    assert 'href="/docs/metrics/#budgets-file"' in markup
    head = markup[markup.index("<thead>") : markup.index("</thead>")]
    assert "nDCG@k" in head and "drop, on its 0 to 1 scale; default 0.01 / 0.025" in head
    assert (
        "empty rate" in head
        and "rise, a share of the queries (0.01 = 1 point); default 0.005 / 0.015" in head
    )
    core = _row(markup, "core")
    assert (
        'name="b.core.ndcg.warn" value="0.01" placeholder="0.01" aria-label="core tier, nDCG@k warn"' in core
    )
    assert 'name="b.core.lt3_rate.fail" value="off"' in core
    assert 'name="b.weighted.ndcg.warn" value="" placeholder="off"' in _row(markup, "weighted")
    # The set's strata and traffic bands each have a row, not gated until the budgets name them.
    for scope in ("strata:account", "strata:billing", "traffic_bands:head", "traffic_bands:tail"):
        assert 'type="checkbox"' in _row(markup, scope) and " checked" not in _row(markup, scope)
    assert 'data-scope="traffic_bands:"' not in markup and "failure_modes:" not in markup
    assert "<textarea" not in markup


def test_posting_the_form_as_it_stands_saves_the_same_budgets(client: Client, golden_set: GoldenSet) -> None:
    stored = {
        "ndcg": {"warn": 0.02, "fail": 0.05},
        "lt3_rate": {"warn": None, "fail": 0.1},
        "weighted": {"mrr": {"warn": 0.03, "fail": 0.06}},
        "shadow": {"empty_rate": {"warn": 0.01, "fail": None}},
        "max_error_rate": 0.02,
        "critical_rank": 5,
        "strata": {"billing": {"mrr": {"fail": 0.2}}, "account": {}},
        "traffic_bands": {"head": {"ndcg": {"warn": None}}},
    }
    services.budgets_set(golden_set=golden_set, data=stored, by=None)
    before = selectors.budgets_get(golden_set=golden_set)
    markup = client.get(URL).content.decode()
    assert 'value="0.2"' in _row(markup, "strata:billing") and " checked" in _row(markup, "strata:billing")
    assert 'name="b.strata:account.ndcg.warn" value="" placeholder="0.02"' in _row(markup, "strata:account")
    fields = form_fields(markup, "budgets-form")

    response = client.post(URL, {**fields, "action": "save"})

    assert response.status_code == 302, page_text(response)
    assert selectors.budgets_get(golden_set=golden_set) == before
    assert "Budgets of help-center saved" in page_text(client.get(URL))


def test_an_edited_cell_changes_that_threshold_and_a_ticked_row_starts_gating(
    client: Client, golden_set: GoldenSet
) -> None:
    fields = form_fields(client.get(URL).content.decode(), "budgets-form")
    fields |= {
        "b.core.ndcg.warn": "off",
        "b.strata:billing.ndcg.fail": "0.05",
        "gate.strata:billing": "on",
        "gate.traffic_bands:tail": "on",
        "critical_rank": "",
    }
    assert client.post(URL, {**fields, "action": "save"}).status_code == 302
    data = BudgetSet.objects.get(golden_set=golden_set).data
    assert data["ndcg"] == {"warn": None, "fail": 0.025}
    assert data["strata"]["billing"]["ndcg"] == {"warn": None, "fail": 0.05}  # the rest as the core's
    assert data["strata"]["billing"]["mrr"] == {"warn": 0.01, "fail": 0.03}
    assert set(data["strata"]) == {"billing"} and set(data["traffic_bands"]) == {"tail"}
    assert data["critical_rank"] == 3  # empty: the default


@pytest.mark.parametrize(
    ("cell", "typed", "says"),
    [
        (
            "b.core.ndcg.warn",
            "abc",
            "core tier, nDCG@k warn: 'abc' is not a number: give a number above 0, off",
        ),
        ("b.strata:billing.mrr.fail", "-1", "stratum billing, MRR fail: -1 is not above 0"),
        (
            "b.shadow.empty_rate.fail",
            "0",
            "shadow tier, empty rate fail: 0 is not above 0: a budget of 0 trips",
        ),
        ("max_error_rate", "2", "error budget: '2' is not a share of the queries from 0 to 1"),
        ("critical_rank", "0", "critical rank: '0' is not a whole number from 1 up"),
        # str.isdigit() took both, and int() refused them: a 500 before.
        ("critical_rank", "²", "critical rank: '²' is not a whole number from 1 up"),
        ("critical_rank", "9" * 5000, "critical rank: '99999"),
        (
            "b.core.ndcg.fail",
            "0.001",
            "core tier, nDCG@k: warn 0.01 is above fail 0.001: the fail level would",
        ),
    ],
)
def test_every_mistake_is_worded_with_its_cell_and_nothing_is_saved(
    client: Client, cell: str, typed: str, says: str
) -> None:
    fields = form_fields(client.get(URL).content.decode(), "budgets-form") | {cell: typed}
    response = client.post(URL, {**fields, "action": "save"})
    assert response.status_code == 422
    assert says in section_text(response, "problems")
    assert f'value="{typed}"' in response.content.decode()  # what was typed stays in its cell
    assert not BudgetSet.objects.exists()


def test_a_wrong_cell_is_marked_for_screen_readers(client: Client) -> None:
    fields = form_fields(client.get(URL).content.decode(), "budgets-form") | {"b.core.mrr.warn": "x"}
    markup = client.post(URL, {**fields, "action": "save"}).content.decode()
    assert re.search(r'name="b.core.mrr.warn" value="x"[^>]*class="invalid" aria-invalid="true"', markup)


def test_the_json_file_downloads_and_uploads_as_it_is(client: Client, golden_set: GoldenSet) -> None:
    services.budgets_set(
        golden_set=golden_set, data={"strata": {"billing": {"ndcg": {"fail": 0.3}}}}, by=None
    )
    download = client.get("/sets/help-center/budgets.json")
    assert download["Content-Disposition"] == 'attachment; filename="budgets-help-center.json"'
    data = json.loads(download.content)
    assert load_budgets(data) == selectors.budgets_get(golden_set=golden_set)

    data["mrr"] = {"warn": 0.04, "fail": 0.08}
    upload = SimpleUploadedFile("budgets.json", json.dumps(data).encode(), "application/json")
    assert client.post(URL, {"action": "upload", "file": upload}).status_code == 302
    assert selectors.budgets_get(golden_set=golden_set).core["mrr"] == Budget(0.04, 0.08)

    flat = SimpleUploadedFile("old.json", b'{"ndcg_max_drop": 0.07}')
    assert client.post(URL, {"action": "upload", "file": flat}).status_code == 302
    assert selectors.budgets_get(golden_set=golden_set).core["ndcg"].fail == 0.07


def test_a_bad_budgets_file_is_refused_with_every_problem(client: Client, golden_set: GoldenSet) -> None:
    bad = SimpleUploadedFile("b.json", b'{"ndcg": {"warn": -1}, "colour": "blue"}')
    response = client.post(URL, {"action": "upload", "file": bad})
    assert response.status_code == 422
    problems = section_text(response, "problems")
    assert "ndcg.warn: -1 is not a positive finite number" in problems and "colour: unknown key" in problems
    broken = client.post(URL, {"action": "upload", "file": SimpleUploadedFile("b.json", b"{")})
    assert "budgets file: invalid JSON at line 1 column 2" in section_text(broken, "problems")
    assert not BudgetSet.objects.exists()
