"""Where a git export pushes, and the push (no Django; dulwich): `Remote` (a URL and the NAMES of the
environment variables holding its credentials, never their values), the remote URL's checks before
anything is written (`remote_url_problem`: scheme, no credentials in it, a local directory inside the
export roots, a host the network policy allows, `remote_address_problem`), and `push`: the refs pushed
under the same names, the credentials read from the environment at that moment, an http(s) connection's
address judged by the network policy, and every failure said in words that quote neither the URL nor a
credential, with what to do (a diverged branch or tag is never force-pushed). A push failure never undoes
the local commit: `assay.git_export.git_write` reports it beside the commit.
"""

from __future__ import annotations

import base64
import io
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dulwich import porcelain
from dulwich.client import (
    AbstractHttpGitClient,
    GitClient,
    LocalGitClient,
    default_urllib3_manager,
    get_transport_and_path,
)
from dulwich.repo import Repo

from assay.git_repo import ref_id
from assay.netpolicy import host_problem, name_problem, private_targets_allowed, refused_in, url_problem
from assay.secrets import git_export_path_problem, mask_secrets, secret_env_problem
from assay.urls import UrlError, split_url, url_credential_problems, url_free

_REMOTE_SCHEMES = ("file", "http", "https", "ssh", "git")
_USE_VARIABLES = "name environment variables holding them in the export's username and password fields"


@dataclass(frozen=True, slots=True)
class Remote:
    """Where to push. `username_env` / `password_env` NAME environment variables (never hold secrets)."""

    url: str
    username_env: str = ""
    password_env: str = ""


def remote_url_problem(url: str) -> str | None:
    """Why a remote URL may not be pushed to: malformed (`assay.urls.split_url`), an unsupported scheme,
    credentials in it (a password, a user over http(s), where a token is often given as the user, or a
    query parameter named like one), a local directory outside the export roots, or a host the network
    policy refuses (`remote_address_problem`). The words never quote the URL."""
    if not url:
        return None
    try:
        parts = split_url(url)
    except UrlError as exc:
        return f"remote URL: {exc}"
    if parts.scheme and parts.scheme not in _REMOTE_SCHEMES and not re.match(r"^[\w.-]+@[\w.-]+:", url):
        return f"remote URL scheme {parts.scheme!r} is not supported (use {', '.join(_REMOTE_SCHEMES)})"
    over_http = parts.scheme in ("http", "https")
    credentials = url_credential_problems(parts, _USE_VARIABLES, user_allowed=not over_http)
    if credentials:
        return "remote URL: " + "; ".join(credentials)
    try:
        client, path = get_transport_and_path(url)
    except (ValueError, KeyError):
        return "remote URL: dulwich cannot read it as a git remote (check its scheme, host and path)"
    if isinstance(client, LocalGitClient):
        return git_export_path_problem(path)
    return remote_address_problem(url, client)


def remote_address_problem(url: str, client: GitClient | None = None, *, resolve: bool = False) -> str | None:
    """Why the network policy (assay.netpolicy) refuses the remote's host; None when it allows it, or
    for a local remote. The host is taken as dulwich reads it (the client it would push with) and, over
    http(s), as urllib3 and `assay.urls.split_url` read the URL too. With `resolve` (just before a push),
    an ssh or git:// host name is also judged on what it resolves to: those clients connect on their
    own, past the connect-time check http(s) gets. With private addresses allowed, only an http(s)
    host no resolver can look up is refused."""
    allowed = private_targets_allowed()
    if client is None:
        client, _path = get_transport_and_path(url)
    if isinstance(client, LocalGitClient):
        return None
    if isinstance(client, AbstractHttpGitClient):
        return url_problem(url, clients=("urllib3",), allow_private=allowed) or url_problem(
            client.get_url(""), clients=("urllib3",), allow_private=allowed
        )
    host = getattr(client, "host", None) or getattr(client, "_host", None)  # ssh, git://
    if not host:
        return "remote URL: it names no host to push to"
    if allowed:
        return None
    return name_problem(str(host)) if resolve else host_problem(str(host))


def local_remote_path(url: str) -> str | None:
    """The directory a remote URL names on this machine (file:// or a plain path), else None. Read as
    dulwich reads it: `host:path` is an ssh remote, not a directory."""
    try:
        client, path = get_transport_and_path(url)
    except (ValueError, KeyError):
        return None
    return path if isinstance(client, LocalGitClient) else None


def remote_named(url: str) -> str:
    """The remote as a push error names it: a local directory by its path, any other remote as "the
    remote" (its URL may hold a token in its path)."""
    return local_remote_path(url) or "the remote"


def _push_words(text: str, remote: Remote, credentials: Mapping[str, str]) -> str:
    """A library's error text as the push error says it: no URL of the remote (`assay.urls.url_free`)
    and no credential sent."""
    if local_remote_path(remote.url) is None:
        text = url_free(text, [remote.url])
    return mask_secrets(text, _sent(credentials))


def push(repo: Repo, remote: Remote, refs: list[bytes]) -> tuple[str, str | None] | None:
    """Push `refs` to the remote (same names there); None on success, else (the reason in words, what to
    do when it is more than "fix the remote")."""
    credentials: dict[str, str] = {}
    for field, env_name in (("username", remote.username_env), ("password", remote.password_env)):
        if env_name:
            if refused := secret_env_problem(env_name):
                return refused, None
            value = os.environ.get(env_name)
            if value is None:
                return f"the environment variable {env_name} (the {field}) is not set in this process", None
            credentials[field] = value
    if refused := remote_address_problem(remote.url, resolve=True):
        return refused, None
    out, err = io.BytesIO(), io.BytesIO()
    try:
        result = porcelain.push(
            repo,
            remote.url,
            refspecs=[r + b":" + r for r in refs],
            outstream=out,
            errstream=err,
            **_public_pool(repo, remote.url),
            **credentials,  # type: ignore[arg-type]
        )
    except porcelain.DivergedBranches as exc:
        # Retrying cannot help here, and forcing would throw the remote's commits (or tag) away.
        return _diverged(repo, refs, exc.current_sha, exc.new_sha)
    except Exception as exc:  # every transport error is a failed push, reported in words
        if (address := refused_in(exc)) is not None:
            return str(address), None
        reason = str(exc) or type(exc).__name__
        return _push_words(f"{type(exc).__name__}: {reason}", remote, credentials), None
    # porcelain.push reports refs the remote rejected only in ref_status; it does not raise for them.
    rejected = {
        ref.decode(errors="replace"): str(status)
        for ref, status in (result.ref_status or {}).items()
        if status is not None
    }
    if rejected:
        said = "; ".join(f"{ref} ({why})" for ref, why in sorted(rejected.items()))
        return _push_words(f"the remote rejected {said}", remote, credentials), None
    return None


def _public_pool(repo: Repo, url: str) -> dict[str, Any]:
    """For an http(s) remote while private addresses are refused, dulwich's usual urllib3 pool manager
    (git config and environment: proxies, CA bundle) built on `assay.outbound.PublicPoolManager`, so the
    address each connection reaches is judged by the network policy. (Through a proxy, the proxy is
    connected to, and it reaches the host.)"""
    if private_targets_allowed() or split_url(url).scheme not in ("http", "https"):
        return {}
    from assay.outbound import PublicPoolManager

    manager = default_urllib3_manager(
        repo.get_config_stack(), pool_manager_cls=PublicPoolManager, base_url=url
    )
    return {"pool_manager": manager}


def _sent(credentials: Mapping[str, str]) -> list[str]:
    """The credentials as a remote may quote them back: each value, and the Basic authorization."""
    pair = f"{credentials.get('username', '')}:{credentials.get('password', '')}"
    return [*credentials.values(), base64.b64encode(pair.encode()).decode()] if credentials else []


def _diverged(repo: Repo, refs: list[bytes], remote_sha: bytes, local_sha: bytes) -> tuple[str, str]:
    """Why a push was refused as not fast-forward, and what to do, for the branch or the tag it was."""
    ref = next((r for r in refs if ref_id(repo, r) == local_sha), refs[0])
    name = ref.decode().removeprefix("refs/heads/").removeprefix("refs/tags/")
    if ref.startswith(b"refs/tags/"):
        return (
            f"the remote already has a tag {name} at {remote_sha.decode()[:12]}, other than this export's "
            "(tags are never moved, nor force-pushed)",
            "if the remote's tag is wrong, delete it there deliberately; otherwise export to another remote,",
        )
    return (
        f"the remote's {name} holds commits this repository lacks (it is at {remote_sha.decode()[:12]}, this "
        f"export at {local_sha.decode()[:12]}; Assay never force-pushes)",
        f"merge the remote's {name} into {name} in {repo.path} first (for a bare repository: merge in a "
        "clone and push the merge back to it), or point the export at another branch,",
    )
