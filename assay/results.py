"""What one search call produced for one golden query (pure, no Django).

The harness and the run tasks produce these; `assay score` builds them from a run file; the report
scores them. `error` set means the call failed after its retries: never counted as empty.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class QueryResult:
    query_id: str
    ids: tuple[str, ...] = ()
    error: str | None = None
    # Transport facts, kept in the artifact for explaining odd diffs later.
    status: int | None = None
    latency_ms: float | None = None
    attempts: int = 1
    index_generation: str | None = None
    model_id: str | None = None
    titles: tuple[str, ...] = field(default=())  # when the engine returns them: near-duplicate checks

    @property
    def ok(self) -> bool:
        return self.error is None
