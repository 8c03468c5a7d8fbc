"""Refuse changes to frozen golden versions in the database itself, so raw SQL cannot change them either.

PostgreSQL: UPDATE and DELETE raise. TRUNCATE (what test flushes and `manage.py flush` use) is not a row
operation and still works. SQLite (`make run`): UPDATE raises; DELETE is left to the ORM's refusal because
SQLite's flush deletes row by row. A later migration that must rewrite these rows (a backfill) has to drop
the trigger first and recreate it after, on purpose and visibly. On SQLite a table rebuild (an AlterField)
drops the trigger with the old table: recreate it in the same migration.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations

TABLE = "golden_io_goldenversion"

PG_CREATE = f"""
CREATE OR REPLACE FUNCTION golden_version_immutable() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'golden versions are immutable: % on {TABLE} is refused', TG_OP
        USING ERRCODE = 'restrict_violation';
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER golden_version_immutable BEFORE UPDATE OR DELETE ON {TABLE}
    FOR EACH ROW EXECUTE FUNCTION golden_version_immutable();
"""
PG_DROP = f"""
DROP TRIGGER IF EXISTS golden_version_immutable ON {TABLE};
DROP FUNCTION IF EXISTS golden_version_immutable();
"""
SQLITE_CREATE = f"""
CREATE TRIGGER golden_version_immutable BEFORE UPDATE ON {TABLE}
BEGIN
    SELECT RAISE(ABORT, 'golden versions are immutable: UPDATE on {TABLE} is refused');
END;
"""
SQLITE_DROP = "DROP TRIGGER IF EXISTS golden_version_immutable;"


def _run(sql: dict[str, str]) -> Any:
    def run(apps: Any, schema_editor: Any) -> None:
        statement = sql.get(schema_editor.connection.vendor)
        if statement:
            # params=None: no placeholder interpolation, the PL/pgSQL body uses a literal '%'.
            schema_editor.execute(statement, params=None)

    return run


class Migration(migrations.Migration):
    dependencies = [("golden_io", "0001_initial")]

    operations = [
        migrations.RunPython(
            _run({"postgresql": PG_CREATE, "sqlite": SQLITE_CREATE}),
            _run({"postgresql": PG_DROP, "sqlite": SQLITE_DROP}),
        ),
    ]
