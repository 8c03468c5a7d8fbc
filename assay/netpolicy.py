"""Which addresses a search target may reach (pure, no Django).

A target's URL is typed by a user of the server and called by its workers, inside the operator's network:
left open, `http://169.254.169.254/latest/meta-data/` or `http://10.0.0.5/admin` would let anyone who can
save a target read what only the server can reach. So a target may reach public addresses only, unless
the operator sets `ASSAY_TARGET_ALLOW_PRIVATE=true` (`make run` does, for the demo's search service on
loopback). The harness applies it twice: to the URL's host when a target is saved or a run is configured
(`host_problem`), and to every address a host name resolves to, on each new connection
(`assay.harness`), so a name that resolves to a private address, or is re-pointed at one later, is
refused too.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping

ALLOW_PRIVATE_ENV = "ASSAY_TARGET_ALLOW_PRIVATE"
_TRUE = frozenset({"true", "1", "yes", "on"})
_FALSE = frozenset({"false", "0", "no", "off", ""})
# NAT64 (RFC 6052): an IPv6 address that a gateway turns into the IPv4 address in its last 32 bits.
_NAT64 = ipaddress.ip_network("64:ff9b::/96")

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class AddressRefused(OSError):
    """A connection refused by the policy; an OSError so the transport reports it like a failed connect."""


def private_targets_allowed(environ: Mapping[str, str] | None = None) -> bool:
    """`ASSAY_TARGET_ALLOW_PRIVATE` as a boolean; ValueError for a value that is neither true nor false."""
    value = (os.environ if environ is None else environ).get(ALLOW_PRIVATE_ENV, "").strip().lower()
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
    return (
        f"{what} is a {kind} address; targets may reach public addresses only "
        f"(the operator allows private ones with {ALLOW_PRIVATE_ENV}=true)"
    )


def host_problem(host: str) -> str | None:
    """Why a URL's host may not be called, judged without DNS: an address literal of a refused kind, or
    a `localhost` name (which resolves to loopback by convention, RFC 6761). None otherwise."""
    bare = host.strip("[]").rstrip(".").lower()
    if bare == "localhost" or bare.endswith(".localhost"):
        return _refusal(f"host {host}", "loopback")
    try:
        address = ipaddress.ip_address(bare.split("%", 1)[0])  # an IPv6 zone (fe80::1%eth0) is dropped
    except ValueError:
        return None  # a name: judged by what it resolves to, on each connection
    kind = address_kind(address)
    return _refusal(f"host {host}", kind) if kind else None


def resolved_problem(host: str, resolved: str) -> str | None:
    """Why one address a host name resolved to may not be connected to; None when it may."""
    try:
        address = ipaddress.ip_address(resolved.split("%", 1)[0])
    except ValueError:
        return f"host {host} resolved to {resolved!r}, which is not an IP address"
    kind = address_kind(address)
    return _refusal(f"host {host} resolves to {resolved}, which", kind) if kind else None


def body_shape(content_type: str | None, size: int) -> str:
    """What an error says of a reply's body: its content type and size, never its text. The text is
    whatever the address answered (an admin page, a metadata service's keys, a webhook's echo of what
    it was sent), and errors are shown on pages: `text/html, 1543 bytes`."""
    return f"{content_type or 'no content type'}, {size} bytes"
