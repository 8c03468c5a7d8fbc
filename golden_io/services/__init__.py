"""Writes for golden versions: freeze, golden-file import, export to git, re-judging queue, export
configuration. The freeze and the golden-file import are the only writers of the frozen labels.

The freeze (`golden_version_freeze`) locks the golden set row while it names and writes the version, so
two freezes at once are serialised: the second sees the first as its parent and takes the next name
(or, asked for the same explicit name, is refused). Nothing is half-written: a refused freeze changes
nothing, not even the tiers it would have moved. A freeze whose content is its parent's is refused
(`FreezeUnchanged`): a version is a change, never a new name for the same labels.

One module per part: `freeze`, `imports` (the golden-file import) and `import_undo`, `exports` (git),
`rejudge`. Every public name is re-exported here (docs/architecture.md, "Inside each app"), so callers write
`services.golden_version_freeze(...)` whichever module it lives in.
"""

from __future__ import annotations

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
from golden_io.services.import_undo import (
    UndoPlan,
    golden_import_undo,
    import_history,
    import_undo_plan,
    import_undoable,
    undo_notes,
)
from golden_io.services.imports import (
    MERGE,
    PREVIEW_HOURS,
    REPLACE,
    FieldChange,
    ImportChanges,
    LabelChange,
    chunks,
    format_of,
    golden_import,
    golden_import_check,
    golden_import_confirm,
    golden_import_discard,
    golden_import_preview,
    label_state,
    query_update,
    too_large,
    written_checked,
)
from golden_io.services.rejudge import RequeueReport, stale_requeue

__all__ = [
    "MERGE",
    "PREVIEW_HOURS",
    "REJUDGE_SYSTEM",
    "REPLACE",
    "ExportConfigError",
    "FieldChange",
    "FreezeBlocked",
    "FreezeError",
    "FreezeUnchanged",
    "ImportChanges",
    "LabelChange",
    "RequeueReport",
    "UndoPlan",
    "chunks",
    "export_author",
    "export_message",
    "format_of",
    "git_export_configure",
    "golden_import",
    "golden_import_check",
    "golden_import_confirm",
    "golden_import_discard",
    "golden_import_preview",
    "golden_import_undo",
    "golden_version_export",
    "golden_version_freeze",
    "import_history",
    "import_undo_plan",
    "import_undoable",
    "label_state",
    "not_done_text",
    "query_update",
    "stale_requeue",
    "too_large",
    "undo_notes",
    "version_name_next",
    "written_checked",
]
