"""Statements over many rows whose per-row work is done before the transaction that runs them
(docs/labeling.md, "Imports"): rows prepared as the database stores them (`prepared`), and on
PostgreSQL already turned into COPY's text, so that inserting them (`prepared_insert`) sends bytes the
server reads; updates of many rows by id (`prepared_update`); ids taken from a table's sequence before
the transaction (`ids_reserved`), so that rows referring to rows not inserted yet are final when
prepared; and lists of ids or (id, id) pairs passed to a statement as one parameter (`id_list`,
`pair_rows`), read by the database (no statement of 50,000 placeholders for the client to build and the
server to parse). PostgreSQL and SQLite, the databases Assay runs on. Part of `golden_io.services`."""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import connection, connections, models, transaction
from django.db.models import Field, Model
from django.db.models.expressions import RawSQL


@dataclass(slots=True)
class Prepared:
    """Rows of one model as the database stores them (each value converted by its field), prepared
    before the transaction that inserts them (`prepared_insert`); on PostgreSQL also as COPY's text."""

    model: type[Model]
    columns: list[str]
    rows: list[list[Any]]
    copy: bytes = field(default=b"", repr=False)

    def __len__(self) -> int:
        return len(self.rows)

    def pairs(self) -> list[tuple[int, int]]:
        """(query pk, document pk) of each row."""
        q, d = self.columns.index("query_id"), self.columns.index("document_id")
        return [(row[q], row[d]) for row in self.rows]


def prepared(model: type[Model], objects: Sequence[Model], *, with_pk: bool = False) -> Prepared:
    """`objects` (new rows of `model`) prepared for `prepared_insert`: with their pks when `with_pk`
    (reserved by `ids_reserved`, or a row's own when it is written again), else the database gives them."""
    fields = [f for f in model._meta.concrete_fields if with_pk or not f.primary_key]
    values = [_db_value(f, inserted=True) for f in fields]
    rows = [[value(obj) for value in values] for obj in objects]
    rows_ = Prepared(model, [str(f.column) for f in fields], rows)
    if connection.vendor == "postgresql" and rows:
        rows_.copy = _copy_text(rows)
    return rows_


# Django's own fields whose value of these Python types is stored as it is (`get_db_prep_save` returns it
# unchanged): converting each value of many rows through the field is most of the time of preparing them.
_STORED_AS_IS: dict[type[Field[Any, Any]], tuple[type, ...]] = {
    **dict.fromkeys(
        (
            models.AutoField,
            models.BigAutoField,
            models.IntegerField,
            models.BigIntegerField,
            models.SmallIntegerField,
            models.PositiveIntegerField,
            models.PositiveBigIntegerField,
            models.PositiveSmallIntegerField,
            models.ForeignKey,
        ),
        (int, type(None)),
    ),
    **dict.fromkeys((models.CharField, models.TextField), (str, type(None))),
    models.BooleanField: (bool, type(None)),
    models.FloatField: (float, type(None)),
}


def _db_value(f: Field[Any, Any], *, inserted: bool) -> Callable[[Model], Any]:
    """The function giving a row's value of field `f` as the database stores it: the field's own
    conversion (`pre_save` for a row `inserted`, as `save()` does, then `get_db_prep_save`), but for a
    value Django would store as it is."""
    db = connections[connection.alias]  # the connection itself, not its per-thread proxy: read once
    as_is = _STORED_AS_IS.get(type(f), ())
    attname = f.attname
    if inserted and type(f).pre_save is not Field.pre_save:  # a value set as it is saved (auto_now_add)
        return lambda obj: f.get_db_prep_save(f.pre_save(obj, True), db)

    def value(obj: Model) -> Any:
        got = getattr(obj, attname)
        return got if type(got) in as_is else f.get_db_prep_save(got, db)

    return value


def _copy_text(rows: list[list[Any]]) -> bytes:
    """The rows as COPY FROM STDIN reads them (its text format), made by psycopg's own formatter with the
    connection's adapters, without sending anything."""
    from psycopg import Copy
    from psycopg.copy import FileWriter

    buffer = io.BytesIO()
    with connection.cursor() as cursor, Copy(cursor.cursor, writer=FileWriter(buffer)) as copy:
        for row in rows:
            copy.write_row(row)
    return buffer.getvalue()


def prepared_insert(rows: Prepared) -> None:
    """Insert prepared rows: on PostgreSQL one COPY of the text made with them, else one parameterised
    INSERT run for every row (SQLite). Either takes a fraction of the time of bulk_create for the same
    rows, which converts each value (in Python, per field and row) while it builds the statement."""
    if not rows.rows:
        return
    table = connection.ops.quote_name(rows.model._meta.db_table)
    columns = ", ".join(connection.ops.quote_name(column) for column in rows.columns)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # psycopg's own cursor: its errors made Django's, as every other statement's are.
            with (
                connection.wrap_database_errors,
                cursor.cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy,
            ):
                copy.write(rows.copy)
        else:
            values = ", ".join(["%s"] * len(rows.columns))
            cursor.executemany(f"INSERT INTO {table} ({columns}) VALUES ({values})", rows.rows)  # noqa: S608


@dataclass(slots=True)
class PreparedUpdate:
    """New values of some columns of rows of one model, by pk, converted by their fields
    (`update_prepared`), for `prepared_update`."""

    model: type[Model]
    columns: list[str]
    rows: list[list[Any]]  # the values in `columns`' order, then the pk


def update_prepared(model: type[Model], names: Sequence[str], rows: Sequence[Model]) -> PreparedUpdate:
    """The values of the fields `names` of `rows` (instances holding their new values), as `prepared`
    converts them, for one UPDATE by pk run for every row (`prepared_update`)."""
    concrete = {f.name: f for f in model._meta.concrete_fields}
    fields = [concrete[name] for name in names]
    values = [_db_value(f, inserted=False) for f in fields]
    return PreparedUpdate(
        model, [str(f.column) for f in fields], [[value(row) for value in values] + [row.pk] for row in rows]
    )


def prepared_update(update: PreparedUpdate) -> None:
    """Run one parameterised UPDATE by pk for every row (a pipeline of them on PostgreSQL): each row's
    values were converted before, unlike bulk_update's CASE expression of every row built in Python."""
    if not update.rows:
        return
    quote = connection.ops.quote_name
    table = quote(update.model._meta.db_table)
    sets = ", ".join(f"{quote(column)} = %s" for column in update.columns)
    pk = quote(pk_column(update.model))
    with connection.cursor() as cursor:
        cursor.executemany(f"UPDATE {table} SET {sets} WHERE {pk} = %s", update.rows)  # noqa: S608


def pk_column(model: type[Model]) -> str:
    """The column of `model`'s primary key."""
    pk = model._meta.pk
    assert pk is not None and pk.column is not None
    return str(pk.column)


def ids_reserved(model: type[Model], n: int) -> list[int]:
    """`n` ids for new rows of `model`, which the database will give no other row, taken before the
    transaction that inserts them: the rows referring to them are prepared final, and an import not
    written after all leaves only a gap in the ids. PostgreSQL: the table's sequence, outside any
    transaction (a sequence never goes back). SQLite: its AUTOINCREMENT counter (`sqlite_sequence`, which
    the database never goes below), raised by `n` in a transaction of its own, a moment's write."""
    if n <= 0:
        return []
    table, pk = model._meta.db_table, pk_column(model)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT nextval(pg_get_serial_sequence(%s, %s)) FROM generate_series(1, %s)", [table, pk, n]
            )
            return sorted(row[0] for row in cursor.fetchall())
        with transaction.atomic():
            cursor.execute(
                f"SELECT MAX(COALESCE((SELECT seq FROM sqlite_sequence WHERE name = %s), 0),"  # noqa: S608
                f" COALESCE((SELECT MAX({connection.ops.quote_name(pk)}) FROM"
                f" {connection.ops.quote_name(table)}), 0))",
                [table],
            )
            last = int(cursor.fetchone()[0])
            cursor.execute("DELETE FROM sqlite_sequence WHERE name = %s", [table])
            cursor.execute("INSERT INTO sqlite_sequence (name, seq) VALUES (%s, %s)", [table, last + n])
    return list(range(last + 1, last + n + 1))


def ids_sql(ids: Iterable[int]) -> tuple[str, list[Any]]:
    """The ids as a subquery of one column and its one parameter, for `x IN (<sql>)` in a raw statement:
    the database reads the list (PostgreSQL an array, SQLite a JSON array)."""
    values = [int(i) for i in ids]
    if connection.vendor == "postgresql":
        return "SELECT unnest(%s::bigint[])", ["{" + ",".join(map(str, values)) + "}"]
    return "SELECT value FROM json_each(%s)", [json.dumps(values)]


def id_list(ids: Iterable[int]) -> RawSQL:
    """`ids_sql` for a queryset: `field__in=id_list(...)` (the SQL is a constant, the ids a parameter)."""
    return RawSQL(*ids_sql(ids))  # noqa: S611


def pair_rows(model: type[Model], columns: tuple[str, str], pairs: Iterable[tuple[int, int]]) -> RawSQL:
    """The pks of `model`'s rows whose two `columns` hold one of `pairs`, as a subquery for
    `pk__in=pair_rows(...)`: the database reads the list (PostgreSQL two arrays, SQLite a JSON array of
    pairs) and finds each pair by its index."""
    values = [(int(a), int(b)) for a, b in pairs]
    quote = connection.ops.quote_name
    table, pk = quote(model._meta.db_table), quote(pk_column(model))
    a, b = (quote(column) for column in columns)
    if connection.vendor == "postgresql":
        arrays = ["{" + ",".join(str(pair[i]) for pair in values) + "}" for i in (0, 1)]
        sql = (
            f"SELECT t.{pk} FROM unnest(%s::bigint[], %s::bigint[]) AS p(a, b)"  # noqa: S608
            f" JOIN {table} t ON t.{a} = p.a AND t.{b} = p.b"
        )
        return RawSQL(sql, arrays)  # noqa: S611
    sql = (
        f"SELECT t.{pk} FROM json_each(%s) AS p JOIN {table} t"  # noqa: S608
        f" ON t.{a} = json_extract(p.value, '$[0]') AND t.{b} = json_extract(p.value, '$[1]')"
    )
    return RawSQL(sql, [json.dumps(values)])  # noqa: S611


def json_text(text: str) -> RawSQL:
    """A JSON column's value written from its text, serialised before (`Model.objects.update(f=...)`):
    nothing left for the driver to convert."""
    return RawSQL("%s::jsonb" if connection.vendor == "postgresql" else "%s", [text])  # noqa: S611
