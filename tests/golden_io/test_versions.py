"""GoldenVersion: immutable through every ORM path, the admin and raw SQL; content round-trips."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.db import DatabaseError, connection, transaction
from django.test import Client
from django.urls import reverse

from assay.golden.format import dump_json
from assay.golden.keys import resolve_keys
from assay.golden.model import GoldenQuery, Judgment
from golden_io.models import GoldenVersion, ImmutableVersionError
from golden_io.selectors import live_keys
from labeling.models import Document, GoldenSet
from tests import factories
from tests.support.golden_sets import version_make

pytestmark = pytest.mark.django_db


def _version(
    golden_set: GoldenSet, name: str = "2026-08-01", parent: GoldenVersion | None = None
) -> GoldenVersion:
    query = GoldenQuery(id="q-1", text="refund", judgments=(Judgment("d-1", 3, key="https://h/d-1"),))
    return version_make(golden_set, name, query, parent=parent)


@pytest.fixture
def version(golden_set: GoldenSet) -> GoldenVersion:
    return _version(golden_set)


def test_it_names_itself_set_at_version(version: GoldenVersion) -> None:
    assert str(version) == "help-center@2026-08-01"
    assert version.tag == "golden@2026-08-01"


def test_it_parses_its_stored_bytes(version: GoldenVersion) -> None:
    fresh = GoldenVersion.objects.get(pk=version.pk)  # bytes as the database hands them back

    assert isinstance(fresh.content_bytes, bytes)
    assert fresh.golden().query("q-1").judgments == (Judgment("d-1", 3, key="https://h/d-1"),)
    assert dump_json(fresh.golden()) == fresh.content_bytes


def test_it_refuses_save_on_an_existing_row(version: GoldenVersion) -> None:
    version.notes = "edited"
    with pytest.raises(ImmutableVersionError, match="immutable: saving version '2026-08-01' again"):
        version.save()
    assert GoldenVersion.objects.get(pk=version.pk).notes == ""


def test_it_refuses_delete(version: GoldenVersion) -> None:
    with pytest.raises(ImmutableVersionError, match="deleting version"):
        version.delete()
    assert GoldenVersion.objects.filter(pk=version.pk).exists()


@pytest.mark.parametrize(
    "path",
    [
        lambda qs, v: qs.update(notes="x"),
        lambda qs, v: qs.delete(),
        lambda qs, v: qs.bulk_update([v], ["notes"]),
        lambda qs, v: qs.update_or_create(pk=v.pk, defaults={"notes": "x"}),
        lambda qs, v: qs.select_for_update().filter(pk=v.pk).update(k=3),
    ],
    ids=["update", "delete", "bulk_update", "update_or_create", "select_for_update_update"],
)
def test_it_refuses_queryset_writes(version: GoldenVersion, path) -> None:
    version.notes = "x"
    with pytest.raises(ImmutableVersionError, match="golden versions are immutable"):
        path(GoldenVersion.objects.all(), version)
    fresh = GoldenVersion.objects.get(pk=version.pk)
    assert (fresh.notes, fresh.k) == ("", 10)


def _copy_of(version: GoldenVersion, **fields: object) -> GoldenVersion:
    values = {f.attname: getattr(version, f.attname) for f in GoldenVersion._meta.concrete_fields}
    return GoldenVersion(**(values | fields))


@pytest.mark.parametrize(
    "path",
    [
        lambda v: _copy_of(v, notes="x").save(),  # a new instance carrying the row's pk
        lambda v: _copy_of(v, pk=None, notes="x").save(force_update=True),
        lambda v: _copy_of(v, pk=None, notes="x").save(update_fields=["notes"]),
        lambda v: GoldenVersion.objects.bulk_create(
            [_copy_of(v, pk=None, notes="x")],
            update_conflicts=True,
            unique_fields=["golden_set", "name"],
            update_fields=["notes"],
        ),
        lambda v: GoldenVersion._base_manager.filter(pk=v.pk).update(notes="x"),
        lambda v: GoldenVersion._base_manager.filter(pk=v.pk).delete(),
    ],
    ids=["save_with_existing_pk", "force_update", "update_fields", "upsert", "base_update", "base_delete"],
)
def test_it_refuses_saves_that_would_update_before_reaching_the_database(
    version: GoldenVersion, path
) -> None:
    # The trigger would refuse these too; the ORM refuses first, with the same words on every database.
    with pytest.raises(ImmutableVersionError, match="golden versions are immutable"):
        path(version)
    fresh = GoldenVersion.objects.get(pk=version.pk)
    assert (fresh.notes, fresh.content_bytes) == ("", version.content_bytes)


def test_a_new_version_is_still_inserted(version: GoldenVersion, golden_set: GoldenSet) -> None:
    second = _version(golden_set, "2026-08-02", parent=version)

    assert GoldenVersion.objects.get(pk=second.pk).parent == version
    assert GoldenVersion.objects.bulk_create([_copy_of(second, pk=None, name="2026-08-03")])[0].pk


def test_it_refuses_writes_through_the_related_manager(version: GoldenVersion, golden_set: GoldenSet) -> None:
    with pytest.raises(ImmutableVersionError):
        golden_set.versions.update(notes="x")
    with pytest.raises(ImmutableVersionError):
        golden_set.versions.all().delete()
    assert golden_set.versions.get().notes == ""


def test_it_protects_a_version_from_cascades(version: GoldenVersion, golden_set: GoldenSet) -> None:
    from django.db.models import ProtectedError

    child = _version(golden_set, "2026-08-02", parent=version)
    with pytest.raises(ProtectedError):
        golden_set.delete()
    assert GoldenVersion.objects.filter(pk__in=[version.pk, child.pk]).count() == 2


def test_it_refuses_raw_sql_updates_in_the_database(version: GoldenVersion) -> None:
    with pytest.raises(DatabaseError, match="immutable"), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("UPDATE golden_io_goldenversion SET notes = 'x' WHERE id = %s", [version.pk])
    if connection.vendor == "postgresql":
        with pytest.raises(DatabaseError, match="immutable"), transaction.atomic(), connection.cursor() as c:
            c.execute("DELETE FROM golden_io_goldenversion WHERE id = %s", [version.pk])
    assert GoldenVersion.objects.get(pk=version.pk).notes == ""


def test_the_admin_shows_a_version_read_only(version: GoldenVersion, client: Client) -> None:
    admin = User.objects.create_superuser("root", "root@example.org", "pw-long-enough-123")
    client.force_login(admin)
    change = reverse("admin:golden_io_goldenversion_change", args=[version.pk])

    page = client.get(change)
    assert page.status_code == 200
    assert b'name="_save"' not in page.content  # no save button: view only
    assert b"2026-08-01" in page.content

    assert client.post(change, {"notes": "edited"}).status_code == 403
    delete = reverse("admin:golden_io_goldenversion_delete", args=[version.pk])
    assert client.post(delete, {"post": "yes"}).status_code == 403
    listing = client.get(reverse("admin:golden_io_goldenversion_changelist"))
    assert b"delete_selected" not in listing.content
    assert client.get(reverse("admin:golden_io_goldenversion_add")).status_code == 403
    assert GoldenVersion.objects.get(pk=version.pk).notes == ""


def test_live_keys_resolve_a_version_after_document_ids_are_renumbered(golden_set: GoldenSet) -> None:
    factories.DocumentFactory.create(golden_set=golden_set, doc_id="d-1", key="https://h/d-1")
    factories.DocumentFactory.create(golden_set=golden_set, doc_id="d-2", key="https://h/d-2")
    factories.DocumentFactory.create(golden_set=golden_set, doc_id="d-9", key=None, url="/d-9")
    version = version_make(
        golden_set,
        "2026-08-01",
        GoldenQuery(
            "q-1",
            "refund",
            (
                Judgment("d-1", 3, key="https://h/d-1"),
                Judgment("d-2", 1, key="https://h/d-2"),
                Judgment("d-9", 2),
            ),
        ),
    )
    # A re-ingest renumbers d-1 (its durable key stays) and drops d-2 altogether.
    Document.objects.filter(golden_set=golden_set, doc_id="d-1").update(doc_id="7001")
    Document.objects.filter(golden_set=golden_set, doc_id="d-2").delete()

    live = live_keys(golden_set)
    resolved = resolve_keys(version.golden(), live)

    assert live == {"https://h/d-1": "7001"}
    assert resolved.golden.query("q-1").grades == {"7001": 3, "d-2": 1, "d-9": 2}
    assert [(u.key, u.doc_id, u.kept) for u in resolved.unresolved] == [("https://h/d-2", "d-2", True)]
    assert version.golden().query("q-1").grades == {"d-1": 3, "d-2": 1, "d-9": 2}  # the version never changes


def test_the_api_offers_no_way_to_change_or_delete_a_version(version: GoldenVersion, client: Client) -> None:
    admin = User.objects.create_superuser("root", "root@example.org", "pw-long-enough-123")
    client.force_login(admin)
    base = f"/api/v1/golden-sets/{version.golden_set.slug}/versions/"
    detail = f"{base}{version.name}/"
    assert client.get(detail).status_code == 200  # the admin can see it: refusals below are not a 404

    for url in (detail, f"{detail}files/json/"):
        for method in ("put", "patch", "delete", "post"):
            response = getattr(client, method)(url, {"notes": "x"}, content_type="application/json")
            assert response.status_code == 405, (method, url, response.status_code)
    for method in ("post", "put", "patch", "delete"):  # nor a version created beside the freeze
        response = getattr(client, method)(base, {"name": "v9"}, content_type="application/json")
        assert response.status_code == 405, (method, base, response.status_code)
    assert list(GoldenVersion.objects.values_list("name", "notes", "sha256")) == [
        (version.name, "", version.sha256)
    ]
