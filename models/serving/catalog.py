"""The models a visitor may choose for the attention lesson, as the server's operator set them.

Visitors pick from this list by its keys; they never name a path. The operator decides
what is on it, with environment variables read when the list is built:

- SEQLENS_MODELS_DIR: a folder of model folders (config.json, *.safetensors, tokenizer).
- SEQLENS_USE_HF_CACHE (default 1): also offer models already in the local Hugging Face
  cache (HF_HUB_CACHE / HF_HOME, as huggingface_hub finds it); 0 hides them.
- SEQLENS_ALLOW_HUB (default 0) and SEQLENS_HUB_MODELS (comma-separated repository ids):
  offer those hub models, downloaded on first choice (safetensors, JSON and tokenizer files
  only), and only while the hub can be reached. Otherwise nothing goes to the network.
- SEQLENS_MAX_PARAMS (default 500M; "1.5B", "120M" or a plain number): larger models are
  refused with a message saying so (the shipped 22.7 M-parameter MiniLM is always offered).

The shipped all-MiniLM-L6-v2 is always first. Folders that cannot be offered (a pickle
checkpoint only, an unknown architecture, remote code, too large) stay on the list with
the reason, so the page can say why they are not offered.
"""

from __future__ import annotations

import logging
import os
import re
import socket
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from models.serving import offline
from models.serving.model_files import ModelRefused, check_folder

log = logging.getLogger(__name__)

SHIPPED_KEY = "all-MiniLM-L6-v2"
DEFAULT_MAX_PARAMS = 500_000_000
_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")
# Only the files a model needs: never a pickle checkpoint.
HUB_FILES = ["*.json", "*.safetensors", "*.txt", "*.model", "tokenizer*"]
HUB_HOST = ("huggingface.co", 443)
_ONLINE_TTL_S = 60.0


def parse_count(raw: str | None, default: int) -> int:
    """ "500M", "1.5B", "120000000" → a count; anything else → `default` (logged)."""
    if raw is None or not raw.strip():
        return default
    text = raw.strip().upper().replace("_", "").replace(",", "")
    scale = {"K": 10**3, "M": 10**6, "B": 10**9, "G": 10**9}.get(text[-1:], 1)
    number = text[:-1] if scale != 1 else text
    try:
        value = float(number) * scale
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        log.warning("SEQLENS_MAX_PARAMS=%r is not a positive count; using %d", raw, default)
        return default
    return int(value)


def _flag(raw: str | None, default: bool) -> bool:
    if raw is None or not raw.strip():
        return default
    return raw.strip().lower() in ("1", "true", "yes", "on")


@dataclass(frozen=True)
class Settings:
    models_dir: Path | None = None
    use_cache: bool = True
    cache_dir: Path | None = None  # None: huggingface_hub's own default
    allow_hub: bool = False
    hub_models: tuple[str, ...] = ()
    max_params: int = DEFAULT_MAX_PARAMS

    @classmethod
    def from_env(cls, environ=None) -> Settings:
        env = os.environ if environ is None else environ
        models_dir = env.get("SEQLENS_MODELS_DIR", "").strip()
        hub_models = tuple(
            name.strip() for name in env.get("SEQLENS_HUB_MODELS", "").split(",") if name.strip()
        )
        return cls(
            models_dir=Path(models_dir).expanduser() if models_dir else None,
            use_cache=_flag(env.get("SEQLENS_USE_HF_CACHE"), True),
            allow_hub=offline.hub_allowed(env),
            hub_models=tuple(name for name in hub_models if _REPO_ID.match(name)),
            max_params=parse_count(env.get("SEQLENS_MAX_PARAMS"), DEFAULT_MAX_PARAMS),
        )


@dataclass(frozen=True)
class ModelChoice:
    key: str  # what a link and the selectbox carry
    source: str  # "shipped" | "folder" | "cache" | "hub"
    name: str
    location: str  # a folder, or a hub repository id; never typed by a visitor
    model_type: str = ""
    n_params: int | None = None
    refused: str = ""  # a ModelRefused code when the model cannot be offered
    refused_params: dict = field(default_factory=dict)

    @property
    def offered(self) -> bool:
        return not self.refused


def _checked(choice: ModelChoice, max_params: int | None) -> ModelChoice:
    """`choice` with what its folder holds, or refused with the reason. Whatever one folder
    holds, reading it never fails the list: the other models are still offered."""
    try:
        info = check_folder(Path(choice.location), max_params)
    except ModelRefused as refusal:
        if refusal.detail:
            log.warning("model %s refused (%s): %s", choice.location, refusal.code, refusal.detail)
        return replace(choice, refused=refusal.code, refused_params=refusal.params)
    except OSError as error:
        log.warning("model %s cannot be read: %s", choice.location, error)
        return replace(choice, refused="unreadable", refused_params={"error": type(error).__name__})
    except Exception as error:  # noqa: BLE001  (a file no check foresaw: refuse this folder alone)
        log.warning("model %s is damaged", choice.location, exc_info=True)
        return replace(choice, refused="damaged", refused_params={"error": type(error).__name__})
    return replace(choice, model_type=info.model_type, n_params=info.n_params)


def shipped_choice() -> ModelChoice:
    """all-MiniLM-L6-v2 is part of SeqLens: always offered, whatever the parameter limit."""
    from models.nets.pretrained import default_model_path

    path = default_model_path()
    return _checked(ModelChoice(SHIPPED_KEY, "shipped", SHIPPED_KEY, str(path)), None)


def _model_folders(root: Path) -> list[tuple[str, Path]]:
    """Folders holding a config.json, one level down or two (an `org/name` layout)."""
    found = []
    for child in sorted(root.iterdir()):
        if not child.is_dir() or child.name.startswith("."):
            continue
        if (child / "config.json").is_file():
            found.append((child.name, child))
            continue
        for grandchild in sorted(child.iterdir()):
            if grandchild.is_dir() and (grandchild / "config.json").is_file():
                found.append((f"{child.name}/{grandchild.name}", grandchild))
    return found


def folder_choices(settings: Settings) -> list[ModelChoice]:
    root = settings.models_dir
    if root is None:
        return []
    try:
        folders = _model_folders(root)
    except OSError as error:
        log.warning("models folder %s cannot be read: %s", root, error)
        return []
    return [
        _checked(ModelChoice(f"folder:{name}", "folder", name, str(path)), settings.max_params)
        for name, path in folders
    ]


def _snapshot(repo) -> Path | None:
    """The revision the cache's `main` ref points at, else the newest one."""
    revisions = sorted(repo.revisions, key=lambda r: r.last_modified, reverse=True)
    for revision in revisions:
        if "main" in revision.refs:
            return Path(revision.snapshot_path)
    return Path(revisions[0].snapshot_path) if revisions else None


def cache_choices(settings: Settings) -> list[ModelChoice]:
    if not settings.use_cache:
        return []
    from huggingface_hub import scan_cache_dir

    try:
        info = scan_cache_dir(settings.cache_dir)
    except Exception as error:  # noqa: BLE001  (no cache, or one it cannot read: no models)
        log.info("no Hugging Face cache to list: %s", error)
        return []
    choices = []
    for repo in sorted(info.repos, key=lambda r: r.repo_id):
        path = _snapshot(repo) if repo.repo_type == "model" else None
        if path is None or not (path / "config.json").is_file():
            continue
        choice = ModelChoice(f"cache:{repo.repo_id}", "cache", repo.repo_id, str(path))
        choices.append(_checked(choice, settings.max_params))
    return choices


_online: dict[str, float | bool] = {}


def hub_online(timeout_s: float = 1.5) -> bool:
    """Whether the hub answers at all (a TCP connection; asked at most once a minute)."""
    now = time.monotonic()
    if now - float(_online.get("at", -_ONLINE_TTL_S * 2)) < _ONLINE_TTL_S:
        return bool(_online["up"])
    try:
        with socket.create_connection(HUB_HOST, timeout=timeout_s):
            up = True
    except OSError:
        up = False
    _online.update(at=now, up=up)
    return up


def hub_choices(settings: Settings, cached: set[str]) -> list[ModelChoice]:
    wanted = [name for name in settings.hub_models if name not in cached]
    if not settings.allow_hub or not wanted or not hub_online():
        return []
    return [ModelChoice(f"hub:{name}", "hub", name, name) for name in wanted]


def list_models(settings: Settings | None = None) -> list[ModelChoice]:
    """Every model the operator offers, the shipped one first; refused ones keep their reason."""
    settings = settings or Settings.from_env()
    cache = cache_choices(settings)
    return [
        shipped_choice(),
        *folder_choices(settings),
        *cache,
        *hub_choices(settings, {choice.name for choice in cache}),
    ]


def fetch_from_hub(repo_id: str, max_params: int) -> Path:
    """Download an operator-listed hub model's safetensors, JSON and tokenizer files, after
    checking from the hub's own index that it has safetensors and is within the limit."""
    from huggingface_hub import get_safetensors_metadata, snapshot_download
    from huggingface_hub.errors import NotASafetensorsRepoError

    try:
        meta = get_safetensors_metadata(repo_id)
    except NotASafetensorsRepoError as error:
        raise ModelRefused("pickle_only", files="") from error
    except Exception as error:  # noqa: BLE001  (offline, timed out, unknown repository)
        raise ModelRefused("hub_unreachable", error=type(error).__name__) from error
    n_params = sum(meta.parameter_count.values())
    if n_params > max_params:
        raise ModelRefused("too_large", n_params=n_params, limit=max_params)
    try:
        return Path(snapshot_download(repo_id, allow_patterns=HUB_FILES))
    except Exception as error:  # noqa: BLE001
        raise ModelRefused("hub_unreachable", error=type(error).__name__) from error


def model_folder(choice: ModelChoice, settings: Settings) -> Path:
    """The folder to load `choice` from (downloading a hub model first); refused ones raise."""
    if choice.refused:
        raise ModelRefused(choice.refused, **choice.refused_params)
    if choice.source == "hub":
        if not settings.allow_hub:
            raise ModelRefused("hub_off")
        return fetch_from_hub(choice.location, settings.max_params)
    return Path(choice.location)
