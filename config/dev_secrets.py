"""Secrets for the embedded default (development, tests, `make run`).

Generated once into the git-ignored `var/` folder so that restarts keep the same
signing key, Django secret and field-encryption key. Production never calls this:
it must be given its secrets through the environment.
"""

import json
import secrets
from pathlib import Path

from cryptography.fernet import Fernet
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa


def _write_private(path: Path, content: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + f".{secrets.token_hex(4)}.tmp")
    tmp.write_bytes(content)
    tmp.chmod(0o600)
    # rename is atomic, so two processes starting at once never read half a file
    tmp.replace(path)


def load_or_create(var_dir: Path) -> dict[str, str]:
    secrets_file = var_dir / "dev-secrets.json"
    key_file = var_dir / "jwt-signing-key.pem"
    if not secrets_file.exists():
        generated = {
            "SECRET_KEY": secrets.token_urlsafe(50),
            "FIELD_ENCRYPTION_KEY": Fernet.generate_key().decode(),
        }
        _write_private(secrets_file, json.dumps(generated).encode())
    if not key_file.exists():
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        pem = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        _write_private(key_file, pem)
    values: dict[str, str] = json.loads(secrets_file.read_text())
    values["JWT_PRIVATE_KEY"] = key_file.read_text()
    return values
