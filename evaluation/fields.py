"""A JSON column for documents of megabytes: a run's report and gate, a re-scored baseline's report (about
50 MB at 100,000 queries, docs/benchmarks.md). Django's `JSONField` writes them with `json.dumps`, reads
them with `json.loads`, and on PostgreSQL stores them as `jsonb`, which the server parses into its binary
form on every write and prints back to text on every read; finalize wrote such a report in seconds and
read its baseline's in about one.

`LargeJSONField` is the same field to every caller (the same Python values in and out, `None` as SQL
NULL) with these differences:

- written with orjson, several times faster than `json.dumps`; what orjson refuses (integers beyond 64
  bits, float subclasses such as numpy's, lone surrogates) is written by `json.dumps` as before, and
  dict keys that are not strings as `json.dumps` writes them. A float that is not finite is written as
  null (orjson's way); `json.dumps` wrote NaN, which neither database accepted as JSON;
- read with msgspec, which keeps integers of any size (orjson reads those beyond 64 bits as floats),
  with the collector paused while the document's many small objects are built (`assay.memory`);
  what msgspec refuses (a lone surrogate's escape that `json.dumps` wrote) is read by `json.loads`;
- on PostgreSQL the column is `json`: the text as written, checked but not converted, compressed
  with lz4 where the server has it (the migration sets it). psycopg would parse a `json` value itself
  with `json.loads`; `json_text_loader` makes it hand the text over, parsed once here. jsonb's own
  lookups (`=`, `contains`, `has_key`) do not apply to `json`: these columns are queried by `isnull`
  only (a key's value, `report__k`, works too). A value reads back as written: keys in their
  order (jsonb ordered them by length), a float as a float (jsonb printed 1e+16 as an integer), and
  the NUL character and lone surrogates jsonb refused are kept (as SQLite always kept them).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import msgspec
import orjson
from django.db import connections as databases
from django.db import models, router
from django.db.models.fields.json import KeyTransform
from psycopg import Cursor, sql
from psycopg.abc import Buffer
from psycopg.adapt import Loader
from psycopg.types.json import Json

from assay.memory import gc_paused

# Dataclasses and datetimes are refused, as json.dumps refuses them, rather than written orjson's way.
_ORJSON = orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME


def json_bytes(value: Any) -> bytes | str:
    """`value` as JSON text: orjson's compact form, or `json.dumps`' for what orjson refuses."""
    try:
        return orjson.dumps(value, option=_ORJSON)
    except TypeError:
        pass
    try:  # keys that are numbers, booleans or None, written as json.dumps writes them ("1", "true")
        return orjson.dumps(value, option=_ORJSON | orjson.OPT_NON_STR_KEYS)
    except TypeError:
        return json.dumps(value)


def json_value(text: bytes | str) -> Any:
    """The value of JSON `text`, as `json.loads` reads it (integers of any size, floats to the bit)."""
    try:
        return msgspec.json.decode(text)
    except msgspec.DecodeError:  # what json.dumps wrote and msgspec refuses: a lone surrogate's escape
        return json.loads(text)


def _as_written(text: bytes | str) -> bytes | str:
    return text


class LargeJSONField(models.JSONField):
    """`models.JSONField` for large documents: see the module docstring. No custom encoder or decoder."""

    def db_type(self, connection: Any) -> str | None:
        if connection.vendor == "postgresql":
            return "json"
        return super().db_type(connection)

    def get_db_prep_value(self, value: Any, connection: Any, prepared: bool = False) -> Any:
        if not prepared:
            value = self.get_prep_value(value)
        text = json_bytes(value)
        if connection.vendor == "postgresql":
            # Sent as `json`: the server checks the text and keeps it (as `jsonb` it would convert it).
            return Json(text, dumps=_as_written)
        return text.decode() if isinstance(text, bytes) else text

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Any:
        if isinstance(expression, KeyTransform):  # one key's value: read as Django reads it
            text = value.decode() if isinstance(value, bytes) else value
            return super().from_db_value(text, expression, connection)
        if not isinstance(value, bytes | str):
            return value  # None (SQL NULL)
        with gc_paused():  # tens of megabytes of small objects, none in a cycle
            return json_value(value)


class JsonText(Loader):
    """Loads a PostgreSQL `json` value as its text (bytes), for `LargeJSONField` to parse."""

    def load(self, data: Buffer) -> bytes:
        return bytes(data)


def json_text_loader(*, connection: Any, **_: Any) -> None:
    """A `connection_created` receiver: on PostgreSQL, values of type `json` come back as their text,
    which `LargeJSONField` parses, instead of parsed by psycopg with `json.loads`. Django does the same
    for `jsonb` (a text loader); nothing else here reads the `json` type."""
    if connection.vendor == "postgresql":
        connection.connection.adapters.register_loader("json", JsonText)


def large_json_write(instance: models.Model, names: Sequence[str]) -> None:
    """Write the fields `names` of a saved `instance` (its `LargeJSONField`s) as they are now.

    On PostgreSQL Django binds every parameter into the statement's text on the client: psycopg quotes a
    100,000-query report (about 42 MB) into it and the server scans it as a literal. Sent as a parameter
    instead, through a psycopg cursor of its own on the same connection (so in the caller's transaction),
    the report and gate of finalize are written in 0.36 s instead of 0.65 s (docs/benchmarks.md). Elsewhere
    (SQLite) an ordinary update."""
    model = type(instance)
    assert model._meta.pk is not None
    connection = databases[router.db_for_write(model, instance=instance)]
    fields = [field for name in names if isinstance(field := model._meta.get_field(name), LargeJSONField)]
    if len(fields) != len(names):
        raise ValueError(f"large_json_write: not all LargeJSONFields of {model.__name__}: {', '.join(names)}")
    if connection.vendor != "postgresql":
        model._default_manager.filter(pk=instance.pk).update(
            **{f.name: getattr(instance, f.attname) for f in fields}
        )
        return
    assignments = [sql.SQL("{} = %s").format(sql.Identifier(str(f.column))) for f in fields]
    statement = sql.SQL("UPDATE {table} SET {values} WHERE {pk} = %s").format(
        table=sql.Identifier(model._meta.db_table),
        values=sql.SQL(", ").join(assignments),
        pk=sql.Identifier(str(model._meta.pk.column)),
    )
    values = [f.get_db_prep_save(getattr(instance, f.attname), connection) for f in fields]
    connection.ensure_connection()
    with Cursor(connection.connection) as cursor:
        cursor.execute(statement, [*values, instance.pk])
