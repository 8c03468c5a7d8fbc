"""Telling people a run's verdict. A run that ends with verdict fail or warn, whatever started it (a
nightly run above all: nobody is watching its page), is announced by an email to the golden set's
reviewers and, when the target names one, a post to a Slack-compatible webhook (docs/runs.md,
"Notifications").

Each delivery is one `Notification` row, unique per (run, channel), and the row is the claim:

- `notifications_prepare` creates the run's rows once (INSERT ... ON CONFLICT DO NOTHING) and returns the
  rows still waiting for their first attempt; called again (the task delivered twice, a re-gate of the
  run: `run_regate_rescored`) it creates nothing and returns nothing that has been tried.
- `notification_deliver` makes attempt n of one row while holding the row's lock, and only when the row
  is pending with n - 1 attempts recorded. A second delivery of the same task message finds the row locked
  (an attempt in flight), sent, failed or past that attempt, and does nothing: a row is sent at most
  once, and a sent row never again.

An HTTP 5xx or 429, a timeout or a connection error (for mail: a connection failure or a 4xx SMTP reply)
is transient: while attempts are left, `NotificationRetry` asks the task to try again after an
exponential backoff. Anything else (an HTTP 4xx, a webhook variable that is refused or not set, a 5xx
SMTP reply) is recorded as failed at once, as is the last transient failure. Errors never contain the
webhook's URL, which is a secret: rows and pages name its variable.

A webhook call is bounded like every remote reply (`assay.replies`): its reply's body must have arrived
within ASSAY_NOTIFY_TIMEOUT of the call's start, however slowly the far end drips it, and of that body,
which nobody reads, at most WEBHOOK_REPLY_BYTES are taken to say how large it was.
"""

from __future__ import annotations

import logging
import smtplib
import time
from dataclasses import dataclass
from datetime import UTC
from typing import Any

import httpx
from django.conf import settings
from django.core.mail import EmailMessage
from django.db import transaction
from django.urls import reverse
from django.utils import timezone
from django.utils.text import capfirst

from assay.display import counted
from assay.netpolicy import body_shape, private_targets_allowed, refused_in, url_problem
from assay.problems import size_text
from assay.replies import ReplyError, content_length, read_capped_sync, until
from assay.secrets import SecretEnvError, mask_secrets
from assay.urls import UrlError, split_url, url_free
from evaluation.runs.models import EvaluationRun, Notification
from labeling.models import GoldenSet
from labeling.roles import reviewer_emails
from labeling.selectors.secrets import secret_read

logger = logging.getLogger(__name__)

Channel = Notification.Channel
Status = Notification.Status

NOTIFY_VERDICTS = (EvaluationRun.Verdict.FAIL, EvaluationRun.Verdict.WARN)
# Attempts per delivery, the first included. With ASSAY_NOTIFY_RETRY_DELAY's default of 30 s the retries
# come 30 s, 1, 2, 4 and 8 minutes apart: a webhook or mail server down for a quarter of an hour still
# gets the verdict. A delay never exceeds MAX_RETRY_DELAY_S, well inside Redis's visibility timeout.
NOTIFY_ATTEMPTS = 6
MAX_RETRY_DELAY_S = 15 * 60
# A webhook's reply is only measured for the record (`body_shape`): a larger one is "more than" this.
WEBHOOK_REPLY_BYTES = 64 * 1024


class NotificationRetry(Exception):
    """A transient failure with attempts left: the task retries after `countdown` seconds."""

    def __init__(self, message: str, countdown: float) -> None:
        super().__init__(message)
        self.countdown = countdown


class _Transient(Exception):
    """Worth another attempt: the far end may answer later."""


class _Refused(Exception):
    """Not worth another attempt: the same request would fail the same way."""


# ----------------------------------------------------------------------------------------- the message


@dataclass(frozen=True)
class VerdictMessage:
    """What both channels say: the email's subject and body, the webhook's JSON."""

    subject: str
    body: str
    payload: dict[str, Any]


def run_url(run: EvaluationRun) -> str:
    return settings.SITE_URL + reverse("evaluation:run_detail", args=[run.pk])


def verdict_message(run: EvaluationRun) -> VerdictMessage:
    """The announcement of a finished run's verdict: which run (its label: the target and what it sent
    beyond the defaults), the gate's failures and warnings (their messages, as on the run page) and the
    run page's address."""
    version = run.golden_version
    golden_set = version.golden_set.slug
    url = run_url(run)
    gate = run.gate or {}
    failures = [f["message"] for f in gate.get("failures", [])]
    warnings = [w["message"] for w in gate.get("warnings", [])]
    subject = f"[Assay] {run.verdict.upper()}: {run.label} on {golden_set}"
    findings = [f"FAIL  {m}" for m in failures] + [f"WARN  {m}" for m in warnings]
    finished = run.finished_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC") if run.finished_at else "-"
    body = "\n".join(
        [
            f"{capfirst(run.label)} of {golden_set}@{version.name} finished with verdict "
            f"{run.verdict.upper()}.",
            f"Started by {run.triggered_by_label}; finished {finished}.",
            "",
            f"{counted(len(failures), 'failure')}, {counted(len(warnings), 'warning')}:",
            *findings,
            *(f"note  {n}" for n in gate.get("notes", [])),
            "",
            f"The run: {url}",
            "",
            f"You receive this as a reviewer of {golden_set}.",
        ]
    )
    text = "\n".join([subject, *findings, url])
    payload = {
        "text": text,
        "verdict": run.verdict,
        "run_id": run.pk,
        "run": run.label,
        "url": url,
        "golden_set": golden_set,
        "golden_version": version.name,
        "target": run.target.name,
        "trigger": run.trigger,
        "failures": failures,
        "warnings": warnings,
    }
    return VerdictMessage(subject=subject, body=body + "\n", payload=payload)


# ----------------------------------------------------------------------------------------- the rows


NOTIFIED_STATUSES = (EvaluationRun.Status.SUCCEEDED, EvaluationRun.Status.FAILED)


def notifications_prepare(*, run_id: int) -> list[int]:
    """The run's deliveries, created once when its verdict is fail or warn: an email to the set's
    reviewers (recorded as failed when none has an address, so the page says why nobody was told) and
    the target's webhook when it names one. Returns the ids of the rows waiting for their first attempt."""
    run = (
        EvaluationRun.objects.select_related("golden_version__golden_set", "target")
        # A run whose every query errored is failed with verdict fail: it is told too.
        .filter(pk=run_id, status__in=NOTIFIED_STATUSES, verdict__in=NOTIFY_VERDICTS)
        .first()
    )
    if run is None:
        return []
    golden_set = run.golden_version.golden_set
    emails = reviewer_emails(golden_set)
    rows = [Notification(run=run, channel=Channel.EMAIL, recipients=", ".join(emails))]
    if not emails:
        rows[0].status = Status.FAILED
        rows[0].last_error = f"no reviewer of {golden_set.slug} has an email address"
    if run.target.webhook_env:
        rows.append(Notification(run=run, channel=Channel.WEBHOOK, recipients=run.target.webhook_env))
    Notification.objects.bulk_create(rows, ignore_conflicts=True)
    waiting = Notification.objects.filter(run=run, status=Status.PENDING, attempts=0).order_by("channel")
    return list(waiting.values_list("pk", flat=True))


def retry_delay(attempt: int) -> float:
    """Seconds before the attempt after `attempt` (1 for the first): doubling, capped."""
    return float(min(settings.ASSAY_NOTIFY_RETRY_DELAY * 2 ** (attempt - 1), MAX_RETRY_DELAY_S))


def notification_deliver(*, notification_id: int, attempt: int) -> str:
    """Attempt number `attempt` (1 for the first) at one delivery; see the module docstring for the claim.
    Returns "sent" or "failed", or "skipped" when the row is not this attempt's to make; a transient
    failure with attempts left is recorded and raised as NotificationRetry."""
    retry: NotificationRetry | None = None
    with transaction.atomic():
        row = (
            # Only the notification row is locked, not the run it joins: a finalize or a cancel of the
            # run never waits for a mail server.
            Notification.objects.select_for_update(skip_locked=True, of=("self",))
            .select_related("run__golden_version__golden_set", "run__target", "run__triggered_by")
            .filter(pk=notification_id, status=Status.PENDING, attempts=attempt - 1)
            .first()
        )
        if row is None:
            return "skipped"
        row.attempts = attempt
        try:
            _deliver(row)
        except _Transient as exc:
            row.last_error = str(exc)
            if attempt < NOTIFY_ATTEMPTS:
                retry = NotificationRetry(row.last_error, countdown=retry_delay(attempt))
            else:
                row.status = Status.FAILED
        except _Refused as exc:
            row.status, row.last_error = Status.FAILED, str(exc)
        except Exception as exc:
            # A bug or something unforeseen: recorded on the row (never left pending without a word), with no
            # URL in it (the webhook's is a secret).
            logger.exception("notification %s (%s of run %s) failed", row.pk, row.channel, row.run_id)
            row.status, row.last_error = Status.FAILED, f"{type(exc).__name__}: {url_free(str(exc))}"
        else:
            row.status, row.sent_at = Status.SENT, timezone.now()
        row.save(update_fields=["attempts", "status", "last_error", "sent_at"])
    if retry is not None:
        raise retry
    return row.status


def _deliver(row: Notification) -> None:
    message = verdict_message(row.run)
    if row.channel == Channel.EMAIL:
        _send_email(message, row.recipients.split(", "))
    else:
        _post_webhook(message, row.recipients, row.run.golden_version.golden_set)


def _send_email(message: VerdictMessage, recipients: list[str]) -> None:
    email = EmailMessage(subject=message.subject, body=message.body, to=recipients)
    try:
        email.send()
    except smtplib.SMTPRecipientsRefused as exc:
        raise _Refused(f"the mail server refused every recipient: {exc}") from exc
    except smtplib.SMTPResponseException as exc:
        # SMTP's reply codes are the other way round from HTTP's: 4xx is "try again later".
        text = f"the mail server answered {exc.smtp_code}: {exc.smtp_error!r}"
        raise (_Refused(text) if exc.smtp_code >= 500 else _Transient(text)) from exc
    except OSError as exc:  # smtplib's other errors, a refused connection, a timeout
        raise _Transient(f"sending mail failed: {type(exc).__name__}: {exc}") from exc


def webhook_url_problem(url: str, variable: str) -> str | None:
    """Why a webhook URL (the value of `variable`) may not be posted to: not http(s), or an address the
    network policy refuses, judged as httpx will read the host (assay.netpolicy). The words name the
    variable, never the URL, which is a secret."""
    try:
        parts = split_url(url)
    except UrlError as exc:
        return f"the value of {variable}: {exc}"
    if parts.scheme not in ("http", "https") or not parts.host:
        return f"the value of {variable} is not an http(s) URL"
    return url_problem(url, clients=("httpx",), shown=f"the host of the URL in {variable}")


def _webhook_url(variable: str, golden_set: GoldenSet) -> str:
    # Granted to the run's set still (labeling.selectors.secrets): a grant withdrawn since the target was
    # saved stops the post here, before any request.
    try:
        url = secret_read(variable, golden_set=golden_set).strip()
    except SecretEnvError as exc:
        raise _Refused(f"webhook: {exc}") from exc
    if problem := webhook_url_problem(url, variable):
        raise _Refused(f"webhook: {problem}")
    return url


def _webhook_client(timeout: float) -> httpx.Client:
    """A client whose connections go through the network policy (unless private addresses are allowed):
    the address actually connected to is judged, whatever the URL's host turned into (assay.outbound)."""
    if private_targets_allowed():
        return httpx.Client(timeout=timeout, follow_redirects=False)
    from assay.outbound import public_httpx_transport

    return httpx.Client(timeout=timeout, follow_redirects=False, transport=public_httpx_transport())


@dataclass(frozen=True)
class _Answer:
    status: int
    content_type: str | None
    size: int | None  # None: more than WEBHOOK_REPLY_BYTES

    @property
    def shape(self) -> str:
        if self.size is None:
            return f"{self.content_type or 'no content type'}, more than {size_text(WEBHOOK_REPLY_BYTES)}"
        return body_shape(self.content_type, self.size)


def _post_json(client: httpx.Client, url: str, payload: dict[str, Any], timeout: float) -> _Answer:
    """POST `payload` and measure the reply, its body arriving within `timeout` of the start
    (TimeoutError past it: the client's own timeouts bound each read, which a server dripping a byte at
    a time never exceeds; the task's time limit bounds the rest)."""
    deadline = time.monotonic() + timeout
    with client.stream("POST", url, json=payload) as reply:
        announced = content_length(reply.headers.get("content-length"))
        chunks = until(reply.iter_bytes(), deadline)
        try:
            size: int | None = len(read_capped_sync(chunks, WEBHOOK_REPLY_BYTES, announced=announced))
        except ReplyError:
            size = None
        return _Answer(reply.status_code, reply.headers.get("content-type"), size)


def _post_webhook(message: VerdictMessage, variable: str, golden_set: GoldenSet) -> None:
    url = _webhook_url(variable, golden_set)
    timeout = settings.ASSAY_NOTIFY_TIMEOUT

    def hidden(text: str) -> str:  # the URL is a secret; an exception's text might quote it, or a part
        return url_free(mask_secrets(text, [url], mask=f"${variable}"), [url])

    try:
        with _webhook_client(timeout) as client:
            reply = _post_json(client, url, message.payload, timeout)
    except (httpx.TimeoutException, TimeoutError) as exc:
        raise _Transient(f"webhook: no answer within {timeout:g} s ({type(exc).__name__})") from exc
    except httpx.TransportError as exc:  # refused, reset, DNS, a broken reply
        if (refused := refused_in(exc)) is not None:  # the policy's answer: the same next time
            raise _Refused(hidden(f"webhook ${variable}: {refused}")) from exc
        raise _Transient(hidden(f"webhook: {type(exc).__name__}: {exc}")) from exc
    except (httpx.InvalidURL, httpx.HTTPError) as exc:  # a URL httpx will not call, whatever the time
        raise _Refused(hidden(f"webhook: {type(exc).__name__}: {exc}")) from exc
    if 200 <= reply.status < 300:
        return
    # Its status, content type and size, never its body (assay.netpolicy.body_shape): `last_error` is shown
    # on the run page, and the body is whatever the webhook's address answered.
    text = f"webhook: HTTP {reply.status} ({reply.shape})"
    # A 429 says "later" as plainly as a 5xx; other 4xx (and redirects, not followed) would not change.
    if reply.status >= 500 or reply.status == 429:
        raise _Transient(text)
    raise _Refused(text)
