"""Typed readers for settings that come from the environment.

They fail closed: a value that is present but cannot be parsed stops start-up
instead of silently falling back to a default.
"""

import os
from pathlib import Path
from typing import overload
from urllib.parse import unquote, urlsplit

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


@overload
def env_str(name: str, default: str) -> str: ...
@overload
def env_str(name: str, default: None = None) -> str | None: ...
def env_str(name: str, default: str | None = None) -> str | None:
    value = os.environ.get(name)
    return default if value is None or value == "" else value


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    lowered = value.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean, got {value!r}")


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be an integer, got {value!r}") from exc


def env_float(name: str, default: float) -> float:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        return float(value)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be a number, got {value!r}") from exc


def env_list(name: str, default: list[str]) -> list[str]:
    value = os.environ.get(name)
    if value is None or value.strip() == "":
        return default
    return [item.strip() for item in value.split(",") if item.strip()]


class DeploymentSettingsMissing(ImproperlyConfigured):
    """A deployment was started without settings it cannot run without."""


def env_required(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        raise DeploymentSettingsMissing(f"{name} must be set in production")
    return value


def env_file_text(name: str) -> str:
    """The content of the file the variable names (a secret mounted as a file); a
    missing or unreadable file stops start-up with one message, not a traceback."""
    path = env_required(name)
    try:
        return Path(path).read_text()
    except OSError as exc:
        raise DeploymentSettingsMissing(
            f"Cannot start: {name} is {path}, which cannot be read ({exc.strerror})."
        ) from exc


def require_deployment_settings(names: list[str | tuple[str, ...]], *, reason: str) -> None:
    """Stop with one message naming every missing setting, not the first alone.

    A tuple names alternatives (any one of them will do).
    """
    missing = [
        " or ".join(name) if isinstance(name, tuple) else name
        for name in names
        if not any(
            os.environ.get(alternative) for alternative in (name if isinstance(name, tuple) else (name,))
        )
    ]
    if missing:
        lines = "\n".join(f"  {name} must be set in production" for name in missing)
        raise DeploymentSettingsMissing(
            f"Cannot start: {reason}, and these settings are missing:\n{lines}\n"
            "Set them, or choose a development run explicitly with BANKAPI_ENV=development "
            "(generated secrets, never for real money)."
        )


_EMAIL_BACKENDS = {
    "console": "django.core.mail.backends.console.EmailBackend",
    "locmem": "django.core.mail.backends.locmem.EmailBackend",
    "dummy": "django.core.mail.backends.dummy.EmailBackend",
    "file": "django.core.mail.backends.filebased.EmailBackend",
    "smtp": "django.core.mail.backends.smtp.EmailBackend",
    "smtps": "django.core.mail.backends.smtp.EmailBackend",
    "submission": "django.core.mail.backends.smtp.EmailBackend",
}


def email_settings(url: str | None) -> dict[str, object]:
    """Django's e-mail settings from one URL: `smtp://user:password@host:25`,
    `submission://...` (port 587, STARTTLS), `smtps://...` (port 465, TLS),
    `console://`, `locmem://`, `dummy://` or `file:///path/to/folder`.
    Unset: the console backend (mail is printed)."""
    if not url:
        return {"EMAIL_BACKEND": _EMAIL_BACKENDS["console"]}
    parts = urlsplit(url)
    backend = _EMAIL_BACKENDS.get(parts.scheme)
    if backend is None:
        raise ImproperlyConfigured(
            f"EMAIL_URL scheme must be one of {', '.join(_EMAIL_BACKENDS)}, got {url!r}"
        )
    found: dict[str, object] = {"EMAIL_BACKEND": backend}
    if parts.scheme == "file":
        found["EMAIL_FILE_PATH"] = unquote(parts.path)
    elif backend.endswith("smtp.EmailBackend"):
        if not parts.hostname:
            raise ImproperlyConfigured(
                "EMAIL_URL needs a host, e.g. smtp://user:password@mail.example.com:25"
            )
        default_port = {"smtp": 25, "smtps": 465, "submission": 587}[parts.scheme]
        found.update(
            EMAIL_HOST=parts.hostname,
            EMAIL_PORT=parts.port or default_port,
            EMAIL_HOST_USER=unquote(parts.username or ""),
            EMAIL_HOST_PASSWORD=unquote(parts.password or ""),
            EMAIL_USE_SSL=parts.scheme == "smtps",
            EMAIL_USE_TLS=parts.scheme == "submission",
        )
    return found
