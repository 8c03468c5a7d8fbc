"""Every JSON field an admin form edits reads its text through `assay.jsonin`: JSON nested past what is
read, or a number longer than Python reads, is the field's worded error, never a 500."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User

from evaluation.models import BudgetSet, RunSchedule, SearchTarget
from labeling.models import Document, GoldenSet, Query
from tests.support.evaluation import logged_in

pytestmark = pytest.mark.django_db

DEEP = "[" * 100_000
HUGE = '{"a": ' + "1" * 5000 + "}"

# (admin add URL, the JSON field, the other fields a valid form needs, the model)
FORMS = [
    (
        "evaluation/searchtarget",
        "headers",
        {"name": "t", "adapter": "http_json", "url": "http://127.0.0.1:9/s"},
    ),
    (
        "evaluation/searchtarget",
        "es_template",
        {"name": "t", "adapter": "elasticsearch", "url": "http://x/i"},
    ),
    ("evaluation/runschedule", "params", {"hour": "2", "minute": "0"}),
    ("evaluation/budgetset", "data", {}),
    ("labeling/goldenset", "locales", {"slug": "s", "name": "S", "surface": "docs"}),
    ("labeling/document", "fields", {"doc_id": "d", "title": "T"}),
    ("labeling/query", "filters", {"external_id": "q", "text": "t"}),
]
MODELS: dict[str, Any] = {
    "evaluation/searchtarget": SearchTarget,
    "evaluation/runschedule": RunSchedule,
    "evaluation/budgetset": BudgetSet,
    "labeling/goldenset": GoldenSet,
    "labeling/document": Document,
    "labeling/query": Query,
}


@pytest.mark.parametrize(("path", "field", "others"), FORMS)
@pytest.mark.parametrize(
    ("typed", "says"), [(DEEP, "nested deeper than 64 levels"), (HUGE, "a number is too long to read")]
)
def test_a_json_field_beyond_what_is_read_is_the_fields_error(
    golden_set: GoldenSet, path: str, field: str, others: dict[str, str], typed: str, says: str
) -> None:
    root = User.objects.create_superuser("root", "root@example.org", "pw")
    model = MODELS[path]
    before = model.objects.count()
    # A RecursionError or a ValueError (the int-string digit limit) in Django's JSONField: a 500 before.
    response = logged_in(root).post(
        f"/admin/{path}/add/", {**others, field: typed, "golden_set": golden_set.pk}
    )
    assert response.status_code == 200  # the admin's form again, with its errors
    assert says in response.content.decode()
    assert model.objects.count() == before
