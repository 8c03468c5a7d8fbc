"""The report-sized JSON columns become `LargeJSONField` (evaluation/fields.py). On PostgreSQL they turn
from `jsonb` into `json`, every value kept (each is rewritten as its text), in one rewrite of each table,
compressed with lz4 where the server has it (PostgreSQL 14 and later, built with lz4), as the values
written later will be. On SQLite nothing changes in the database: both fields are text there."""

from django.db import migrations

import evaluation.fields

# Table -> its LargeJSONField columns.
COLUMNS = {
    "evaluation_baselinerescore": ("report",),
    "evaluation_evaluationrun": ("gate", "key_map", "report"),
}


def _lz4(schema_editor):
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(
            "SELECT 'lz4' = ANY(enumvals) FROM pg_settings WHERE name = 'default_toast_compression'"
        )
        row = cursor.fetchone()
    return bool(row and row[0])


def _retype(schema_editor, new_type):
    if schema_editor.connection.vendor != "postgresql":
        return
    quote = schema_editor.quote_name
    lz4 = new_type == "json" and _lz4(schema_editor)
    if lz4:
        # The rewrite compresses with the default method (a column's own does not survive a type change).
        schema_editor.execute("SET LOCAL default_toast_compression = 'lz4'")
    for table, columns in COLUMNS.items():
        # One statement per table: one rewrite of it, however many columns change.
        changes = ", ".join(
            f"ALTER COLUMN {quote(c)} TYPE {new_type} USING {quote(c)}::{new_type}" for c in columns
        )
        schema_editor.execute(f"ALTER TABLE {quote(table)} {changes}")
        if lz4:
            compress = ", ".join(f"ALTER COLUMN {quote(c)} SET COMPRESSION lz4" for c in columns)
            schema_editor.execute(f"ALTER TABLE {quote(table)} {compress}")


def to_json(apps, schema_editor):
    _retype(schema_editor, "json")


def to_jsonb(apps, schema_editor):
    _retype(schema_editor, "jsonb")


class Migration(migrations.Migration):
    dependencies = [
        ("evaluation", "0014_pending_studies"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunPython(to_json, to_jsonb)],
            state_operations=[
                migrations.AlterField(
                    model_name="baselinerescore",
                    name="report",
                    field=evaluation.fields.LargeJSONField(),
                ),
                migrations.AlterField(
                    model_name="evaluationrun",
                    name="gate",
                    field=evaluation.fields.LargeJSONField(blank=True, null=True),
                ),
                migrations.AlterField(
                    model_name="evaluationrun",
                    name="key_map",
                    field=evaluation.fields.LargeJSONField(blank=True, default=dict),
                ),
                migrations.AlterField(
                    model_name="evaluationrun",
                    name="report",
                    field=evaluation.fields.LargeJSONField(blank=True, null=True),
                ),
            ],
        ),
    ]
