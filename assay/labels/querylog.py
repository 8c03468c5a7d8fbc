"""Query logs into golden-set candidates (pure, no Django): parse, strip PII, dedupe, band, sample.

The pipeline, in order:
1. `parse_log`: CSV (header `query,count[,zero_hits][,locale][,vertical]`) or JSONL (one object per line
   with those keys). `count` is a non-negative integer up to MAX_COUNT; `zero_hits` is how many of those
   searches returned nothing (an integer <= count, or true/false meaning all/none of them); `locale` may be
   empty; the product vertical (billing, docs: the query's stratum) comes in a `vertical` or a `stratum`
   column and may be empty.
2. `strip_pii`: a URL's query string (`?email=...&token=...`, names and values), emails, secret-like
   tokens (API keys by their prefixes, JSON web tokens, long hex and base64 runs), IPv4 and IPv6
   addresses, card numbers (13-19 digits passing the Luhn check), phone numbers (7-15 digits in the
   usual groupings, ISO dates excepted) and long digit runs (6+ digits: order and account numbers) are
   cut out whole; what was cut is counted per kind, and the first few rows changed are kept as before
   and after samples (docs/labeling.md lists what is and is not removed). A query left empty is
   dropped.
3. `dedupe`: queries equal after normalisation (NFKC, case-folded, whitespace collapsed) within one
   locale are one query; counts add up; the most frequent spelling is kept as the text, and the vertical
   most of its searches were logged under as its vertical.
4. `assign_bands`: the traffic band, most searched first: head = the queries making the first 50% of all
   searches, torso the next 30%, tail the rest (a query belongs to the band its first search falls in).
5. `sample`: up to `cap` queries. A share (`reserve_share`, default 15%) is reserved for known
   failures: queries whose searches returned nothing at least `zero_hit_min_share` of the time (their
   failure mode is `zero-results`). The rest is split between head, torso and tail by `band_shares`
   (default equal thirds, so popular navigational queries cannot drown rare support queries); a band
   with too few queries gives its unused places to the others. Deterministic for a given seed.

The band and the vertical stay apart: a query's stratum is its vertical, never its band.
"""

from __future__ import annotations

import csv
import hashlib
import io
import ipaddress
import random
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from assay.display import in_number
from assay.golden.model import TRAFFIC_BANDS
from assay.inputs import whole_number
from assay.jsonin import JsonInputError, json_loads
from assay.problems import ImportReport, decode_utf8
from assay.storable import SURROGATE, text_problem

BANDS = TRAFFIC_BANDS
HEAD_SHARE = 0.5
TORSO_SHARE = 0.3
DEFAULT_RESERVE_SHARE = 0.15
DEFAULT_ZERO_HIT_MIN_SHARE = 0.5
REQUIRED_COLUMNS = ("query", "count")
VERTICAL_COLUMNS = ("vertical", "stratum")  # either name; not both
OPTIONAL_COLUMNS = ("zero_hits", "locale", *VERTICAL_COLUMNS)
HEADER = "query,count[,zero_hits][,locale][,vertical]"
# A vertical becomes a query's stratum, which holds at most this many characters; a query's text and
# locale their columns' (labeling.models.Query: tests/config/test_storable_writes.py holds them equal).
MAX_VERTICAL = 100
MAX_QUERY = 1000
MAX_LOCALE = 35
# A query's searches in one log: far past any real log, and a count's float weight stays exact.
MAX_COUNT = 10**15
# The failure mode of a query in the known-failure reserve: it returned nothing (docs/labeling.md).
ZERO_RESULTS = "zero-results"
PII_KINDS = ("url query", "email", "secret", "ip", "card", "phone", "digits")
PII_SAMPLES = 5  # rows shown before and after their PII was cut, on the import's report


@dataclass(frozen=True, slots=True)
class LogRow:
    query: str
    count: int
    zero_hits: int
    locale: str
    line: int
    vertical: str = ""


@dataclass(frozen=True, slots=True)
class LogQuery:
    """One distinct query after PII stripping and deduplication."""

    text: str
    norm: str
    locale: str
    count: int
    zero_hits: int
    variants: int = 1
    vertical: str = ""  # the vertical most of its searches were logged under; "" when the log has none

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
    band: str
    reserved: bool  # taken from the known-failure reserve

    @property
    def failure_mode(self) -> str | None:
        """The reserve holds the queries that returned nothing: that is their failure mode."""
        return ZERO_RESULTS if self.reserved else None


@dataclass(slots=True)
class SampleResult:
    selected: list[SampledQuery]
    available: dict[str, int] = field(default_factory=dict)  # per band, plus "failures"
    taken: dict[str, int] = field(default_factory=dict)  # per band, plus "reserved"


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
        report.add("line 1", f"the file is empty; expected a header `{HEADER}`")
        return []
    except csv.Error as exc:
        report.add("line 1", f"malformed CSV header: {exc}")
        return []
    columns = [c.strip().lower() for c in header]
    missing = [c for c in REQUIRED_COLUMNS if c not in columns]
    if missing:
        report.add(
            "header",
            f"missing {in_number(len(missing), 'column')} {', '.join(missing)}; "
            f"found {', '.join(columns) or 'none'} "
            f"(expected {HEADER})",
        )
        return []
    duplicated = sorted(c for c, n in Counter(columns).items() if n > 1 and c)
    if duplicated:
        report.add("header", f"duplicate {in_number(len(duplicated), 'column')} {', '.join(duplicated)}")
        return []
    if all(c in columns for c in VERTICAL_COLUMNS):
        report.add("header", _TWO_VERTICALS)
        return []
    unknown = [c for c in columns if c not in REQUIRED_COLUMNS + OPTIONAL_COLUMNS]
    if unknown:
        report.notes.append(f"ignored {in_number(len(unknown), 'column')}: {', '.join(unknown)}")
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
            obj = json_loads(raw)
        except JsonInputError as exc:
            report.add(
                f"line {line}",
                f"malformed JSON at column {exc.column}: {exc.detail}" if exc.syntax else str(exc),
            )
            continue
        if not isinstance(obj, dict):
            report.add(f"line {line}", f"expected an object, found {type(obj).__name__}")
            continue
        missing = [c for c in REQUIRED_COLUMNS if c not in obj]
        if missing:
            report.add(f"line {line}", f"missing {in_number(len(missing), 'field')} {', '.join(missing)}")
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
    if SURROGATE.search(query):  # a JSON "\ud800" escape: no database can store it
        report.add(f"{where}: query", _NOT_UNICODE.format(query))
        return None
    # As it would be stored (PII cut out, whitespace collapsed, which only shortens it) at the longest.
    problem = text_problem(_SPACES.sub(" ", query).strip(), MAX_QUERY)
    if problem:
        report.add(f"{where}: query", problem)
        return None
    count = _int(record.get("count"))
    if count is None or count < 0:
        report.add(
            f"{where}: count",
            f"expected a non-negative integer up to {MAX_COUNT:,}, found {_shown(record.get('count'))}",
        )
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
            f"expected true/false or an integer between 0 and count ({count}), found {_shown(raw_zero)}",
        )
        return None
    locale = record.get("locale") or ""
    if not isinstance(locale, str):
        report.add(f"{where}: locale", f"expected text, found {locale!r}")
        return None
    problem = text_problem(locale.strip(), MAX_LOCALE)
    if problem:
        report.add(f"{where}: locale", problem)
        return None
    vertical = _vertical(record, where, report)
    if vertical is None:
        return None
    return LogRow(
        query=query, count=count, zero_hits=zero_hits, locale=locale.strip(), line=line, vertical=vertical
    )


_BOOLS = {"true": True, "false": False, "yes": True, "no": False}
_TWO_VERTICALS = "the vertical goes in one column, vertical or stratum, not both"
_NOT_UNICODE = "{!r} is not valid Unicode (a lone surrogate)"


def _vertical(record: Mapping[str, object], where: str, report: ImportReport) -> str | None:
    """The row's vertical ("" for none), or None after reporting why it cannot be one."""
    named = [c for c in VERTICAL_COLUMNS if c in record]
    if len(named) > 1:
        report.add(where, _TWO_VERTICALS)
        return None
    if not named or record[named[0]] is None:
        return ""
    place, value = f"{where}: {named[0]}", record[named[0]]
    if not isinstance(value, str):
        report.add(place, f"expected text, found {value!r}")
        return None
    if SURROGATE.search(value):
        report.add(place, _NOT_UNICODE.format(value))
        return None
    problem = text_problem(value.strip())
    if problem:
        report.add(place, problem)
        return None
    if len(value.strip()) > MAX_VERTICAL:
        report.add(
            place, f"at most {MAX_VERTICAL} characters (a query's stratum), found {len(value.strip())}"
        )
        return None
    return value.strip()


def _shown(value: object) -> str:
    """A found value for a message, cut short (a count may be 4,000 digits long)."""
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:37]}..."


def _int(value: object) -> int | None:
    """A count as a whole number up to MAX_COUNT (a larger one would not fit a float weight or a database
    integer), from JSON or from a CSV cell's ASCII digits; None otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value <= MAX_COUNT else None
    if isinstance(value, str):
        return whole_number(value.strip(), high=MAX_COUNT)
    return None


# --- 2. PII ------------------------------------------------------------------------------------

# A URL's query string, from `?` to the next blank: its values carry emails, tokens and session ids,
# and its names say what the values were (`?email=`), so both go.
_URL_QUERY = re.compile(r"\?[^\s?#=&]+=\S*")
_EMAIL = re.compile(r"[\w.%+-]+@[\w-]+(?:\.[\w-]+)*\.[A-Za-z]{2,}")
# Credentials by the prefixes their issuers give them (Stripe, OpenAI, GitHub, AWS access key ids,
# Slack, GitLab, Google API keys) and JSON web tokens.
_SECRET_PREFIXED = re.compile(
    r"(?<![\w-])(?:"
    r"(?:sk|pk|rk)_(?:live|test)_[A-Za-z0-9]{6,}|(?:sk|pk|rk|whsec)_[A-Za-z0-9]{12,}"
    r"|sk-[A-Za-z0-9_-]{16,}"
    r"|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_\w{20,}"
    r"|(?:AKIA|ASIA)[0-9A-Z]{16}"
    r"|xox[abprs]-[A-Za-z0-9-]{10,}"
    r"|glpat-[\w-]{20,}"
    r"|AIza[\w-]{35}"
    r"|eyJ[\w-]{8,}\.[\w-]{8,}\.[\w-]{8,}"
    r")"
)
# Unprefixed secrets: 16+ hex digits mixing digits and letters (hashes, hex keys), and 20+ base64
# characters mixing digits, lower and upper case (a word or a model name rarely does all three).
_HEX_RUN = re.compile(r"(?<![\w+/-])(?=[0-9a-fA-F]*\d)(?=[0-9a-fA-F]*[a-fA-F])[0-9a-fA-F]{16,}(?![\w+/-])")
_BASE64_RUN = re.compile(
    r"(?<![\w+/=-])(?=[\w+/-]*\d)(?=[\w+/-]*[a-z])(?=[\w+/-]*[A-Z])[A-Za-z0-9+/_-]{20,}={0,2}(?![\w+/=-])"
)
# Candidates, each confirmed by `ipaddress` (so a time such as 10:30:00 or a version 1.2.300.4 stays).
_IPV6 = re.compile(
    r"(?<![\w:.])(?:[0-9A-Fa-f]{0,4}:){2,7}(?:(?:\d{1,3}\.){3}\d{1,3}|[0-9A-Fa-f]{1,4})?(?:%[\w.]+)?(?![\w:.])"
)
_IPV4 = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?!\w|\.\d)")
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


def _is_ip(value: str) -> bool:
    try:
        ipaddress.ip_address(value.split("%", 1)[0])
    except ValueError:
        return False
    return any(ch.isalnum() for ch in value)


def strip_pii(text: str) -> tuple[str, Counter[str]]:
    """The text with personal data cut out, and how many pieces of each kind were cut."""
    found: Counter[str] = Counter()

    def cut(kind: str) -> Callable[[re.Match[str]], str]:
        def replace(match: re.Match[str]) -> str:
            found[kind] += 1
            return " "

        return replace

    def address(match: re.Match[str]) -> str:
        if not _is_ip(match.group()):
            return match.group()
        found["ip"] += 1
        return " "

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

    # In this order: a query string or an email holds what the later patterns would cut in pieces
    # (`?ip=10.0.0.1` would leave `?ip=`), and a token's or an address's digits are not a phone number.
    text = _URL_QUERY.sub(cut("url query"), text)
    text = _EMAIL.sub(cut("email"), text)
    for secret in (_SECRET_PREFIXED, _HEX_RUN, _BASE64_RUN):
        text = secret.sub(cut("secret"), text)
    text = _IPV6.sub(address, text)
    text = _IPV4.sub(address, text)
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
    several_verticals: int = 0  # distinct queries logged under more than one vertical
    # The first PII_SAMPLES distinct rows changed, (before, after): what the import's report shows.
    samples: list[tuple[str, str]] = field(default_factory=list)


def clean(rows: Iterable[LogRow]) -> CleanResult:
    """Strip PII from every row, drop the empty ones, merge duplicates (per locale, after normalising)."""
    pii: Counter[str] = Counter()
    with_pii = empty = blank = n_rows = 0
    samples: list[tuple[str, str]] = []
    spellings: dict[tuple[str, str], Counter[str]] = {}
    counts: Counter[tuple[str, str]] = Counter()
    zero: Counter[tuple[str, str]] = Counter()
    verticals: dict[tuple[str, str], Counter[str]] = {}
    for row in rows:
        n_rows += 1
        if not row.query.strip():
            blank += 1
            continue
        text, found = strip_pii(row.query)
        if found:
            with_pii += 1
            pii.update(found)
            if len(samples) < PII_SAMPLES and (row.query, text) not in samples:
                samples.append((row.query, text))
        if not text:
            empty += 1
            continue
        key = (row.locale, normalize(text))
        spellings.setdefault(key, Counter())[text] += row.count
        counts[key] += row.count
        zero[key] += row.zero_hits
        if row.vertical:
            verticals.setdefault(key, Counter())[row.vertical] += row.count
    queries = [
        LogQuery(
            # The spelling most people typed, and the vertical most searches were logged under.
            text=_most_searched(spelled),
            norm=key[1],
            locale=key[0],
            count=counts[key],
            zero_hits=zero[key],
            variants=len(spelled),
            vertical=_most_searched(verticals[key]) if key in verticals else "",
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
        several_verticals=sum(len(v) > 1 for v in verticals.values()),
        samples=samples,
    )


def _most_searched(searches: Counter[str]) -> str:
    """The value most searches carried; ties go to the alphabetically first, for determinism."""
    return min(searches.items(), key=lambda kv: (-kv[1], kv[0]))[0]


def _traffic_order(q: LogQuery) -> tuple[int, str, str]:
    return (-q.count, q.norm, q.locale)


# --- 4. traffic bands --------------------------------------------------------------------------


def assign_bands(
    queries: Sequence[LogQuery], *, head_share: float = HEAD_SHARE, torso_share: float = TORSO_SHARE
) -> dict[LogQuery, str]:
    """head / torso / tail by cumulative traffic share, most searched first (see the module docstring)."""
    total = sum(q.count for q in queries)
    bands: dict[LogQuery, str] = {}
    before = 0
    for q in sorted(queries, key=_traffic_order):
        share = before / total if total else 1.0
        bands[q] = "head" if share < head_share else "torso" if share < head_share + torso_share else "tail"
        before += q.count
    return bands


# --- 5. sampling --------------------------------------------------------------------------------


def sample(
    queries: Sequence[LogQuery],
    *,
    cap: int,
    reserve_share: float = DEFAULT_RESERVE_SHARE,
    band_shares: Mapping[str, float] | None = None,
    zero_hit_min_share: float = DEFAULT_ZERO_HIT_MIN_SHARE,
    seed: int = 0,
    bands: Mapping[LogQuery, str] | None = None,
) -> SampleResult:
    """At most `cap` queries: the known-failure reserve first, then head/torso/tail by their shares.

    `bands` gives each query its band when they were assigned over more traffic than `queries` (the
    whole log, of which these are the queries not yet in the set); by default `assign_bands(queries)`.
    """
    if cap < 0:
        raise ValueError(f"cap must be >= 0, got {cap}")
    if not 0 <= reserve_share <= 1:
        raise ValueError(f"reserve_share must be within 0..1, got {reserve_share}")
    shares = dict(band_shares or {b: 1 / 3 for b in BANDS})
    if set(shares) - set(BANDS) or any(v < 0 for v in shares.values()) or not sum(shares.values()):
        raise ValueError(f"band_shares must give non-negative shares for {', '.join(BANDS)}, got {shares}")
    rng = random.Random(seed)
    band_of = assign_bands(queries) if bands is None else bands
    ordered = sorted(queries, key=_traffic_order)
    total = min(cap, len(ordered))
    failures = [q for q in ordered if q.count and q.zero_hit_share >= zero_hit_min_share]
    n_reserved = min(round(total * reserve_share), len(failures))
    reserved = set(rng.sample(failures, n_reserved))
    by_band = {b: [q for q in ordered if band_of[q] == b and q not in reserved] for b in BANDS}
    quota = _allocate(total - n_reserved, shares, {b: len(v) for b, v in by_band.items()})
    picked: set[LogQuery] = set(reserved)
    for b in BANDS:
        picked.update(rng.sample(by_band[b], quota[b]))
    selected = [
        SampledQuery(query=q, band=band_of[q], reserved=q in reserved) for q in ordered if q in picked
    ]
    available = {b: sum(1 for q in ordered if band_of[q] == b) for b in BANDS}
    available["failures"] = len(failures)
    taken = {b: sum(1 for x in selected if x.band == b) for b in BANDS}
    taken["reserved"] = n_reserved
    return SampleResult(selected=selected, available=available, taken=taken)


def _allocate(n: int, shares: Mapping[str, float], capacity: Mapping[str, int]) -> dict[str, int]:
    """Split n places by share (largest remainder), never above a band's capacity; spill the rest over."""
    quota = dict.fromkeys(BANDS, 0)
    left = n
    while left > 0:
        open_bands = [b for b in BANDS if quota[b] < capacity[b] and shares.get(b, 0) > 0]
        if not open_bands:
            open_bands = [b for b in BANDS if quota[b] < capacity[b]]
        if not open_bands:
            break
        weight = sum(shares.get(b, 0) for b in open_bands) or len(open_bands)
        exact = {b: left * (shares.get(b, 0) or 1) / weight for b in open_bands}
        give = {b: min(int(exact[b]), capacity[b] - quota[b]) for b in open_bands}
        if not sum(give.values()):
            # Less than one place per band left: hand them out by largest remainder.
            best = max(
                open_bands, key=lambda b: (exact[b] - int(exact[b]), shares.get(b, 0), -BANDS.index(b))
            )
            give = {best: 1}
        for b, g in give.items():
            quota[b] += g
            left -= g
    return quota
