"""Which addresses Assay may reach (pure, no Django): one policy for every outbound address.

Every address Assay calls is typed by a user of the server and called from inside the operator's network:
search targets (`assay.harness`), candidate pools from live endpoints (the harness too), machine judges
(`assay.judge.client`), run-notification webhooks (`evaluation.runs.services.notifications`) and git export
remotes (`assay.git_remote`). Left open, `http://169.254.169.254/latest/meta-data/` or
`http://10.0.0.5/admin` would let anyone who can save one read what only the server can reach. So they may
reach public addresses only, unless the operator sets `ASSAY_TARGET_ALLOW_PRIVATE=true` (the name is older
than the policy's reach: it covers every kind above; `make run` sets it for the demo on loopback).

The policy is applied twice:

- to the URL, when it is saved and again when it is used (`url_problem`): its host is read the way each
  HTTP stack reads it (yarl for aiohttp, httpx's parser, urllib3's for dulwich; also `urlsplit`), and each
  reading is normalised as a resolver would (NFKC, so `１２７.０.０.１` and `①②⑦.⓪.⓪.①` are 127.0.0.1; the
  ideographic full stops `。．｡` are dots; trailing dots, IPv6 brackets and zone ids go; the short, decimal,
  hex and octal forms `inet_aton` accepts, such as `127.1`, `2130706433`, `0x7f000001` and `0177.0.0.1`,
  are addresses) before it is judged: a reading that is a refused address, or `localhost`, refuses the URL.
  A host **name** passes here;
- to the address actually connected to, on every new connection (`public_socket`, `public_connection`,
  used by each client's connector in `assay.outbound` and `assay.harness_http`), so a name that resolves to a
  private address, or is re-pointed at one later, is refused too, and so is any literal that some parser
  read differently from the check above.
"""

from __future__ import annotations

import ipaddress
import os
import re
import socket
import stringprep
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal
from urllib.parse import unquote

from assay.urls import split_url

ALLOW_PRIVATE_ENV = "ASSAY_TARGET_ALLOW_PRIVATE"
_TRUE = frozenset({"true", "1", "yes", "on"})
_FALSE = frozenset({"false", "0", "no", "off", ""})
# NAT64 (RFC 6052): an IPv6 address that a gateway turns into the IPv4 address in its last 32 bits; the
# local-use prefix (RFC 8215) is subnetted by the operator, /48 to /96.
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_LOCAL_NAT64 = ipaddress.ip_network("64:ff9b:1::/48")
_TRANSLATED = ipaddress.ip_network("::ffff:0:0:0/96")  # SIIT's IPv4-translated addresses (RFC 2765)
_COMPATIBLE = ipaddress.ip_network("::/96")  # IPv4-compatible (RFC 4291, deprecated, still parsed)
# RFC 6052's placements of the IPv4 address for prefixes of 48, 56, 64 and 96 bits: (the bytes holding
# it, the bytes after it that must be zero). Bits 64-71 (byte 8) are always zero below /96.
_RFC6052 = (
    ((6, 7, 9, 10), (8, *range(11, 16))),
    ((7, 9, 10, 11), (8, *range(12, 16))),
    ((9, 10, 11, 12), (8, *range(13, 16))),
    ((12, 13, 14, 15), ()),
)
# The label separators IDNA (UTS 46) maps to ".": the ideographic full stop and its full- and half-width
# forms. NFKC maps only U+FF0E, and U+FF61 to U+3002, so all three are translated by hand.
_DOTS = str.maketrans({"\u3002": ".", "\uff0e": ".", "\uff61": "."})
# What `inet_aton` (and so getaddrinfo) reads as an IPv4 address besides the dotted quad: 127.1,
# 2130706433, 0x7f000001, 0177.0.0.1. Only these characters, so a name is never taken for one.
_INET_ATON = re.compile(r"^[0-9a-fx.]+$")
# Variation selectors beyond the Basic Multilingual Plane: UTS 46 ignores them like those of table B.1.
_VARIATION_SELECTORS = range(0xE0100, 0xE01F0)

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Client = Literal["aiohttp", "httpx", "urllib3"]


class AddressRefused(OSError):
    """A connection refused by the policy; an OSError so the transport reports it like a failed connect."""


def private_targets_allowed(environ: Mapping[str, str] | None = None, *, default: bool = False) -> bool:
    """`ASSAY_TARGET_ALLOW_PRIVATE` as a boolean (`default` when it is not set); ValueError for a value
    that is neither true nor false."""
    env = os.environ if environ is None else environ
    if ALLOW_PRIVATE_ENV not in env:
        return default
    value = env[ALLOW_PRIVATE_ENV].strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ValueError(f"{ALLOW_PRIVATE_ENV}={value!r}: expected true or false")


def embedded_ipv4(address: IPAddress) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address carries and some part of the network reaches instead of it:
    IPv4-mapped (`::ffff:0:0/96`, the host's own stack) and IPv4-translated (`::ffff:0:0:0/96`), NAT64
    (`64:ff9b::/96` and the local-use `64:ff9b:1::/48`, a translator), 6to4 (`2002::/16`, bits 16-48, a
    relay), Teredo (`2001::/32`, the client: the last 32 bits inverted) and IPv4-compatible (`::/96`
    but `::` and `::1`). The local-use prefix's length is the operator's choice, so each RFC 6052 reading
    whose remaining bits are zero is given. Empty for any other address."""
    if isinstance(address, ipaddress.IPv4Address):
        return []
    packed = address.packed
    if address.ipv4_mapped is not None:  # ::ffff:10.0.0.5 reaches 10.0.0.5
        return [address.ipv4_mapped]
    if address.sixtofour is not None:
        return [address.sixtofour]
    if address.teredo is not None:
        return [address.teredo[1]]
    if address in _NAT64 or address in _TRANSLATED or (address in _COMPATIBLE and int(address) > 1):
        return [ipaddress.IPv4Address(packed[12:])]
    if address in _LOCAL_NAT64:
        return [
            ipaddress.IPv4Address(bytes(packed[i] for i in where))
            for where, rest in _RFC6052
            if not any(packed[i] for i in rest)
        ]
    return []


def _own_kind(address: IPAddress) -> str | None:
    if address.is_unspecified:
        return "unspecified"
    if address.is_loopback:
        return "loopback"
    if address.is_link_local:
        return "link-local"
    if address.is_private or (isinstance(address, ipaddress.IPv6Address) and address.is_site_local):
        return "private"
    if address.is_multicast or address.is_reserved or not address.is_global:
        return "reserved (multicast, shared or otherwise not public)"
    return None


def address_kind(address: IPAddress) -> str | None:
    """The kind of non-public address this is ("loopback", "private", ...), None for a public one. An
    IPv6 address that embeds IPv4 addresses (`embedded_ipv4`) is judged by them: refused as the first
    refused one is, public when all are."""
    embedded = embedded_ipv4(address)
    for inner in embedded:
        if kind := _own_kind(inner):
            return kind
    return None if embedded else _own_kind(address)


def _refusal(what: str, kind: str) -> str:
    article = "an" if kind[0] in "aeiou" else "a"
    return (
        f"{what} is {article} {kind} address; Assay may reach public addresses only "
        f"(the operator allows private ones with {ALLOW_PRIVATE_ENV}=true)"
    )


def _ignored(char: str) -> bool:
    """A character IDNA maps to nothing (a resolver looks the name up without it): every format character
    (Unicode category Cf: the soft hyphen U+00AD, zero-width U+200B-U+200D, the word joiner U+2060, the
    byte order mark U+FEFF, tags...), and IDNA 2003's table B.1 (U+034F, variation selectors...)."""
    return (
        unicodedata.category(char) == "Cf"
        or stringprep.in_table_b1(char)
        or ord(char) in _VARIATION_SELECTORS
    )


def without_ignored(text: str) -> str:
    """`text` without the characters a resolver ignores (`_ignored`)."""
    return "".join(char for char in text if not _ignored(char)) if not text.isascii() else text


def visible(text: str) -> str:
    """`text` with each character a resolver ignores spelled as `\\u00ad`: a person reading a refusal
    cannot see the character they typed by mistake (or were handed)."""
    if text.isascii():
        return text
    return "".join(f"\\u{ord(char):04x}" if _ignored(char) else char for char in text)


def normalise_host(host: str) -> str:
    """A URL's host as a resolver reads it: percent-decoded, without the characters IDNA ignores (soft
    hyphens, zero-width and other format characters), NFKC (full-width, circled and other compatible
    digits become ASCII), the ideographic full stops as dots, lower case, without IPv6 brackets, an IPv6
    zone id (`fe80::1%eth0`) or trailing dots."""
    text = without_ignored(unquote(host)).strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    text = unicodedata.normalize("NFKC", text.translate(_DOTS)).translate(_DOTS).lower()
    if ":" in text:
        text = text.split("%", 1)[0]
    return text.rstrip(".")


def literal_address(host: str) -> IPAddress | None:
    """The address a normalised host stands for when it is an address literal (every form getaddrinfo
    reads without asking DNS), else None."""
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    if host.isascii() and _INET_ATON.match(host):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return None
    return None


def _judged(host: str, shown: str | None) -> tuple[str, str, IPAddress | None]:
    """The host normalised, its words in a message, and the address it is when it is a literal."""
    bare = normalise_host(host)
    if shown is None:
        typed = visible(host)
        shown = f"host {typed}" if bare == host.strip("[]").lower() else f"host {typed} (read as {bare})"
    return bare, shown, literal_address(bare)


def _name_problem(bare: str, shown: str, address: IPAddress | None) -> str | None:
    if address is not None:
        return None
    try:  # an empty label (`a..b`), one past 63 characters, a code point IDNA refuses
        bare.encode("idna")
    except UnicodeError:
        return f"{shown} is not a valid host name"
    return None


def host_problem(host: str, *, shown: str | None = None) -> str | None:
    """Why a URL's host may not be called, judged without DNS after `normalise_host`: an address literal
    of a refused kind, a `localhost` name (which resolves to loopback by convention, RFC 6761), or a name
    no resolver can look up. None otherwise (a name: judged by what it resolves to, on each connection).
    `shown` replaces "host <host>" in the message where the host must not be shown (a secret URL's)."""
    bare, shown, address = _judged(host, shown)
    if bare == "localhost" or bare.endswith(".localhost"):
        return _refusal(shown, "loopback")
    if address is None:
        return _name_problem(bare, shown, address)
    kind = address_kind(address)
    return _refusal(shown, kind) if kind else None


def _reading(client: str) -> Callable[[str], str | None]:
    if client == "aiohttp":
        from yarl import URL

        return lambda url: URL(url).host
    if client == "httpx":
        import httpx

        return lambda url: httpx.URL(url).host
    import urllib3.util

    return lambda url: urllib3.util.parse_url(url).host


def url_hosts(url: str, clients: Iterable[Client] = ()) -> list[str]:
    """Every reading of the URL's host: `assay.urls.split_url`'s and each client library's (the string
    that client resolves and connects to). A parser that refuses the URL gives no reading; that client
    would not call it either."""
    readings: list[str] = []
    for read in (lambda u: split_url(u).host, *(_reading(client) for client in clients)):
        try:
            readings.append(read(url) or "")
        except Exception:  # noqa: S112  (each library raises its own kind of parse error)
            continue
    return list(dict.fromkeys(r for r in readings if r))


def url_problem(
    url: str,
    *,
    clients: Iterable[Client] = (),
    allow_private: bool | None = None,
    shown: str | None = None,
) -> str | None:
    """Why the policy refuses to call this URL (None when it may be called): `host_problem` of every
    reading of its host (`url_hosts`) by `clients` (the libraries that will call it), so no parser's view
    of the host escapes the check; when private addresses are allowed, only a name no resolver can look
    up. The URL's syntax is `assay.urls.split_url`'s to judge; `shown` as for `host_problem`."""
    allowed = private_targets_allowed() if allow_private is None else allow_private
    for host in url_hosts(url, clients):
        problem = _name_problem(*_judged(host, shown)) if allowed else host_problem(host, shown=shown)
        if problem:
            return problem
    return None


def resolved_problem(host: str, resolved: str) -> str | None:
    """Why one address a host resolved to (or the address a literal host is) may not be connected to;
    None when it may."""
    try:
        address = ipaddress.ip_address(resolved.split("%", 1)[0])
    except ValueError:
        return f"host {host} resolved to {resolved!r}, which is not an IP address"
    kind = address_kind(address)
    if not kind:
        return None
    what = f"address {resolved}" if host == resolved else f"host {host} resolves to {resolved}, which"
    return _refusal(what, kind)


def name_problem(host: str, port: int = 0) -> str | None:
    """Why a host may not be connected to, judged before a client that resolves it on its own (ssh, git://)
    is started: `host_problem`, then each address its DNS answer gives now. The client looks the name up
    again, so a name re-pointed in between is not caught here; HTTP clients check at connect instead."""
    if problem := host_problem(host):
        return problem
    try:
        found = socket.getaddrinfo(normalise_host(host), port, 0, socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return None  # unresolvable: the client reports that in its own words
    for info in found:
        if problem := resolved_problem(host, str(info[4][0])):
            return problem
    return None


def refused_in(exc: BaseException) -> AddressRefused | None:
    """The policy's refusal somewhere in a client library's wrapped exception (its causes and contexts,
    and urllib3's `reason`), else None."""
    seen: set[int] = set()
    pending: list[BaseException | None] = [exc]
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, AddressRefused):
            return current
        reason = getattr(current, "reason", None)
        pending += [
            current.__cause__,
            current.__context__,
            reason if isinstance(reason, BaseException) else None,
        ]
    return None


def public_socket(addr_info: tuple[Any, ...]) -> socket.socket:
    """A socket for one address aiohttp is about to connect to (its connector's `socket_factory`), or
    AddressRefused for an address the policy refuses. aiohttp calls it for address literals too, which
    never pass through its resolver."""
    family, type_, proto, _canonname, sockaddr = addr_info
    if problem := resolved_problem(str(sockaddr[0]), str(sockaddr[0])):
        raise AddressRefused(problem)
    return socket.socket(family=family, type=type_, proto=proto)


def public_connection(
    address: tuple[str, int],
    timeout: Any = socket._GLOBAL_DEFAULT_TIMEOUT,  # type: ignore[attr-defined]
    source_address: tuple[str, int] | None = None,
    socket_options: Iterable[tuple[int, int, int | bytes]] | None = None,
) -> socket.socket:
    """`socket.create_connection` that connects only to addresses the policy allows: the host is resolved
    once, refused addresses are dropped (AddressRefused when none is left) and the socket connects to an
    allowed address itself, so no second lookup can answer differently. For the blocking clients (httpx
    through httpcore, urllib3 under dulwich); `timeout` is a number, None, or either library's "default"
    marker, which leaves the socket's default."""
    host, port = address
    try:
        found = socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM)
    except UnicodeError as exc:  # a label the IDNA codec refuses: for the clients, a failed lookup
        raise socket.gaierror(socket.EAI_NONAME, f"host {host!r} is not a valid host name") from exc
    allowed = [info for info in found if resolved_problem(host, str(info[4][0])) is None]
    if not allowed:
        refused = str(found[0][4][0]) if found else host
        raise AddressRefused(resolved_problem(host, refused) or f"host {host}: no address to connect to")
    error: OSError | None = None
    for family, type_, proto, _canonname, sockaddr in allowed:
        sock = socket.socket(family, type_, proto)
        try:
            if timeout is None or isinstance(timeout, int | float):
                sock.settimeout(timeout)
            if source_address is not None:
                sock.bind(source_address)
            sock.connect(sockaddr)
        except OSError as exc:
            sock.close()
            error = exc
            continue
        for option in socket_options or ():
            sock.setsockopt(*option)
        return sock
    assert error is not None
    raise error


def body_shape(content_type: str | None, size: int) -> str:
    """What an error says of a reply's body: its content type and size, never its text. The text is
    whatever the address answered (an admin page, a metadata service's keys, a webhook's echo of what
    it was sent), and errors are shown on pages: `text/html, 1543 bytes`."""
    return f"{content_type or 'no content type'}, {size} bytes"
