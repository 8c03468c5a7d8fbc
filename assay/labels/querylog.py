"""Query logs into golden-set candidates (pure, no Django): parse, strip PII, dedupe, stratify, sample.

The pipeline, in order:
1. `parse_log`: CSV (header `query,count[,zero_hits][,locale]`) or JSONL (one object per line with
   those keys). `count` is a non-negative integer; `zero_hits` is how many of those searches returned
   nothing (an integer <= count, or true/false meaning all/none of them); `locale` may be empty.
2. `strip_pii`: emails, card numbers (13-19 digits passing the Luhn check), phone numbers (7-15 digits
   in the usual groupings, ISO dates excepted) and long digit runs (6+ digits: order and account
   numbers) are cut out; what was cut is counted per kind. A query left empty is dropped.
3. `dedupe`: queries equal after normalisation (NFKC, case-folded, whitespace collapsed) within one
   locale are one query; counts add up; the most frequent spelling is kept as the text.
4. `assign_strata`: by traffic, most searched first: head = the queries making the first 50% of all
   searches, torso the next 30%, tail the rest (a query belongs to the stratum its first search falls in).
5. `sample`: up to `cap` queries. A share (`reserve_share`, default 15%) is reserved for known
   failures: queries whose searches returned nothing at least `zero_hit_min_share` of the time. The rest
   is split between head, torso and tail by `stratum_shares` (default equal thirds, so popular
   navigational queries cannot drown rare support queries); a stratum with too few queries gives its
   unused places to the others. Deterministic for a given seed.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import random
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from assay.problems import ImportReport, decode_utf8

STRATA = ("head", "torso", "tail")
HEAD_SHARE = 0.5
TORSO_SHARE = 0.3
DEFAULT_RESERVE_SHARE = 0.15
DEFAULT_ZERO_HIT_MIN_SHARE = 0.5
REQUIRED_COLUMNS = ("query", "count")
OPTIONAL_COLUMNS = ("zero_hits", "locale")
PII_KINDS = ("email", "card", "phone", "digits")


@dataclass(frozen=True, slots=True)
class LogRow:
    query: str
    count: int
    zero_hits: int
    locale: str
    line: int


@dataclass(frozen=True, slots=True)
class LogQuery:
    """One distinct query after PII stripping and deduplication."""

    text: str
    norm: str
    locale: str
    count: int
    zero_hits: int
    variants: int = 1

    @property
    def zero_hit_share(self) -> float:
        return self.zero_hits / self.count if self.count else 0.0

    @property
    def external_id(self) -> str:
        """Stable across imports, so importing the same log twice finds the same queries."""
        digest = hashlib.sha256(f"{self.locale}\x00{self.norm}".encode()).hexdigest()
        return f"log-{digest[:12]}"


@dataclass(frozen=True, slots=True)
class SampledQuery:
    query: LogQuery
    stratum: str
    reserved: bool  # taken from the known-failure reserve


@dataclass(slots=True)
class SampleResult:
    selected: list[SampledQuery]
    available: dict[str, int] = field(default_factory=dict)  # per stratum, plus "failures"
    taken: dict[str, int] = field(default_factory=dict)  # per stratum, plus "reserved"


# --- 1. parsing ---------------------------------------------------------------------------------


def detect_format(name: str, text: str) -> str:
    if name.lower().endswith((".jsonl", ".ndjson")):
        return "jsonl"
    if name.lower().endswith(".csv"):
        return "csv"
    return "jsonl" if text.lstrip().startswith("{") else "csv"


def parse_log(data: bytes, *, name: str, report: ImportReport, fmt: str | None = None) -> list[LogRow]:
    """Rows of a CSV or JSONL log; every bad line is reported (and the caller imports nothing then)."""
    text = decode_utf8(data, report)
    if text is None:
        return []
    fmt = fmt or detect_format(name, text)
    rows = _parse_jsonl(text, report) if fmt == "jsonl" else _parse_csv(text, report)
    if not rows and report.ok:
        report.add("file", "no query rows found")
    return rows


def _parse_csv(text: str, report: ImportReport) -> list[LogRow]:
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except StopIteration:
        report.add("line 1", "the file is empty; expected a header `query,count,zero_hits,locale`")
        return []
    except csv.Error as exc:
        report.add("line 1", f"malformed CSV header: {exc}")
        return []
    columns = [c.strip().lower() for c in header]
    missing = [c for c in REQUIRED_COLUMNS if c not in columns]
    if missing:
        report.add(
            "header",
            f"missing column(s) {', '.join(missing)}; found {', '.join(columns) or 'none'} "
            "(expected query,count,zero_hits,locale)",
        )
        return []
    duplicated = sorted(c for c, n in Counter(columns).items() if n > 1 and c)
    if duplicated:
        report.add("header", f"duplicate column(s) {', '.join(duplicated)}")
        return []
    unknown = [c for c in columns if c not in REQUIRED_COLUMNS + OPTIONAL_COLUMNS]
    if unknown:
        report.notes.append(f"ignored column(s): {', '.join(unknown)}")
    index = {c: i for i, c in enumerate(columns)}
    rows: list[LogRow] = []
    try:
        for values in reader:
            line = reader.line_num
            if not any(v.strip() for v in values):
                continue
            if len(values) != len(columns):
                report.add(f"line {line}", f"expected {len(columns)} fields, found {len(values)}")
                continue
            record = {c: values[i] for c, i in index.items()}
            row = _row(record, line, report)
            if row is not None:
                rows.append(row)
    except csv.Error as exc:
        report.add(f"line {reader.line_num}", f"malformed CSV: {exc}")
    return rows


def _parse_jsonl(text: str, report: ImportReport) -> list[LogRow]:
    rows: list[LogRow] = []
    for line, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as exc:
            report.add(f"line {line}", f"malformed JSON at column {exc.colno}: {exc.msg}")
            continue
        if not isinstance(obj, dict):
            report.add(f"line {line}", f"expected an object, found {type(obj).__name__}")
            continue
        missing = [c for c in REQUIRED_COLUMNS if c not in obj]
        if missing:
            report.add(f"line {line}", f"missing field(s) {', '.join(missing)}")
            continue
        row = _row(obj, line, report)
        if row is not None:
            rows.append(row)
    return rows


def _row(record: Mapping[str, object], line: int, report: ImportReport) -> LogRow | None:
    where = f"line {line}"
    query = record.get("query")
    if not isinstance(query, str):
        report.add(f"{where}: query", f"expected text, found {query!r}")
        return None
    count = _int(record.get("count"))
    if count is None or count < 0:
        report.add(f"{where}: count", f"expected a non-negative integer, found {record.get('count')!r}")
        return None
    raw_zero = record.get("zero_hits", 0)
    zero_hits: int | None
    if isinstance(raw_zero, bool) or (isinstance(raw_zero, str) and raw_zero.strip().lower() in _BOOLS):
        zero_hits = count if _BOOLS.get(str(raw_zero).strip().lower(), False) else 0
    elif raw_zero in ("", None):
        zero_hits = 0
    else:
        zero_hits = _int(raw_zero)
    if zero_hits is None or not 0 <= zero_hits <= count:
        report.add(
            f"{where}: zero_hits",
            f"expected true/false or an integer between 0 and count ({count}), found {raw_zero!r}",
        )
        return None
    locale = record.get("locale") or ""
    if not isinstance(locale, str):
        report.add(f"{where}: locale", f"expected text, found {locale!r}")
        return None
    return LogRow(query=query, count=count, zero_hits=zero_hits, locale=locale.strip(), line=line)


_BOOLS = {"true": True, "false": False, "yes": True, "no": False}


def _int(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.fullmatch(r"\s*\d+\s*", value):
        return int(value)
    return None


# --- 2. PII ------------------------------------------------------------------------------------

_EMAIL = re.compile(r"[\w.%+-]+@[\w-]+(?:\.[\w-]+)*\.[A-Za-z]{2,}")
_CARD = re.compile(r"(?<![\d\w+])\d(?:[ -]?\d){12,18}(?![\d\w])")
_PHONE = re.compile(
    r"(?<![\w+])(?:\+\d{1,3}[ .-]?)?(?:\(\d{1,4}\)[ .-]?)?\d{2,4}(?:[ .-]\d{2,8}){1,4}(?![\w])"
    r"|\+\d{7,15}(?!\d)"
)
_DATE = re.compile(r"\d{4}-\d{1,2}-\d{1,2}|\d{1,2}[./-]\d{1,2}[./-]\d{2,4}")
_LONG_DIGITS = re.compile(r"\d{6,}")
_SPACES = re.compile(r"\s+")


def _luhn(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def strip_pii(text: str) -> tuple[str, Counter[str]]:
    """The text with personal data cut out, and how many pieces of each kind were cut."""
    found: Counter[str] = Counter()

    def cut(kind: str) -> Callable[[re.Match[str]], str]:
        def replace(match: re.Match[str]) -> str:
            found[kind] += 1
            return " "

        return replace

    def card(match: re.Match[str]) -> str:
        # 13-19 digits failing the Luhn check are still an account or order number: a digit run.
        found["card" if _luhn(re.sub(r"\D", "", match.group())) else "digits"] += 1
        return " "

    def phone(match: re.Match[str]) -> str:
        value = match.group()
        digits = re.sub(r"\D", "", value)
        if _DATE.fullmatch(value) or not 7 <= len(digits) <= 15:
            return value
        found["phone"] += 1
        return " "

    text = _EMAIL.sub(cut("email"), text)
    text = _CARD.sub(card, text)
    text = _PHONE.sub(phone, text)
    text = _LONG_DIGITS.sub(cut("digits"), text)
    return _SPACES.sub(" ", text).strip(), found


# --- 3. normalisation and deduplication ---------------------------------------------------------


def normalize(text: str) -> str:
    return _SPACES.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


@dataclass(slots=True)
class CleanResult:
    queries: list[LogQuery]
    pii: Counter[str]
    queries_with_pii: int
    empty_after_stripping: int
    blank: int
    rows: int
    duplicates_merged: int


def clean(rows: Iterable[LogRow]) -> CleanResult:
    """Strip PII from every row, drop the empty ones, merge duplicates (per locale, after normalising)."""
    pii: Counter[str] = Counter()
    with_pii = empty = blank = n_rows = 0
    spellings: dict[tuple[str, str], Counter[str]] = {}
    counts: Counter[tuple[str, str]] = Counter()
    zero: Counter[tuple[str, str]] = Counter()
    for row in rows:
        n_rows += 1
        if not row.query.strip():
            blank += 1
            continue
        text, found = strip_pii(row.query)
        if found:
            with_pii += 1
            pii.update(found)
        if not text:
            empty += 1
            continue
        key = (row.locale, normalize(text))
        spellings.setdefault(key, Counter())[text] += row.count
        counts[key] += row.count
        zero[key] += row.zero_hits
    queries = [
        LogQuery(
            # The spelling most people typed; ties go to the alphabetically first for determinism.
            text=min(spelled.items(), key=lambda kv: (-kv[1], kv[0]))[0],
            norm=key[1],
            locale=key[0],
            count=counts[key],
            zero_hits=zero[key],
            variants=len(spelled),
        )
        for key, spelled in spellings.items()
    ]
    kept_rows = n_rows - blank - empty
    return CleanResult(
        queries=sorted(queries, key=_traffic_order),
        pii=pii,
        queries_with_pii=with_pii,
        empty_after_stripping=empty,
        blank=blank,
        rows=n_rows,
        duplicates_merged=kept_rows - len(queries),
    )


def _traffic_order(q: LogQuery) -> tuple[int, str, str]:
    return (-q.count, q.norm, q.locale)


# --- 4. strata ----------------------------------------------------------------------------------


def assign_strata(
    queries: Sequence[LogQuery], *, head_share: float = HEAD_SHARE, torso_share: float = TORSO_SHARE
) -> dict[LogQuery, str]:
    """head / torso / tail by cumulative traffic share, most searched first (see the module docstring)."""
    total = sum(q.count for q in queries)
    strata: dict[LogQuery, str] = {}
    before = 0
    for q in sorted(queries, key=_traffic_order):
        share = before / total if total else 1.0
        strata[q] = "head" if share < head_share else "torso" if share < head_share + torso_share else "tail"
        before += q.count
    return strata


# --- 5. sampling --------------------------------------------------------------------------------


def sample(
    queries: Sequence[LogQuery],
    *,
    cap: int,
    reserve_share: float = DEFAULT_RESERVE_SHARE,
    stratum_shares: Mapping[str, float] | None = None,
    zero_hit_min_share: float = DEFAULT_ZERO_HIT_MIN_SHARE,
    seed: int = 0,
) -> SampleResult:
    """At most `cap` queries: the known-failure reserve first, then head/torso/tail by their shares."""
    if cap < 0:
        raise ValueError(f"cap must be >= 0, got {cap}")
    if not 0 <= reserve_share <= 1:
        raise ValueError(f"reserve_share must be within 0..1, got {reserve_share}")
    shares = dict(stratum_shares or {s: 1 / 3 for s in STRATA})
    if set(shares) - set(STRATA) or any(v < 0 for v in shares.values()) or not sum(shares.values()):
        raise ValueError(
            f"stratum_shares must give non-negative shares for {', '.join(STRATA)}, got {shares}"
        )
    rng = random.Random(seed)
    strata = assign_strata(queries)
    ordered = sorted(queries, key=_traffic_order)
    total = min(cap, len(ordered))
    failures = [q for q in ordered if q.count and q.zero_hit_share >= zero_hit_min_share]
    n_reserved = min(round(total * reserve_share), len(failures))
    reserved = set(rng.sample(failures, n_reserved))
    by_stratum = {s: [q for q in ordered if strata[q] == s and q not in reserved] for s in STRATA}
    quota = _allocate(total - n_reserved, shares, {s: len(v) for s, v in by_stratum.items()})
    picked: set[LogQuery] = set(reserved)
    for s in STRATA:
        picked.update(rng.sample(by_stratum[s], quota[s]))
    selected = [
        SampledQuery(query=q, stratum=strata[q], reserved=q in reserved) for q in ordered if q in picked
    ]
    available = {s: sum(1 for q in ordered if strata[q] == s) for s in STRATA}
    available["failures"] = len(failures)
    taken = {s: sum(1 for x in selected if x.stratum == s) for s in STRATA}
    taken["reserved"] = n_reserved
    return SampleResult(selected=selected, available=available, taken=taken)


def _allocate(n: int, shares: Mapping[str, float], capacity: Mapping[str, int]) -> dict[str, int]:
    """Split n places by share (largest remainder), never above a stratum's capacity; spill the rest over."""
    quota = dict.fromkeys(STRATA, 0)
    left = n
    while left > 0:
        open_strata = [s for s in STRATA if quota[s] < capacity[s] and shares.get(s, 0) > 0]
        if not open_strata:
            open_strata = [s for s in STRATA if quota[s] < capacity[s]]
        if not open_strata:
            break
        weight = sum(shares.get(s, 0) for s in open_strata) or len(open_strata)
        exact = {s: left * (shares.get(s, 0) or 1) / weight for s in open_strata}
        give = {s: min(int(exact[s]), capacity[s] - quota[s]) for s in open_strata}
        if not sum(give.values()):
            # Less than one place per stratum left: hand them out by largest remainder.
            best = max(
                open_strata, key=lambda s: (exact[s] - int(exact[s]), shares.get(s, 0), -STRATA.index(s))
            )
            give = {best: 1}
        for s, g in give.items():
            quota[s] += g
            left -= g
    return quota
