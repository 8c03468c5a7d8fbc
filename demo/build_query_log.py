"""Build demo/query_log.csv and demo/query_log.jsonl: a month of help-center searches, all fake.

    python -m demo.build_query_log [--check]

Columns `query,count,zero_hits,locale` (the import format of `import_query_log`). What the log has:
- traffic with a head/torso/tail shape: a few dozen queries carry half of the searches, a long tail of
  one-off phrasings (question forms, extra words, typos) carries the rest;
- every golden query, with its golden `weight` as its count;
- near-duplicates that differ only in case and spacing, as separate rows (the import merges them);
- PII the import must strip: email addresses, phone numbers, card numbers (well-known test numbers that
  pass the Luhn check) and long digit runs such as order numbers; all invented;
- `zero_hits` from the demo engine itself (rewriter off, no filters, the row's locale): a query the engine
  cannot answer has every one of its searches counted as zero-hit, so historical failures are real ones.

Deterministic: a fixed seed, no clock. `--check` exits 1 if the committed files differ from a rebuild.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Sequence
from pathlib import Path

from assay.problems import csv_text
from demo.golden_spec import QUERIES
from demo.search_service import SearchIndex, build_index, load_corpus, search

DEMO_DIR = Path(__file__).resolve().parent
CSV_PATH = DEMO_DIR / "query_log.csv"
JSONL_PATH = DEMO_DIR / "query_log.jsonl"
CORPUS_PATH = DEMO_DIR / "corpus.jsonl"
SEED = 20260801
COLUMNS = ("query", "count", "zero_hits", "locale")

# What people search for, by language: the seeds of the tail's variants. Head and torso queries are
# drawn from these too, weighted by how common the need is (the number after each query).
BASE_QUERIES: dict[str, tuple[tuple[str, int], ...]] = {
    "en-US": (
        ("refund", 620),
        ("cancel subscription", 480),
        ("reset password", 540),
        ("can't log in", 310),
        ("download invoices", 300),
        ("update credit card", 260),
        ("invoice", 240),
        ("get a refund", 210),
        ("login", 190),
        ("payment failed", 150),
        ("refund policy", 160),
        ("refund policy for annual plan", 140),
        ("invite staff", 120),
        ("refund a client", 110),
        ("how long does a refund take", 95),
        ("pricing", 95),
        ("cancel", 90),
        ("switch to annual billing", 90),
        ("downgrade plan", 85),
        ("two factor authentication", 80),
        ("why was i charged twice", 75),
        ("change email address", 70),
        ("add vat number to invoice", 70),
        ("api authentication", 70),
        ("delete account", 65),
        ("refund annual subscription", 60),
        ("export data", 55),
        ("card reader", 55),
        ("chargeback", 50),
        ("return my reader", 45),
        ("lost phone 2fa", 45),
        ("webhooks", 45),
        ("refund monthly plan", 40),
        ("google calendar sync", 40),
        ("cancel subscription api", 40),
        ("chargeback fee", 35),
        ("staff roles permissions", 35),
        ("create refund api", 35),
        ("free trial", 35),
        ("payout schedule", 34),
        ("respond to chargeback", 30),
        ("account locked", 30),
        ("verify webhook signature", 30),
        ("pause subscription", 28),
        ("python sdk", 28),
        ("sms credits", 27),
        ("refund duplicate charge", 25),
        ("rate limit 429", 25),
        ("signin", 25),
        ("test cards", 24),
        ("sepa direct debit", 22),
        ("client cannot log in to booking page", 22),
        ("shipback label", 20),
        ("saml single sign on", 20),
        ("reader 2", 20),
        ("hardware warranty", 18),
        ("pagination cursor", 18),
        ("studio plan price increase", 18),
        ("sales tax", 16),
        ("401 unauthorized error", 16),
        ("refund for returned reader", 15),
        ("transfer ownership", 15),
        ("idempotency key", 15),
        ("reduce no shows", 15),
        ("money back", 14),
        ("rotate api key", 14),
        ("bookings wrong time zone", 14),
        ("seat refund", 12),
        ("reset pasword", 12),
        ("refund.created webhook", 12),
        ("two-factor on every plan", 12),
        ("migrate v1 to v2", 11),
        ("sign out all devices", 10),
        ("oauth app", 10),
        ("why clients file chargebacks", 10),
        ("refund guarantee", 9),
        ("submit dispute evidence", 9),
        ("audit log", 8),
        ("list payouts", 8),
        ("shipback", 8),
        ("refund vat", 6),
        ("refund a payment with the api", 6),
        ("webhok retries", 5),
        ("german and french", 5),
        ("payout delay postmortem", 4),
        ("difference between refund and chargeback", 4),
        ("year in review", 3),
        ("pilates studio lyon", 3),
        ("money back guarantee", 7),
        ("refund status", 9),
        ("where is my refund", 8),
        ("receipt printer paper", 8),
        ("order hardware", 7),
        ("track my order", 9),
        ("return label", 7),
        ("gift cards", 6),
        ("nonprofit discount", 5),
        ("coupon code", 6),
        ("tips", 4),
        ("class pack refund", 5),
        ("membership cancel", 6),
        ("zoom", 5),
        ("mailchimp", 3),
        ("custom domain booking page", 3),
        ("ip allowlist", 2),
        ("passkey", 3),
        ("magic link", 2),
        ("delete client", 3),
        ("import clients csv", 4),
        ("statement descriptor", 3),
        ("1099-k", 3),
        ("gst australia", 2),
        ("bank transfer", 3),
        ("purchase order number", 2),
        ("credit note", 3),
        ("overdue invoice", 4),
        ("reactivate account", 3),
        ("change billing date", 2),
        ("add location", 4),
        ("extra seats price", 2),
        ("reader not connecting", 6),
        ("dock not charging", 2),
        ("kiosk check in", 3),
        ("damaged reader", 2),
        ("exchange device", 1),
        ("cli", 1),
        ("graphql", 1),
        ("status page", 2),
    ),
    "de-DE": (
        ("Rechnung herunterladen", 40),
        ("Passwort zurücksetzen", 35),
        ("Abo kündigen", 34),
        ("Rückerstattung Jahrestarif", 30),
        ("Kreditkarte ändern", 14),
        ("SEPA Lastschrift", 12),
        ("USt-IdNr", 9),
        ("Rücksendung ShipBack", 6),
        ("Rückerstattung", 18),
        ("Zwei-Faktor", 6),
        ("Konto schließen", 5),
        ("Daten exportieren", 4),
        ("Lieferzeit", 3),
        ("Jahresabo Erstattung", 4),
    ),
    "fr-FR": (
        ("mot de passe oublié", 20),
        ("remboursement forfait annuel", 18),
        ("résilier abonnement", 16),
        ("télécharger facture", 11),
        ("remboursement", 10),
        ("numéro de TVA", 6),
        ("carte bancaire", 5),
        ("retour matériel", 3),
        ("prélèvement SEPA", 3),
        ("rétrofacturation", 2),
        ("fermer compte", 2),
    ),
}

PREFIXES = {
    "en-US": (
        "how to ",
        "how do i ",
        "how can i ",
        "can i ",
        "where do i ",
        "where can i ",
        "i want to ",
        "i need to ",
        "help ",
        "lanternly ",
        "what is ",
        "why ",
    ),
    "de-DE": ("wie ", "wo kann ich ", "hilfe ", "ich möchte "),
    "fr-FR": ("comment ", "aide ", "je veux "),
}
SUFFIXES = {
    "en-US": (
        " lanternly",
        " help",
        " not working",
        " 2026",
        " on iphone",
        " on android",
        " for my studio",
        "?",
        " please",
        " urgent",
        " settings",
        " page",
    ),
    "de-DE": (" lanternly", " hilfe", "?", " bitte", " geht nicht"),
    "fr-FR": (" lanternly", " aide", " ?", " svp"),
}
# Invented PII in the shapes people paste into search boxes. The card numbers are the usual test cards.
PII_QUERIES: tuple[tuple[str, str], ...] = (
    ("refund for order 4820017731", "en-US"),
    ("refund order #5531200984", "en-US"),
    ("cancel subscription jane.doe@example.com", "en-US"),
    ("mark.t@example.org cant log in", "en-US"),
    ("card 4242 4242 4242 4242 declined", "en-US"),
    ("charged twice on 5555555555554444", "en-US"),
    ("card ending 4000-0566-5566-5556 refund", "en-US"),
    ("call me +1 555 0142 about invoice", "en-US"),
    ("phone (555) 013-2287 reset password", "en-US"),
    ("invoice INV-20260412-88 missing", "en-US"),
    ("account 778120045 locked", "en-US"),
    ("refund to studio@pilates-example.net", "en-US"),
    ("tracking 1Z999AA10123456784 where is my reader", "en-US"),
    ("Rückerstattung Bestellung 9920147731", "de-DE"),
    ("anna.schmidt@example.de Passwort", "de-DE"),
    ("Rechnung für +49 30 1234567 fehlt", "de-DE"),
    ("remboursement commande 6620019938", "fr-FR"),
    ("claire@atelier-example.fr mot de passe", "fr-FR"),
    ("appelez 06 12 34 56 78 facture", "fr-FR"),
)


# One row: (query, count, zero_hits, locale), the order of COLUMNS.
LogRow = tuple[str, int, int, str]


def _typo(word: str, rng: random.Random) -> str:
    if len(word) < 4:
        return word
    i = rng.randrange(1, len(word) - 1)
    kind = rng.choice(("swap", "drop", "double"))
    if kind == "swap":
        return word[:i] + word[i + 1] + word[i] + word[i + 2 :]
    if kind == "drop":
        return word[:i] + word[i + 1 :]
    return word[:i] + word[i] + word[i:]


def _variant(text: str, locale: str, rng: random.Random) -> str:
    """One tail phrasing of a base query: prefixes, suffixes, typos and case/spacing twins, combined."""
    for _ in range(rng.choice((1, 1, 2))):
        text = _change(text, locale, rng)
    return text


def _change(text: str, locale: str, rng: random.Random) -> str:
    kind = rng.choice(("prefix", "suffix", "typo", "typo", "case", "spacing", "prefix+suffix"))
    if kind in ("prefix", "prefix+suffix"):
        text = rng.choice(PREFIXES[locale]) + text
    if kind in ("suffix", "prefix+suffix"):
        text = text + rng.choice(SUFFIXES[locale])
    if kind == "typo":
        words = text.split(" ")
        i = rng.randrange(len(words))
        words[i] = _typo(words[i], rng)
        text = " ".join(words)
    if kind == "case":
        text = rng.choice((text.upper(), text.title(), text.capitalize()))
    if kind == "spacing":
        text = rng.choice(("  " + text, text + " ", text.replace(" ", "  ", 1)))
    return text


def build_rows(index: SearchIndex, *, seed: int = SEED) -> list[LogRow]:
    rng = random.Random(seed)
    counts: dict[tuple[str, str], int] = {}

    def add(query: str, locale: str, count: int) -> None:
        counts[(query, locale)] = counts.get((query, locale), 0) + count

    golden = {(q.text, q.locale or ""): int(q.weight) for q in QUERIES}
    for (text, locale), weight in golden.items():
        add(text, locale, weight)
    for locale, bases in BASE_QUERIES.items():
        for text, weight in bases:
            if (text, locale) not in golden:
                add(text, locale, weight)
            # The tail: many phrasings of every need, most searched once or twice.
            for _ in range(max(6, weight // 2)):
                add(_variant(text, locale, rng), locale, rng.choice((1, 1, 1, 1, 2, 2, 3, 4, 6)))
    for text, locale in PII_QUERIES:
        add(text, locale, rng.choice((1, 1, 2)))
    # A few searches arrive without a locale (old mobile app versions).
    for text, _ in BASE_QUERIES["en-US"][:40:4]:
        add(text, "", rng.choice((1, 2, 3)))

    rows: list[LogRow] = []
    for (text, locale), count in counts.items():
        result = search(index, text, locale=locale or None, size=1)
        rows.append((text, count, 0 if result.hits else count, locale))
    rows.sort(key=lambda r: (-r[1], r[3], r[0]))
    return rows


def render_csv(rows: Sequence[LogRow]) -> str:
    return csv_text(COLUMNS, ([str(cell) for cell in row] for row in rows), newline="\n")


def render_jsonl(rows: Sequence[LogRow]) -> str:
    return "".join(
        json.dumps(dict(zip(COLUMNS, row, strict=True)), ensure_ascii=False) + "\n" for row in rows
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m demo.build_query_log", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--check", action="store_true", help="exit 1 if the committed logs are out of date")
    args = parser.parse_args(argv)
    rows = build_rows(build_index(load_corpus(CORPUS_PATH)))
    outputs = {CSV_PATH: render_csv(rows), JSONL_PATH: render_jsonl(rows)}
    if args.check:
        stale = [
            p.name for p, text in outputs.items() if not p.exists() or p.read_text(encoding="utf-8") != text
        ]
        if stale:
            print(f"out of date: {', '.join(stale)}; run python -m demo.build_query_log", file=sys.stderr)
            return 1
        return 0
    for path, text in outputs.items():
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    searches = sum(row[1] for row in rows)
    print(f"wrote {CSV_PATH.name} and {JSONL_PATH.name}: {len(rows)} rows, {searches} searches")
    return 0


if __name__ == "__main__":
    sys.exit(main())
