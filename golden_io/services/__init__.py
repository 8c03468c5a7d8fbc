"""Writes for golden versions: freeze, golden-file import, export to git, re-judging queue, export
configuration. The freeze and the golden-file import are the only writers of the frozen labels.

The freeze (`golden_version_freeze`) locks the golden set row while it names and writes the version, so
two freezes at once are serialised: the second sees the first as its parent and takes the next name
(or, asked for the same explicit name, is refused). Nothing is half-written: a refused freeze changes
nothing, not even the tiers it would have moved. A freeze whose content is its parent's is refused
(`FreezeUnchanged`): a version is a change, never a new name for the same labels.

One module per part: `freeze`, the golden-file import (`imports`: its steps; `import_planning`: reading and
planning; `import_writing`: the writes) and `import_undo`, `bulk` (statements over many rows, prepared
before their transaction) and `cascade` (deletes that take what refers to the rows, set-based),
`exports` (git), `rejudge`. Every public name is
re-exported here (docs/architecture.md, "Inside each app"), so callers write
`services.golden_version_freeze(...)` whichever module it lives in.
"""

from __future__ import annotations

from golden_io.services.bulk import (
    Prepared,
    PreparedUpdate,
    id_list,
    ids_reserved,
    ids_sql,
    json_text,
    pair_rows,
    pk_column,
    prepared,
    prepared_insert,
    prepared_update,
    update_prepared,
)
from golden_io.services.cascade import cascade_delete
from golden_io.services.exports import (
    ExportConfigError,
    export_author,
    export_message,
    git_export_configure,
    golden_version_export,
)
from golden_io.services.freeze import (
    REJUDGE_SYSTEM,
    FreezeBlocked,
    FreezeError,
    FreezeUnchanged,
    golden_version_freeze,
    not_done_text,
    version_name_next,
)
from golden_io.services.import_planning import (
    DOCUMENT_STATE,
    MERGE,
    QUERY_STATE,
    REPLACE,
    SET_READ,
    SET_STATE,
    FieldChange,
    HeldLabel,
    ImportChanges,
    ImportPlan,
    LabelChange,
    SetState,
    Skipped,
    file_checked,
    file_read,
    import_plan,
    set_state,
    too_large,
)
from golden_io.services.import_undo import (
    UndoPlan,
    UndoRows,
    golden_import_undo,
    import_history,
    import_undo_plan,
    import_undo_unwritten,
    import_undoable,
    undo_notes,
)
from golden_io.services.import_writing import (
    LOCK_WAIT_MS,
    ImportRows,
    QueryWrites,
    Stale,
    chunks,
    import_rows,
    import_write,
    label_state,
    query_writes,
    query_writes_run,
    set_written,
    settings_write,
)
from golden_io.services.imports import (
    PREVIEW_HOURS,
    format_of,
    freeze_refusals,
    golden_import,
    golden_import_check,
    golden_import_confirm,
    golden_import_discard,
    golden_import_preview,
)
from golden_io.services.rejudge import RequeueReport, stale_requeue

__all__ = [
    "DOCUMENT_STATE",
    "LOCK_WAIT_MS",
    "MERGE",
    "PREVIEW_HOURS",
    "QUERY_STATE",
    "REJUDGE_SYSTEM",
    "REPLACE",
    "SET_READ",
    "SET_STATE",
    "ExportConfigError",
    "FieldChange",
    "FreezeBlocked",
    "FreezeError",
    "FreezeUnchanged",
    "HeldLabel",
    "ImportChanges",
    "ImportPlan",
    "ImportRows",
    "LabelChange",
    "Prepared",
    "PreparedUpdate",
    "QueryWrites",
    "RequeueReport",
    "SetState",
    "Skipped",
    "Stale",
    "UndoPlan",
    "UndoRows",
    "cascade_delete",
    "chunks",
    "export_author",
    "export_message",
    "file_checked",
    "file_read",
    "format_of",
    "freeze_refusals",
    "git_export_configure",
    "golden_import",
    "golden_import_check",
    "golden_import_confirm",
    "golden_import_discard",
    "golden_import_preview",
    "golden_import_undo",
    "golden_version_export",
    "golden_version_freeze",
    "id_list",
    "ids_reserved",
    "ids_sql",
    "import_history",
    "import_plan",
    "import_rows",
    "import_undo_plan",
    "import_undo_unwritten",
    "import_undoable",
    "import_write",
    "json_text",
    "label_state",
    "not_done_text",
    "pair_rows",
    "pk_column",
    "prepared",
    "prepared_insert",
    "prepared_update",
    "query_writes",
    "query_writes_run",
    "set_state",
    "set_written",
    "settings_write",
    "stale_requeue",
    "too_large",
    "undo_notes",
    "update_prepared",
    "version_name_next",
]
