"""Golden sets and everything raters touch: rubric, queries, documents, pools, assignments, judgments.

Single-row behaviour only; writes that span rows live in `labeling.services`, reads in
`labeling.selectors` (docs/labeling.md). Other apps write some of these rows through their own services:
golden_io writes every `FrozenLabel` (the golden-file import and the golden-version freeze,
`golden_io.services`; labeling only reads them), and an evaluation run extends a pool through
`labeling.services.candidates_add` with its own provenance. The dispute check reads `Judgment` rows
grouped by (query, document) and creates `kind=third` assignments scoped to the disagreeing candidates
(docs/agreement.md).

One module per part: `accounts` (single sign-on's identities), `sets` (rubrics, sets, secret grants,
documents, queries, frozen labels, candidates), `grading` (assignments, judgments, can't-judge marks,
judgment events), `review` (tier moves, adjudications, dispute checks, gold items, proposals, calibration
rounds), `judges` (machine judges, their jobs, answers, items, labels and qualifications). Every model is
imported here (Django finds an app's models in `<app>.models`), with every other public name, so callers write
`from labeling.models import Judgment` whichever module it lives in.
"""

from __future__ import annotations

from labeling.models.accounts import SsoIdentity
from labeling.models.grading import Assignment, AssignmentQuerySet, CantJudgeMark, Judgment, JudgmentEvent
from labeling.models.judges import Judge, JudgeAnswer, JudgeJob, JudgeJobItem, JudgeLabel, JudgeQualification
from labeling.models.review import (
    Adjudication,
    CalibrationRound,
    DisputeCheck,
    GoldItem,
    LabelProposal,
    TierMove,
)
from labeling.models.sets import (
    CONTENT_FIELDS,
    Candidate,
    Document,
    FrozenLabel,
    GoldenSet,
    Query,
    Rubric,
    SecretGrant,
    content_hash,
)

__all__ = [
    "CONTENT_FIELDS",
    "Adjudication",
    "Assignment",
    "AssignmentQuerySet",
    "CalibrationRound",
    "Candidate",
    "CantJudgeMark",
    "DisputeCheck",
    "Document",
    "FrozenLabel",
    "GoldItem",
    "GoldenSet",
    "Judge",
    "JudgeAnswer",
    "JudgeJob",
    "JudgeJobItem",
    "JudgeLabel",
    "JudgeQualification",
    "Judgment",
    "JudgmentEvent",
    "LabelProposal",
    "Query",
    "Rubric",
    "SecretGrant",
    "SsoIdentity",
    "TierMove",
    "content_hash",
]
