"""Visitor keys the server signs, and one-time links that bring a key to another session.

A key is 32 random hex digits followed by 32 hex digits of HMAC-SHA256 over them with a
secret of this server's (SEQLENS_VISITOR_SECRET, or a file `secret` made once in the store's
folder, mode 0600). A key nobody signed, such as 32 hex digits typed into a link, opens
nothing. Keys never travel in an address: a link carries a token instead, random, kept on
the server only as its hash with the key it stands for and an expiry. A token is consumed
by renaming its file to the name that marks it used, which exactly one of several sessions
opening the same link at once can do; the others, and anyone who later finds the link in a
browser's history, meet a note that it was used. Every token file is in `links/` in the
store's folder.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
import time
from pathlib import Path

from models.serving.private_files import child_folder, create_private, read_private, write_private

SIGNING_VAR = "SEQLENS_VISITOR_SECRET"
SIGNING_FILE = "secret"
LINKS_FOLDER = "links"
_KEY = re.compile(r"[0-9a-f]{64}")
_TOKEN = re.compile(r"[A-Za-z0-9_-]{32}")
_LIVE, _USED = ".link", ".used"
# A visitor who opens their link in several sessions (a reload loop, or a script) gets a new
# link in each; past this many unused ones for a key, the oldest stops working.
MAX_LINKS_PER_KEY = 4


class LinkRefused(Exception):
    """A link that brings no key: `reason` is "used" (opened already) or "unknown"."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def server_secret(root: Path) -> bytes:
    """The secret keys are signed with: from the environment, else the store's own file,
    made once (whichever process makes it first, every process reads the same)."""
    from_env = os.environ.get(SIGNING_VAR, "")
    if from_env:
        return from_env.encode("utf-8")
    path = Path(root) / SIGNING_FILE
    create_private(path, secrets.token_hex(32).encode("ascii"))
    secret = read_private(path, 4096).strip()
    if len(secret) < 32:
        raise ValueError(f"{path} holds no usable secret")
    return secret


class Keys:
    """Keys signed with `secret`."""

    def __init__(self, secret: bytes):
        self._secret = secret

    def _tag(self, body: str) -> str:
        return hmac.new(self._secret, body.encode("ascii"), hashlib.sha256).hexdigest()[:32]

    def new(self) -> str:
        body = secrets.token_hex(16)
        return body + self._tag(body)

    def check(self, key) -> bool:
        """Whether `key` is one this server issued."""
        if not (isinstance(key, str) and _KEY.fullmatch(key)):
            return False
        return hmac.compare_digest(key[32:], self._tag(key[:32]))


def folder_name(key: str) -> str:
    """A key's folder name: its hash, so listing the store shows no key."""
    return hashlib.sha256(key.encode("ascii")).hexdigest()


def _token_name(token: str) -> str:
    return hashlib.sha256(token.encode("ascii")).hexdigest()


class Links:
    """One-time tokens for keys, as files in `root/links`, each living `max_age` seconds."""

    def __init__(self, root: Path, max_age: float):
        self.root = Path(root)
        self.max_age = max_age

    def _folder(self) -> Path:
        return child_folder(self.root, LINKS_FOLDER)

    def mint(self, key: str, now: float | None = None) -> str:
        """A fresh token that brings `key` to whoever opens it first."""
        now = time.time() if now is None else now
        folder = self._folder()
        token = secrets.token_urlsafe(24)
        record = {"owner": folder_name(key), "key": key, "expires": now + self.max_age}
        write_private(folder / (_token_name(token) + _LIVE), json.dumps(record).encode())
        self._keep_newest(folder, folder_name(key))
        return token

    def is_live(self, token: str) -> bool:
        """Whether `token` can still be opened (nobody has used it, it has not expired)."""
        if not (isinstance(token, str) and _TOKEN.fullmatch(token)):
            return False
        record = _read(self._folder() / (_token_name(token) + _LIVE))
        return record is not None and record["expires"] > time.time()

    def redeem(self, raw, now: float | None = None) -> str:
        """The key `raw` stands for; the token is used up. LinkRefused otherwise."""
        now = time.time() if now is None else now
        token = raw.strip() if isinstance(raw, str) else ""
        if not _TOKEN.fullmatch(token):
            raise LinkRefused("unknown")
        folder, name = self._folder(), _token_name(token)
        used = folder / (name + _USED)
        try:
            os.rename(folder / (name + _LIVE), used)  # only one session's rename succeeds
        except FileNotFoundError:
            record = _read(used)
            raise LinkRefused("used" if record and record["expires"] > now else "unknown") from None
        record = _read(used)
        if record is not None:  # what stays says "used" until it expires, and holds no key
            write_private(used, json.dumps({"expires": record["expires"]}).encode())
        if record is None or record["expires"] <= now or "key" not in record:
            raise LinkRefused("unknown")
        return str(record["key"])

    def prune(self, now: float | None = None) -> int:
        """Delete every token file past its expiry; returns how many went."""
        now = time.time() if now is None else now
        removed = 0
        for path in self._folder().iterdir():
            if path.name.startswith(".") and _age(path, now) < 60:
                continue  # being written or claimed right now
            record = _read(path)
            if record is None or record["expires"] <= now:
                path.unlink(missing_ok=True)
                removed += 1
        return removed

    def _keep_newest(self, folder: Path, owner: str) -> None:
        live = []
        for path in folder.glob("*" + _LIVE):
            record = _read(path)
            if record is not None and record.get("owner") == owner:
                live.append((record["expires"], path))
        for _, path in sorted(live)[:-MAX_LINKS_PER_KEY]:
            path.unlink(missing_ok=True)


def _read(path: Path) -> dict | None:
    """A token file's record, or None when it is gone or damaged."""
    try:
        record = json.loads(read_private(path, 4096))
        record["expires"] = float(record["expires"])
    except (OSError, ValueError, TypeError, KeyError, IndexError):
        return None
    return record


def _age(path: Path, now: float) -> float:
    try:
        return now - os.lstat(path).st_mtime
    except OSError:
        return float("inf")
