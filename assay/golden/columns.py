"""A golden file's judgments as columns (pure): what scoring a large run reads, no object per judgment.

`GoldenColumns` holds the file-level fields, the queries (canonical order) and every judgment in
flat columns, query by query and, within a query, in natural doc id order (the order of `GoldenFile`):
`doc_ids[bounds[i]:bounds[i + 1]]` are query i's documents and `grades[...]` their grades (`keys` and
`sources` beside them when any judgment has one). The fast reader of `assay.golden.fast` builds it
straight from the file's bytes; `from_file` builds it from a
`GoldenFile` (what the app and the careful walk hold); `to_file` gives the `GoldenFile` back. The columns
are the judgments: the queries' own `judgments` are not read (the fast reader leaves them empty).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from itertools import chain

import numpy as np
from numpy.typing import NDArray

from assay.golden.model import GoldenFile, GoldenQuery, Judgment, Scale


@dataclass(frozen=True, slots=True, eq=False)
class GoldenColumns:
    version: str
    k: int
    relevant_min_grade: int
    scale: Scale
    rubric: str | None
    queries: tuple[GoldenQuery, ...]
    doc_ids: list[str]
    grades: NDArray[np.int64]
    # Durable keys beside the doc ids (None where a judgment has none); None when no judgment has one.
    keys: list[str | None] | None
    bounds: NDArray[np.int64]  # len(queries) + 1 offsets into the columns
    # Judgment sources beside the doc ids (None: humans); None when every judgment is the humans'.
    sources: list[str | None] | None = None

    @classmethod
    def from_file(cls, golden: GoldenFile) -> GoldenColumns:
        judgments = list(chain.from_iterable(q.judgments for q in golden.queries))
        sizes = [len(q.judgments) for q in golden.queries]
        keys = [j.key for j in judgments]
        sources = [j.source for j in judgments]
        return cls(
            version=golden.version,
            k=golden.k,
            relevant_min_grade=golden.relevant_min_grade,
            scale=golden.scale,
            rubric=golden.rubric,
            queries=golden.queries,
            doc_ids=[j.doc_id for j in judgments],
            grades=np.fromiter((j.grade for j in judgments), dtype=np.int64, count=len(judgments)),
            keys=keys if any(key is not None for key in keys) else None,
            bounds=offsets(sizes),
            sources=sources if any(source is not None for source in sources) else None,
        )

    def to_file(self) -> GoldenFile:
        grades = self.grades.tolist()
        keys = self.keys if self.keys is not None else [None] * len(self.doc_ids)
        sources = self.sources if self.sources is not None else [None] * len(self.doc_ids)
        built = list(map(Judgment, self.doc_ids, grades, keys, sources))
        ends = self.bounds.tolist()
        queries = tuple(
            replace(query, judgments=tuple(built[start:end]))
            for query, start, end in zip(self.queries, ends, ends[1:], strict=False)
        )
        return GoldenFile(
            version=self.version,
            queries=queries,
            k=self.k,
            relevant_min_grade=self.relevant_min_grade,
            scale=self.scale,
            rubric=self.rubric,
        )

    def has_positive(self) -> NDArray[np.bool_]:
        """Per query, whether it has a judgment at grade >= 1 (without one it cannot score above 0)."""
        positive = np.zeros(len(self.queries), dtype=bool)
        positive[self.owner[self.grades >= 1]] = True
        return positive

    @property
    def owner(self) -> NDArray[np.int64]:
        """The query index of each judgment."""
        return np.repeat(np.arange(len(self.queries), dtype=np.int64), np.diff(self.bounds))


def offsets(sizes: Sequence[int] | NDArray[np.int64]) -> NDArray[np.int64]:
    """[0, s0, s0 + s1, ...]: where each run of `sizes` starts in a flat column, and the end."""
    out = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(np.asarray(sizes, dtype=np.int64), out=out[1:])
    return out
