"""The Django admin is audit-only for label data: it shows every record and lets nobody, superusers
included, add, change or delete a grade, its history, an adjudication, a proposal or the other records
the services write (labeling/admin.py). Deleting a set, query or document that holds such records is
refused with nothing deleted, and no admin page answers 500.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from django.apps import apps
from django.contrib import admin
from django.contrib.auth.models import Permission, User
from django.db import models as db
from django.db import transaction
from django.http import HttpRequest
from django.test import Client, RequestFactory
from django.urls import reverse

from labeling import models, services
from labeling.models import Assignment, GoldenSet
from tests import factories

pytestmark = pytest.mark.django_db

# The models the admin must never write: the only list written out here, everything else is read from
# the admin's registry.
READ_ONLY: frozenset[type[db.Model]] = frozenset(
    {
        models.Judgment,
        models.JudgmentEvent,
        models.CantJudgeMark,
        models.Adjudication,
        models.LabelProposal,
        models.FrozenLabel,
        models.TierMove,
        models.DisputeCheck,
        models.CalibrationRound,
        models.Assignment,
        models.GoldItem,
        models.Rubric,
        models.Judge,
        models.JudgeJob,
        models.JudgeJobItem,
        models.JudgeAnswer,
        models.JudgeLabel,
        models.JudgeQualification,
    }
)
LABEL_DATA = (models.Judgment, models.JudgmentEvent, models.Adjudication, models.LabelProposal)
EDITED = "edited in the admin"


def _labeling_admins() -> list[tuple[type[db.Model], admin.ModelAdmin[Any]]]:
    return [(m, a) for m, a in admin.site._registry.items() if m._meta.app_label == "labeling"]


def _url(model: type[db.Model], view: str, *args: Any) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{view}", args=args)


def _snapshot() -> dict[str, list[Any]]:
    """Every row and field value of the models the admin must not write, which label holders exist, and
    the assignments' scopes."""
    rows: dict[str, list[Any]] = {
        m._meta.label: list(m._default_manager.order_by("pk").values()) for m in READ_ONLY
    }
    for holder in (models.GoldenSet, models.Query, models.Document):
        rows[holder._meta.label] = list(holder._default_manager.order_by("pk").values("pk"))
    rows["scope"] = list(models.Assignment.scope.through.objects.order_by("pk").values())
    return rows


def _form_data(obj: db.Model) -> dict[str, Any]:
    """What the admin form of `obj` posts for it unchanged: every editable field, as a browser sends it."""
    data: dict[str, Any] = {}
    for field in obj._meta.concrete_fields:
        if not field.editable or field.primary_key:
            continue
        value = field.value_from_object(obj)
        if isinstance(field, db.JSONField):
            data[field.name] = json.dumps(value)
        elif isinstance(field, db.BooleanField):
            if value:
                data[field.name] = "on"
        else:
            data[field.name] = "" if value is None else str(value)
    for m2m in obj._meta.many_to_many:
        data[m2m.name] = [str(o.pk) for o in m2m.value_from_object(obj)]
    return data


def _tampered(obj: db.Model, data: dict[str, Any], other_user: User) -> dict[str, Any]:
    """`data` with what an edit of label data would change: every grade, every choice (tier, status,
    kind), the rater, and the notes and reasons."""
    out = dict(data)
    for field in obj._meta.concrete_fields:
        name = field.name
        if name not in out:
            continue
        if name.endswith("grade") and out[name] != "":
            out[name] = str((int(out[name]) + 1) % 4)
        elif field.choices:
            out[name] = next(str(v) for v, _ in field.choices if str(v) != out[name])
        elif name == "rater":
            out[name] = str(other_user.pk)
        elif name in ("note", "reason", "rationale", "quarantine_reason", "text"):
            out[name] = EDITED
    return out


def _with_inlines(
    model_admin: admin.ModelAdmin[Any], request: HttpRequest, obj: db.Model, data: dict[str, Any], other: User
) -> dict[str, Any]:
    """`data` plus, for every inline on the page, each row with its grade changed, the last row deleted and
    one row added: what a tampered change form with inlines would post."""
    out = dict(data)
    for formset_class, _inline in model_admin.get_formsets_with_inlines(request, obj):
        prefix = formset_class.get_default_prefix()
        fk = formset_class.fk
        rows = list(formset_class(instance=obj).get_queryset())
        for i, row in enumerate([*rows, *rows[:1]]):
            values = _tampered(row, _form_data(row), other)
            values.pop(fk.name, None)
            out |= {f"{prefix}-{i}-{k}": v for k, v in values.items()}
            out[f"{prefix}-{i}-{fk.name}"] = str(obj.pk)
            if i < len(rows):
                out[f"{prefix}-{i}-id"] = str(row.pk)
        if rows:
            out[f"{prefix}-{len(rows) - 1}-DELETE"] = "on"
        out |= {
            f"{prefix}-TOTAL_FORMS": str(len(rows) + min(len(rows), 1)),
            f"{prefix}-INITIAL_FORMS": str(len(rows)),
            f"{prefix}-MIN_NUM_FORMS": "0",
            f"{prefix}-MAX_NUM_FORMS": "1000",
        }
    return out


@pytest.fixture
def root(db: None) -> User:
    return factories.UserFactory.create(username="root", is_staff=True, is_superuser=True)


@pytest.fixture
def as_root(client: Client, root: User) -> Client:
    client.force_login(root)
    return client


@pytest.fixture
def world(
    assignment: Assignment, alice: User, bob: User, rita: User, root: User
) -> dict[type[db.Model], db.Model]:
    """One real object of every labeling model, all on alice's query: its first document carries a frozen 3,
    alice graded it 2 through the grading service (so it has an event), proposed that as a new label,
    and a reviewer adjudicated it; she marked the second document can't judge."""
    query = assignment.query
    golden_set = query.golden_set
    candidate = query.candidates.order_by("best_rank")[0]
    document = candidate.document
    frozen = document.frozen_labels.get()
    result = services.judgment_submit(
        assignment_id=assignment.pk, rater=alice, candidate_id=candidate.pk, grade=2, note="outdated"
    )
    assert result.judgment_id is not None
    judgment = models.Judgment.objects.get(pk=result.judgment_id)
    services.query_move_tier(query=query, tier="challenge", by=rita, reason="hard for every system")
    round_ = models.CalibrationRound.objects.create(golden_set=golden_set, name="march", created_by=rita)
    judge = models.Judge.objects.create(
        golden_set=golden_set, rubric=golden_set.rubric, name="j", base_url="http://127.0.0.1:9/v1", model="m"
    )
    job = models.JudgeJob.objects.create(judge=judge, total=1, done=1)
    answer = models.JudgeAnswer.objects.create(
        model="m", prompt_hash="p" * 64, query_hash="q" * 64, document_hash="d" * 64, grade=2, job=job
    )
    objects: list[db.Model] = [
        golden_set.rubric,
        golden_set,
        query,
        document,
        candidate,
        frozen,
        assignment,
        judgment,
        judgment.events.get(),
        models.CantJudgeMark.objects.create(
            assignment=assignment,
            document=query.candidates.order_by("best_rank")[1].document,
            reason="broken",
            note="404 page",
        ),
        query.tier_moves.get(),
        factories.AdjudicationFactory.create(query=query, document=document, reviewer=rita, grade=2),
        models.DisputeCheck.objects.create(query=query, fingerprint="f" * 64, disputed=False),
        models.GoldItem.objects.create(query=query, document=document, grade=3, by=rita),
        models.LabelProposal.objects.create(
            query=query,
            document=document,
            judgment=judgment,
            rater=alice,
            from_grade=frozen.grade,
            from_version=frozen.version,
            to_grade=judgment.grade,
            note=judgment.note,
        ),
        round_,
        models.SecretGrant.objects.create(
            golden_set=golden_set, variable="ASSAY_SECRET_WALK", granted_by=root
        ),
        models.SsoIdentity.objects.create(user=bob, issuer="https://id.example.org", subject="bob-1"),
        judge,
        job,
        answer,
        models.JudgeJobItem.objects.create(
            job=job, index=0, query=query, document=document, done=True, answer=answer
        ),
        models.JudgeLabel.objects.create(judge=judge, query=query, document=document, grade=2, job=job),
        models.JudgeQualification.objects.create(
            judge=judge, rationale="kappa 0.81 on 120 items", bar=0.7, by=rita
        ),
    ]
    return {type(obj): obj for obj in objects}


class _Undo(Exception):
    pass


@contextlib.contextmanager
def _rolled_back() -> Iterator[None]:
    """Undo whatever the block wrote (a savepoint: the test client shares the test's connection)."""
    with contextlib.suppress(_Undo), transaction.atomic():
        yield
        raise _Undo


def _post(client: Client, url: str, data: dict[str, Any]) -> int:
    status = client.post(url, data).status_code
    assert status != 500, url
    return status


def test_the_read_only_models_refuse_add_change_and_delete_to_superusers(root: User) -> None:
    request = RequestFactory().get("/admin/")
    request.user = root
    registered = dict(_labeling_admins())
    assert set(registered) >= READ_ONLY
    for model, model_admin in registered.items():
        if model in READ_ONLY:
            assert model_admin.has_view_permission(request), model
            assert not model_admin.has_add_permission(request), model
            assert not model_admin.has_change_permission(request), model
            assert not model_admin.has_delete_permission(request), model
            assert "delete_selected" not in model_admin.get_actions(request), model
        for inline in model_admin.get_inline_instances(request):
            assert inline.model in READ_ONLY, inline
            assert inline.has_view_permission(request)
            assert not inline.has_add_permission(request, None), inline
            assert not inline.has_change_permission(request), inline
            assert not inline.has_delete_permission(request), inline


def test_every_labeling_model_is_registered_so_a_cascading_delete_is_checked_against_it() -> None:
    # Django's delete view and delete_selected ask only registered models' admins whether a cascaded row
    # may go (get_deleted_objects' perms_needed): an unregistered record model would be deleted silently.
    assert set(apps.get_app_config("labeling").get_models()) == {m for m, _ in _labeling_admins()}


def test_the_admin_walk_writes_no_label_data_and_never_answers_500(
    as_root: Client, world: dict[type[db.Model], db.Model], root: User, bob: User
) -> None:
    """Every page and form of every registered labeling model, as a superuser, with a real object each."""
    request = RequestFactory().get("/admin/")
    request.user = root
    registered = _labeling_admins()
    assert {m for m, _ in registered} <= set(world), "give the walk an object of every registered model"
    before = _snapshot()
    counts = {m: m._default_manager.count() for m in LABEL_DATA}
    assert all(counts.values())
    query = world[models.Query]
    assert isinstance(query, models.Query)
    placement = (query.tier, query.status, query.quarantine_reason)
    for model, model_admin in registered:
        obj = world[model]
        name = model._meta.label
        read_only = model in READ_ONLY
        listing = as_root.get(_url(model, "changelist"))
        assert listing.status_code == 200, name
        assert _url(model, "change", obj.pk) in listing.content.decode(), name
        plain = _form_data(obj)
        assert as_root.get(_url(model, "add")).status_code == (403 if read_only else 200), name
        assert _post(as_root, _url(model, "add"), plain) in ((403,) if read_only else (200, 302)), name
        assert as_root.get(_url(model, "change", obj.pk)).status_code == 200, name
        tampered = _with_inlines(model_admin, request, obj, _tampered(obj, plain, bob), bob)
        assert _post(as_root, _url(model, "change", obj.pk), tampered) in (
            (403,) if read_only else (200, 302)
        ), name
        # Each deletion attempt starts from the same rows: an allowed one (a bare candidate) is undone.
        with _rolled_back():
            assert as_root.get(_url(model, "delete", obj.pk)).status_code == (403 if read_only else 200)
            deleted = _post(as_root, _url(model, "delete", obj.pk), {"post": "yes"})
            assert deleted in ((403,) if read_only else (302, 403)), name
            assert model._default_manager.filter(pk=obj.pk).exists() == (deleted == 403), name
            assert _snapshot() == before, name
        with _rolled_back():
            # The changelist's Go button, then the confirmation page's "Yes, I'm sure". A model nobody may
            # delete from offers no action at all: the changelist ignores the POST and shows itself.
            selected = {"action": "delete_selected", "_selected_action": [str(obj.pk)]}
            assert _post(as_root, _url(model, "changelist"), {**selected, "index": "0"}) == 200, name
            confirmed = _post(as_root, _url(model, "changelist"), {**selected, "post": "yes"})
            assert confirmed in ((200,) if read_only else (302, 403)), name
            assert model._default_manager.filter(pk=obj.pk).exists() == (confirmed != 302), name
            assert _snapshot() == before, name
    assert {m: m._default_manager.count() for m in LABEL_DATA} == counts
    assert _snapshot() == before
    query.refresh_from_db()
    assert (query.tier, query.status, query.quarantine_reason) == placement
    assert query.text == EDITED  # the query itself stays editable: the change form did save


def test_a_superuser_cannot_change_a_grade_in_the_admin(
    as_root: Client, world: dict[type[db.Model], db.Model], bob: User
) -> None:
    judgment = world[models.Judgment]
    assert isinstance(judgment, models.Judgment)
    data = {**_form_data(judgment), "grade": "3"}
    response = as_root.post(_url(models.Judgment, "change", judgment.pk), data)
    assert response.status_code == 403
    judgment.refresh_from_db()
    assert judgment.grade == 2
    assert judgment.events.count() == 1


def test_a_superuser_cannot_change_a_grade_through_the_assignment_inline(
    as_root: Client, world: dict[type[db.Model], db.Model], root: User, bob: User
) -> None:
    assignment = world[models.Assignment]
    judgment = world[models.Judgment]
    request = RequestFactory().get("/admin/")
    request.user = root
    data = _with_inlines(admin.site.get_model_admin(models.Assignment), request, assignment, {}, bob)
    assert data["judgments-0-grade"] == "3"
    data |= _form_data(assignment)
    response = as_root.post(_url(models.Assignment, "change", assignment.pk), data)
    assert response.status_code == 403
    assert models.Judgment.objects.get(pk=judgment.pk).grade == 2


def test_a_superuser_cannot_delete_a_judgment_in_the_admin(
    as_root: Client, world: dict[type[db.Model], db.Model]
) -> None:
    judgment = world[models.Judgment]
    before = _snapshot()
    assert as_root.get(_url(models.Judgment, "delete", judgment.pk)).status_code == 403
    assert as_root.post(_url(models.Judgment, "delete", judgment.pk), {"post": "yes"}).status_code == 403
    action = {"action": "delete_selected", "_selected_action": [str(judgment.pk)], "post": "yes"}
    assert as_root.post(_url(models.Judgment, "changelist"), action).status_code == 200
    assert _snapshot() == before


def test_adding_a_judgment_event_in_the_admin_is_refused_not_a_500(
    as_root: Client, world: dict[type[db.Model], db.Model]
) -> None:
    event = world[models.JudgmentEvent]
    assert as_root.get(_url(models.JudgmentEvent, "add")).status_code == 403
    response = as_root.post(_url(models.JudgmentEvent, "add"), {**_form_data(event), "new_grade": "0"})
    assert response.status_code == 403
    assert models.JudgmentEvent.objects.count() == 1


@pytest.mark.parametrize("holder", [models.GoldenSet, models.Query, models.Document, models.Assignment])
def test_deleting_what_holds_judgments_through_the_admin_is_refused_with_nothing_deleted(
    holder: type[db.Model], as_root: Client, world: dict[type[db.Model], db.Model]
) -> None:
    obj = world[holder]
    counts = {m: m._default_manager.count() for m, _ in _labeling_admins()}
    before = _snapshot()
    page = as_root.get(_url(holder, "delete", obj.pk))
    if holder is models.Assignment:
        assert page.status_code == 403  # read-only itself
    else:
        assert page.status_code == 200
        assert "permission to delete the following types of objects" in page.content.decode()
        assert "judgment" in {str(p) for p in page.context["perms_lacking"]}
    assert as_root.post(_url(holder, "delete", obj.pk), {"post": "yes"}).status_code == 403
    action = {"action": "delete_selected", "_selected_action": [str(obj.pk)], "post": "yes"}
    assert as_root.post(_url(holder, "changelist"), action).status_code == (
        200 if holder is models.Assignment else 403
    )
    assert holder._default_manager.filter(pk=obj.pk).exists()
    assert {m: m._default_manager.count() for m, _ in _labeling_admins()} == counts
    assert _snapshot() == before


def test_deleting_a_query_without_label_data_through_the_admin_still_works(
    as_root: Client, golden_set: GoldenSet
) -> None:
    query = factories.pooled_query(golden_set, 2)
    response = as_root.post(_url(models.Query, "delete", query.pk), {"post": "yes"})
    assert response.status_code == 302
    assert not models.Query.objects.filter(pk=query.pk).exists()
    assert not models.Candidate.objects.filter(query_id=query.pk).exists()


def test_a_query_tier_and_status_change_only_through_the_services(
    as_root: Client, golden_set: GoldenSet
) -> None:
    added = as_root.post(
        _url(models.Query, "add"),
        {
            "golden_set": str(golden_set.pk),
            "external_id": "q-new",
            "text": "cancel my plan",
            "locale": "en-US",
            "filters": "{}",
            "weight": "1.0",
            "tags": "[]",
            "tier": "shadow",
            "status": "retired",
            "quarantine_reason": "typed in the admin",
        },
    )
    assert added.status_code == 302
    query = models.Query.objects.get(external_id="q-new")
    assert (query.tier, query.status, query.quarantine_reason) == ("core", "active", "")
    changed = as_root.post(
        _url(models.Query, "change", query.pk),
        {**_form_data(query), "text": "cancel my annual plan", "tier": "challenge", "status": "retired"},
    )
    assert changed.status_code == 302
    query.refresh_from_db()
    assert (query.text, query.tier, query.status) == ("cancel my annual plan", "core", "active")
    assert not query.tier_moves.exists()


def test_label_proposals_and_calibration_rounds_are_listed_read_only(
    as_root: Client, world: dict[type[db.Model], db.Model]
) -> None:
    proposal = world[models.LabelProposal]
    page = as_root.get(_url(models.LabelProposal, "changelist")).content.decode()
    assert "pending" in page and "alice" in page
    detail = as_root.get(_url(models.LabelProposal, "change", proposal.pk)).content.decode()
    assert "outdated" in detail and 'name="status"' not in detail
    rounds = as_root.get(_url(models.CalibrationRound, "changelist")).content.decode()
    assert "march" in rounds


def test_the_record_pages_show_the_history(as_root: Client, world: dict[type[db.Model], db.Model]) -> None:
    judgment = world[models.Judgment]
    page = as_root.get(_url(models.Judgment, "change", judgment.pk)).content.decode()
    assert "outdated" in page  # the event's note, in the read-only inline
    assert 'name="grade"' not in page and 'name="events-TOTAL_FORMS"' in page
    assignment = as_root.get(_url(models.Assignment, "change", world[models.Assignment].pk))
    body = assignment.content.decode()
    assert 'name="rater"' not in body and 'name="judgments-0-grade"' not in body
    assert 'name="judgments-MAX_NUM_FORMS" value="0"' in body  # no row can be added


@pytest.fixture
def auditor(db: None) -> User:
    """Staff holding every permission on label data, including the add, change and delete ones."""
    user = factories.UserFactory.create(username="auditor", is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(content_type__app_label="labeling"))
    return user


def test_staff_with_permissions_see_label_data_but_cannot_edit_it(
    client: Client, auditor: User, world: dict[type[db.Model], db.Model]
) -> None:
    client.force_login(auditor)
    before = _snapshot()
    for model in READ_ONLY:
        obj = world[model]
        assert client.get(_url(model, "changelist")).status_code == 200, model
        assert client.get(_url(model, "change", obj.pk)).status_code == 200, model
        assert client.post(_url(model, "change", obj.pk), _form_data(obj)).status_code == 403, model
        assert client.get(_url(model, "add")).status_code == 403, model
        assert client.post(_url(model, "delete", obj.pk), {"post": "yes"}).status_code == 403, model
    assert _snapshot() == before


def test_decision_records_are_listed_read_only(golden_set: GoldenSet, rita: User, client: Client) -> None:
    query = golden_set.queries.create(external_id="q-1", text="refund")
    services.query_move_tier(query=query, tier="shadow", by=rita, reason="ambiguous")
    root = User.objects.create_superuser("root", "root@example.org", "pw")
    client.force_login(root)
    for model in ("tiermove", "adjudication", "disputecheck", "golditem", "labelproposal"):
        assert client.get(f"/admin/labeling/{model}/").status_code == 200, model
    page = client.get("/admin/labeling/tiermove/").content.decode()
    assert "ambiguous" in page
    assert client.get("/admin/labeling/tiermove/add/").status_code == 403
    move = query.tier_moves.get()
    response = client.post(f"/admin/labeling/tiermove/{move.pk}/change/", {"reason": "rewritten"})
    assert response.status_code == 403
    assert query.tier_moves.get().reason == "ambiguous"


def test_the_admins_set_page_refuses_a_reviewer_without_the_role(
    golden_set: GoldenSet, rita: User, charlie: User
) -> None:
    client = Client()
    client.force_login(User.objects.create_superuser("root", "root@example.org", "pw"))
    url = reverse("admin:labeling_goldenset_change", args=[golden_set.pk])
    form = client.get(url).context["adminform"].form
    data = {
        name: value
        for name, value in form.initial.items()
        if value is not None and name not in ("reviewers", "raters", "locales")
    }
    raters = [u.pk for u in golden_set.raters.all()]
    data |= {"locales": json.dumps(golden_set.locales), "raters": raters, "_save": "Save"}

    refused = client.post(url, {**data, "reviewers": [rita.pk, charlie.pk]})

    assert refused.status_code == 200  # the form again, with the error
    assert "charlie is not in the reviewers group" in refused.content.decode()
    assert list(golden_set.reviewers.all()) == [rita]
    saved = client.post(url, {**data, "reviewers": [rita.pk]})
    assert saved.status_code == 302
    assert sorted(u.pk for u in golden_set.raters.all()) == sorted(raters)


def test_a_refusal_in_the_admin_logs_one_line_without_a_traceback(
    as_root: Client, world: dict[type[db.Model], db.Model], caplog: pytest.LogCaptureFixture
) -> None:
    """The 403 is the admin working as meant: `make run`'s terminal gets its line, not a traceback
    (config/settings.py, LOGGING)."""
    judgment = world[models.Judgment]
    with caplog.at_level(logging.WARNING, logger="django.request"):
        response = as_root.post(_url(models.Judgment, "change", judgment.pk), _form_data(judgment))
        deleted = as_root.post(_url(models.Judgment, "delete", judgment.pk), {"post": "yes"})
    assert (response.status_code, deleted.status_code) == (403, 403)
    logged = [r for r in caplog.records if r.name == "django.request"]
    assert [r.getMessage().split(":")[0] for r in logged] == ["Forbidden (Permission denied)"] * 2
    assert all(r.exc_info is None for r in logged) and "Traceback" not in caplog.text
