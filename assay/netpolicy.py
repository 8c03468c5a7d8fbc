"""Which addresses Assay may reach (pure, no Django): one policy for every outbound address.

Every address Assay calls is typed by a user of the server and called from inside the operator's network:
search targets (`assay.harness`), candidate pools from live endpoints (the harness too), machine judges
(`assay.judge.client`), run-notification webhooks (`evaluation.services.notifications`) and git export
remotes (`assay.git_export`). Left open, `http://169.254.169.254/latest/meta-data/` or
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
  used by each client's connector in `assay.outbound` and `assay.harness`), so a name that resolves to a
  private address, or is re-pointed at one later, is refused too, and so is any literal that some parser
  read differently from the check above.
"""

from __future__ import annotations

import ipaddress
import os
import re
import socket
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal
from urllib.parse import unquote, urlsplit

ALLOW_PRIVATE_ENV = "ASSAY_TARGET_ALLOW_PRIVATE"
_TRUE = frozenset({"true", "1", "yes", "on"})
_FALSE = frozenset({"false", "0", "no", "off", ""})
# NAT64 (RFC 6052): an IPv6 address that a gateway turns into the IPv4 address in its last 32 bits.
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
# The label separators IDNA (UTS 46) maps to ".": the ideographic full stop and its full- and half-width
# forms. NFKC maps only U+FF0E, and U+FF61 to U+3002, so all three are translated by hand.
_DOTS = str.maketrans({"\u3002": ".", "\uff0e": ".", "\uff61": "."})
# What `inet_aton` (and so getaddrinfo) reads as an IPv4 address besides the dotted quad: 127.1,
# 2130706433, 0x7f000001, 0177.0.0.1. Only these characters, so a name is never taken for one.
_INET_ATON = re.compile(r"^[0-9a-fx.]+$")

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


def _embedded_ipv4(address: IPAddress) -> ipaddress.IPv4Address | None:
    if isinstance(address, ipaddress.IPv4Address):
        return None
    if address.ipv4_mapped is not None:  # ::ffff:10.0.0.5 reaches 10.0.0.5
        return address.ipv4_mapped
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def address_kind(address: IPAddress) -> str | None:
    """The kind of non-public address this is ("loopback", "private", ...), None for a public one."""
    address = _embedded_ipv4(address) or address
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


def _refusal(what: str, kind: str) -> str:
    article = "an" if kind[0] in "aeiou" else "a"
    return (
        f"{what} is {article} {kind} address; Assay may reach public addresses only "
        f"(the operator allows private ones with {ALLOW_PRIVATE_ENV}=true)"
    )


def normalise_host(host: str) -> str:
    """A URL's host as a resolver reads it: percent-decoded, NFKC (full-width, circled and other compatible
    digits become ASCII), the ideographic full stops as dots, lower case, without IPv6 brackets, an IPv6
    zone id (`fe80::1%eth0`) or trailing dots."""
    text = unquote(host).strip()
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


def host_problem(host: str, *, shown: str | None = None) -> str | None:
    """Why a URL's host may not be called, judged without DNS after `normalise_host`: an address literal
    of a refused kind, a `localhost` name (which resolves to loopback by convention, RFC 6761), or a name
    no resolver can look up. None otherwise (a name: judged by what it resolves to, on each connection).
    `shown` replaces "host <host>" in the message where the host must not be shown (a secret URL's)."""
    bare = normalise_host(host)
    if shown is None:
        shown = f"host {host}" if bare == host.strip("[]").lower() else f"host {host} (read as {bare})"
    if bare == "localhost" or bare.endswith(".localhost"):
        return _refusal(shown, "loopback")
    address = literal_address(bare)
    if address is None:
        if not bare.isascii():
            try:
                bare.encode("idna")
            except UnicodeError:
                return f"{shown} is not a valid host name"
        return None
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
    """Every reading of the URL's host: `urlsplit`'s and each client library's (the string that client
    resolves and connects to). A parser that refuses the URL gives no reading; that client would not
    call it either."""
    readings: list[str] = []
    for read in (lambda u: urlsplit(u).hostname, *(_reading(client) for client in clients)):
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
    """Why the policy refuses to call this URL (None when it may be called, or when private addresses are
    allowed): `host_problem` of every reading of its host (`url_hosts`) by `clients` (the libraries that
    will call it), so no parser's view of the host escapes the check. The URL's syntax is its caller's to
    judge; `shown` as for `host_problem`."""
    allowed = private_targets_allowed() if allow_private is None else allow_private
    if allowed:
        return None
    for host in url_hosts(url, clients):
        if problem := host_problem(host, shown=shown):
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
