"""The words of the unjudged-document actions (a run report's, and an experiment's coverage card):
what "Queue them for rating" and "Ask the judge" did, document by document, including nothing and why
(docs/runs.md, "Unjudged documents"). Built from the services' structured outcomes (`UnjudgedQueued`,
`UnjudgedAsked`), so another client (the API, the CLI) says the same thing: `link` turns a query id
into what names it (a link on the page, the id in plain text), `escape` makes the rest safe for it
(identity for plain text)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from assay.display import counted
from evaluation.runs.selectors import Waiting
from evaluation.runs.services import UnjudgedAsked, UnjudgedQueued
from evaluation.runs.services.unjudged import gaps_ask_judge, gaps_queue

SUCCESS, INFO, WARNING = "success", "info", "warning"
SHOWN = 10  # query ids named in one sentence; the rest are counted

Link = Callable[[str], str]


def _plain(text: str) -> str:
    return text


def _queries(ids: Sequence[str], link: Link, escape: Link) -> str:
    shown = ", ".join(link(q) for q in ids[:SHOWN])
    return shown + (escape(f" and {len(ids) - SHOWN} more") if len(ids) > SHOWN else "")


def _count(per_query: Mapping[str, Sequence[str]]) -> int:
    return sum(len(docs) for docs in per_query.values())


# What a document in each state waits for, and what to do about it: the words before and after the
# query ids (`{n}` documents; `{where}`: "already in their pools" or "added now").
_WAITS: dict[Waiting, tuple[str, str]] = {
    Waiting.REVIEWER: (
        "{documents} {where} {wait} for a reviewer's decision: decide {them} on the {page} of ",
        "",
    ),
    Waiting.SECOND_RATER: ("{documents} {where} {wait} for the second rater's grade, on ", ""),
    Waiting.THIRD_RATER: (
        "{documents} {where} {have} disagreeing grades and {wait} for a third rater's, on ",
        "",
    ),
    Waiting.GRADING: ("{documents} {where} {are} being graded on open assignments: ", ""),
    Waiting.SKIPPED: (
        "{documents} {where} {have} no grade although every assignment covering {them} is done: "
        "reopen one on the set page (",
        ")",
    ),
    Waiting.UNASSIGNED: (
        "{documents} {where} {have} no rater: nobody is assigned ",
        "; assign raters on the set page",
    ),
    Waiting.LABELED: (
        "{documents} {where} {are} labeled since version {version} was frozen: freeze a new golden version "
        "to score {them} (",
        ")",
    ),
}


def _state_sentences(
    outcome: UnjudgedQueued, *, new: bool, version: str, link: Link, escape: Link
) -> list[tuple[str, str]]:
    sentences = []
    for state, (head, tail) in _WAITS.items():
        found = outcome.waiting(state, new=new)
        if not found:
            continue
        ids = sorted(found)
        if state == Waiting.GRADING:
            # Reviewers only act here (the report page's actions are theirs), and they see raters' work.
            names = "; ".join(
                f"{link(q)} {escape('by ' + ', '.join(outcome.raters.get(q, [])))}" for q in ids[:SHOWN]
            )
            more = escape(f" and {len(ids) - SHOWN} more") if len(ids) > SHOWN else ""
            named = names + more
        else:
            named = _queries(ids, link, escape)
        page = "query page" if len(ids) == 1 else "query pages"
        n = _count(found)
        one = n == 1
        where = "added now" if new else "already in its pool" if one else "already in their pools"
        head = head.format(
            documents=counted(n, "document"),
            where=where,
            version=version,
            page=page,
            wait="waits" if one else "wait",
            have="has" if one else "have",
            are="is" if one else "are",
            them="it" if one else "them",
        )
        text = escape(head) + named + escape(tail + ".")
        level = INFO if state in (Waiting.GRADING, Waiting.SECOND_RATER, Waiting.THIRD_RATER) else WARNING
        sentences.append((level, text))
    return sentences


def _unknown_sentences(outcome: UnjudgedQueued, escape: Link) -> list[tuple[str, str]]:
    sentences = []
    if outcome.unknown_documents:
        shown = ", ".join(f"{q}/{d}" for q, d in outcome.unknown_documents[:SHOWN])
        more = len(outcome.unknown_documents) - SHOWN
        extra = f" and {more} more" if more > 0 else ""
        sentences.append(
            (WARNING, escape(f"Not in the set's documents (import them first): {shown}{extra}."))
        )
    if outcome.unknown_queries:
        sentences.append(
            (WARNING, escape(f"Not queries of the labeling set: {', '.join(outcome.unknown_queries)}."))
        )
    return sentences


def queued_sentences(
    outcome: UnjudgedQueued, *, version: str, link: Link = _plain, escape: Link = _plain
) -> list[tuple[str, str]]:
    """(level, text) per sentence: what "Queue them for rating" added and reopened, or that it did
    nothing; then what each document waits for (`Waiting`), added now or already pooled; then what the
    labeling set does not know. `version` is the run's golden version (the one the documents are
    unjudged in)."""
    sentences: list[tuple[str, str]] = []
    known = _count(outcome.queued)
    if outcome.added:
        added: dict[str, int] = {}
        for query_id, _ in outcome.new:
            added[query_id] = added.get(query_id, 0) + 1
        reopened = (
            f"reopened {counted(outcome.reopened, 'finished assignment')} for their raters"
            if outcome.reopened
            else "no finished assignment had to be reopened"
        )
        sentences.append(
            (
                SUCCESS,
                escape(f"Queued {counted(outcome.added, 'document')} for rating, new to the pools of ")
                + _queries(sorted(added), link, escape)
                + escape(f"; {reopened}."),
            )
        )
    elif known:
        sentences.append(
            (
                WARNING,
                escape(
                    f"Nothing was queued: the {counted(known, 'unjudged document')} the labeling set knows "
                    + ("is already in its pool" if known == 1 else "are all already in their pools")
                    + ", and no assignment was reopened."
                ),
            )
        )
    else:
        sentences.append(
            (
                WARNING,
                escape(
                    "Nothing was queued: none of the run's unjudged documents is a document of a query of "
                    "the labeling set."
                ),
            )
        )
    sentences += _state_sentences(outcome, new=True, version=version, link=link, escape=escape)
    sentences += _state_sentences(outcome, new=False, version=version, link=link, escape=escape)
    return sentences + _unknown_sentences(outcome, escape)


def asked_sentences(
    outcome: UnjudgedAsked, *, version: str, link: Link = _plain, escape: Link = _plain
) -> list[tuple[str, str]]:
    """(level, text) per sentence: what "Ask the judge" sent to which judge (and how many documents
    joined their pools), or that it sent nothing; then what was not sent and why (still waiting in a
    job, labeled since `version` was frozen, no judge qualified); then what the labeling set does not
    know."""
    sentences: list[tuple[str, str]] = []
    waiting = sum(len(pairs) for pairs in outcome.already_asked.values())
    if outcome.jobs:
        n_docs = _count(outcome.queued)
        judges = ", ".join(
            f"{job.judge.name} (job {job.pk}, {counted(job.total, 'pair')})" for job in outcome.jobs
        )
        sentences.append(
            (
                SUCCESS,
                escape(
                    f"Asked the judge about {counted(n_docs, 'unjudged document')} of "
                    f"{counted(len(outcome.queued), 'query', 'queries')}: {judges}; "
                    f"{outcome.added} of them new to their pools."
                ),
            )
        )
    elif waiting or outcome.labeled or outcome.no_judge:
        sentences.append((WARNING, escape("Nothing was sent to a judge, and no document joined a pool.")))
    else:
        sentences.append(
            (
                WARNING,
                escape(
                    "Nothing was sent to a judge: none of the run's unjudged documents is a document of a "
                    "query of the labeling set."
                ),
            )
        )
    for job_pk, pairs in sorted(outcome.already_asked.items()):
        ids = sorted({q for q, _ in pairs})
        sentences.append(
            (
                INFO,
                escape(f"{counted(len(pairs), 'document')} of ")
                + _queries(ids, link, escape)
                + escape(
                    f" still {'waits' if len(pairs) == 1 else 'wait'} in judge job {job_pk}: not sent again"
                    " (its answers are coming)."
                ),
            )
        )
    if outcome.labeled:
        ids = sorted({q for q, _ in outcome.labeled})
        sentences.append(
            (
                WARNING,
                escape(
                    f"{counted(len(outcome.labeled), 'document')} "
                    f"{'is' if len(outcome.labeled) == 1 else 'are'} labeled since version {version} was "
                    "frozen, so a judge's label would not count: not sent; freeze a new golden version to "
                    f"score {'it' if len(outcome.labeled) == 1 else 'them'} ("
                )
                + _queries(ids, link, escape)
                + escape(")."),
            )
        )
    if outcome.no_judge:
        sentences.append(
            (
                WARNING,
                escape(
                    f"{counted(outcome.no_judge_documents, 'document')} not sent: no judge is qualified for "
                )
                + _queries(outcome.no_judge, link, escape)
                + escape(" (qualify one on the judges page, or queue them for rating instead)."),
            )
        )
    return sentences + _unknown_sentences(outcome, escape)


# What each unjudged-document action does and the words that say it: "raters" queues for rating, "judge"
# asks the qualified judge (an experiment's coverage card and its API take these names).
GAPS_ACTIONS: dict[str, tuple[Callable[..., UnjudgedQueued], Callable[..., list[tuple[str, str]]]]] = {
    "raters": (gaps_queue, queued_sentences),
    "judge": (gaps_ask_judge, asked_sentences),
}
