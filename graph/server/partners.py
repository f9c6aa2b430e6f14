"""Partner keys: the API keys an operator configures, each with a tier (its bucket, its largest
cost per request, and whether it may send only trusted documents).

Keys come from LEADGREEN_API_KEYS (the default tier: the rate-limit settings' bucket) and from
the keys file LEADGREEN_PARTNER_KEYS_FILE (TOML, docs/keys.md), which holds each key's SHA-256
only, never the key. The file and the documents files it names are looked at once a second at
most (`CHECK_SECONDS`, on the clock given) and read again when one changed; a file that does not
read keeps the keys held and logs why. A key is looked up by its digest, so how long the lookup
takes says nothing of a key held. No key, and no digest of one, is ever logged.

A trusted-only tier runs only the documents registered for it: the persisted documents
graphql-codegen's client preset writes (`persistedDocuments`, `hashAlgorithm: "sha256"`), a JSON
object of {SHA-256 of the text: text}, sent by hash (the APQ extension) or as the text itself.
"""

from __future__ import annotations

import hashlib
import logging
import math
import time
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from graph.errors import Code
from graph.server.protocol import GraphQLRequest, Refusal, document_hash

if TYPE_CHECKING:
    from graph.server.response_cache import PersistedQueries
    from graph.settings import Settings

log = logging.getLogger("leadgreen")
# The most often the files are looked at (stat), from a request.
CHECK_SECONDS = 1.0
DEFAULT_TIER = "default"
# RFC 9110: a 401 names how to authenticate.
UNKNOWN_KEY_HEADERS = ((b"www-authenticate", b'ApiKey header="X-API-Key"'),)
_TIER_FIELDS = frozenset({"capacity", "restore_rate", "max_cost", "trusted_only", "documents"})
_KEY_FIELDS = frozenset({"sha256", "tier"})


class KeysFileError(ValueError):
    """The keys file, or a documents file it names, does not read: what and where."""


@dataclass(frozen=True, eq=False)
class Tier:
    """What the keys of a tier may spend: their bucket (`capacity` points, regaining
    `restore_rate` a second), their largest requested cost per request (None: the limits
    profile's `max_cost` only), and the documents they may run (trusted_only: those alone)."""

    name: str
    capacity: int
    restore_rate: float
    max_cost: int | None = None
    trusted_only: bool = False
    documents: Mapping[str, str] = field(default_factory=dict)  # SHA-256 hex -> text

    async def resolve(self, request: GraphQLRequest, persisted: PersistedQueries) -> str | None:
        """The request's document: a registered one by its hash, else (unless trusted-only)
        as persisted queries resolve it. A trusted-only tier's request naming or sending any
        other document is refused with DOCUMENT_NOT_TRUSTED."""
        if not self.documents:
            return await persisted.resolve(request)
        sha = request.persisted_hash
        if request.query is not None:
            sha = request.document if sha is None else document_hash(request.query)
        text = self.documents.get(sha) if sha is not None else None
        if text is not None:
            return text
        if self.trusted_only:
            raise Refusal(
                403,
                f"This API key's tier ({self.name}) runs only its registered documents; "
                "this one is not registered.",
                Code.DOCUMENT_NOT_TRUSTED,
            )
        return await persisted.resolve(request)


@dataclass(frozen=True)
class Keys:
    """The keys held: by the SHA-256 (hex) of each key, its tier."""

    tiers: Mapping[str, Tier]
    by_digest: Mapping[str, Tier]
    sources: tuple[Path, ...] = ()  # the documents files the tiers were read from


def client_of(digest: str) -> str:
    """The rate-limit client a key is (its digest shortened: the key cannot be read back)."""
    return "key:" + digest[:32]


class PartnerKeys:
    """The keys configured, from the environment and the keys file, kept current."""

    def __init__(
        self,
        settings: Settings,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.path = settings.partner_keys_file
        self.default = Tier(
            DEFAULT_TIER, settings.rate_limit_capacity, settings.rate_limit_restore_rate
        )
        self.environment = [key for key in settings.api_keys if key]
        # Whether any key is configured: then a key not among them is refused.
        self.configured = bool(self.environment) or self.path is not None
        self.clock = clock
        self._seen: tuple[Any, ...] | None = None
        self._next_check = clock() + CHECK_SECONDS
        self.keys = self._read()  # a bad file at the start stops the start: nothing to keep
        self._seen = self._fingerprint(self.keys)
        # client -> tier, for the buckets (a key's client is its digest's prefix)
        self.clients = self._clients(self.keys)

    def lookup(self, key: bytes) -> str:
        """The client a key is; a Refusal (401 UNKNOWN_API_KEY) for a key not configured."""
        self.check()
        # Looked up by digest: the time taken depends on the digest, which says nothing of
        # the keys held (finding one by it would need its preimage).
        digest = hashlib.sha256(key).hexdigest()
        tier = self.keys.by_digest.get(digest)
        if tier is None:
            raise Refusal(
                401,
                "The API key (X-API-Key) is not one this service knows.",
                Code.UNKNOWN_API_KEY,
                UNKNOWN_KEY_HEADERS,
            )
        return client_of(digest)

    def tier(self, client: str) -> Tier:
        return self.clients.get(client, self.default)

    def check(self) -> None:
        """`reload()` when CHECK_SECONDS have passed since the last look."""
        now = self.clock()
        if now >= self._next_check:
            self._next_check = now + CHECK_SECONDS
            self.reload()

    def reload(self) -> bool:
        """Read the files again when one changed; whether the keys changed. A file that does
        not read keeps the keys held (the error is logged, without any key)."""
        if self.path is None or self._fingerprint(self.keys) == self._seen:
            return False
        try:
            keys = self._read()
        except (OSError, KeysFileError) as exc:
            self._seen = self._fingerprint(self.keys)  # logged once per change of the files
            log.error("partner keys file not reloaded, the keys held stay: %s", exc)
            return False
        self._seen = self._fingerprint(keys)
        self.keys, self.clients = keys, self._clients(keys)
        log.info("partner keys reloaded: %d keys in %d tiers", len(keys.by_digest), len(keys.tiers))
        return True

    def _clients(self, keys: Keys) -> dict[str, Tier]:
        return {client_of(digest): tier for digest, tier in keys.by_digest.items()}

    def _fingerprint(self, keys: Keys) -> tuple[Any, ...]:
        """What says a file changed: each file's size, modification time and inode (or that it
        is missing)."""
        if self.path is None:
            return ()
        return tuple(_stat(path) for path in (self.path, *keys.sources))

    def _read(self) -> Keys:
        by_digest = {
            hashlib.sha256(key.encode()).hexdigest(): self.default for key in self.environment
        }
        if self.path is None:
            return Keys({DEFAULT_TIER: self.default}, by_digest)
        keys = read_keys_file(self.path, self.default)
        return Keys(keys.tiers, {**by_digest, **keys.by_digest}, keys.sources)


def _stat(path: Path) -> tuple[str, int, int, int] | tuple[str]:
    try:
        found = path.stat()
    except OSError:
        return (str(path),)
    return (str(path), found.st_size, found.st_mtime_ns, found.st_ino)


def read_keys_file(path: Path, default: Tier) -> Keys:
    """The tiers and keys of a keys file (docs/keys.md); KeysFileError saying what and where
    for anything else (an unknown field, a tier no key may use, a document whose hash is not
    its text's)."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise KeysFileError(f"{path.name}: not TOML: {exc}") from None
    _only(data, {"tiers", "keys"}, path.name)
    tiers: dict[str, Tier] = {DEFAULT_TIER: default}
    sources: list[Path] = []
    for name, spec in _table(data.get("tiers", {}), f"{path.name}: tiers").items():
        where = f"{path.name}: tiers.{name}"
        spec = _table(spec, where)
        _only(spec, _TIER_FIELDS, where)
        files = spec.get("documents", [])
        files = [files] if isinstance(files, str) else files
        if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
            raise KeysFileError(f"{where}.documents: a file name or a list of them")
        documents: dict[str, str] = {}
        for name_of_file in files:
            source = path.parent / name_of_file
            sources.append(source)
            documents.update(read_documents(source, f"{where}.documents"))
        trusted_only = _value(spec, "trusted_only", bool, False, where)
        if trusted_only and not documents:
            raise KeysFileError(f"{where}: trusted_only needs `documents` (none registered)")
        tiers[name] = Tier(
            name,
            capacity=_value(spec, "capacity", int, default.capacity, where),
            restore_rate=float(_value(spec, "restore_rate", float, default.restore_rate, where)),
            max_cost=_value(spec, "max_cost", int, None, where),
            trusted_only=trusted_only,
            documents=documents,
        )
    by_digest: dict[str, Tier] = {}
    for name, spec in _table(data.get("keys", {}), f"{path.name}: keys").items():
        where = f"{path.name}: keys.{name}"
        spec = _table(spec, where)
        _only(spec, _KEY_FIELDS, where)
        digest = spec.get("sha256")
        if not isinstance(digest, str) or not _is_sha256(digest.lower()):
            raise KeysFileError(f"{where}.sha256: the key's SHA-256, 64 hexadecimal digits")
        tier = spec.get("tier", DEFAULT_TIER)
        if tier not in tiers:
            raise KeysFileError(
                f"{where}.tier: unknown tier {tier!r}; one of {', '.join(sorted(tiers))}"
            )
        if digest.lower() in by_digest:
            raise KeysFileError(f"{where}.sha256: the same key as another entry")
        by_digest[digest.lower()] = tiers[tier]
    return Keys(tiers, by_digest, tuple(sources))


def read_documents(path: Path, where: str) -> dict[str, str]:
    """A persisted-documents file: a JSON object of {SHA-256 hex of the text: text} (an
    optional `sha256:` prefix, as GraphQL over HTTP's document ids have)."""
    try:
        data = orjson.loads(path.read_bytes())
    except OSError as exc:
        raise KeysFileError(f"{where}: cannot read {path.name}: {exc.strerror}") from None
    except orjson.JSONDecodeError as exc:
        raise KeysFileError(f"{where}: {path.name} is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise KeysFileError(f"{where}: {path.name} holds {{hash: document}}, not a JSON object")
    documents = {}
    for given, text in data.items():
        sha = given.removeprefix("sha256:").lower()
        if not isinstance(text, str):
            raise KeysFileError(f"{where}: {path.name}: {given!r} is not a document's text")
        if not _is_sha256(sha) or document_hash(text) != sha:
            raise KeysFileError(
                f"{where}: {path.name}: {given!r} is not the SHA-256 of its document "
                '(codegen: persistedDocuments with hashAlgorithm: "sha256")'
            )
        documents[sha] = text
    return documents


def _is_sha256(text: str) -> bool:
    return len(text) == 64 and all(c in "0123456789abcdef" for c in text)


def _table(value: object, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise KeysFileError(f"{where}: a table")
    return value


def _only(spec: Mapping[str, Any], known: Iterable[str], where: str) -> None:
    unknown = sorted(set(spec) - set(known))
    if unknown:
        raise KeysFileError(
            f"{where}: unknown {', '.join(unknown)}; known: {', '.join(sorted(known))}"
        )


def _value(spec: Mapping[str, Any], name: str, kind: type, default: Any, where: str) -> Any:
    """True or false (`kind` bool), or a positive number of `kind` (an int is a float too);
    the default when not given."""
    value: Any = spec.get(name, default)
    if value is None:
        return None
    if kind is bool:
        fits = isinstance(value, bool)
    else:
        number = isinstance(value, int | float) and not isinstance(value, bool)
        fits = (
            number
            and (kind is float or isinstance(value, int))
            and math.isfinite(value)
            and value > 0
        )
    if not fits:
        wanted = "true or false" if kind is bool else f"a positive {kind.__name__}"
        raise KeysFileError(f"{where}.{name}: {value!r} is not {wanted}")
    return value
