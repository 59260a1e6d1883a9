"""The environment template (deploy/bankapi.env.example) holds every setting a
deployment cannot start without, with values true to the documented topology.

Runs anywhere (SQLite): the template is read as an operator fills it in, and a
process is started on exactly that environment.
"""

import re
from pathlib import Path

from tests.deploy.test_topology import env_template
from tests.kernel.test_settings import run_check

ROOT = Path(__file__).resolve().parents[2]


def filled_template(tmp_path: Path) -> dict[str, str]:
    """The template with its empty values filled in and its paths moved under tmp_path."""
    from cryptography.fernet import Fernet
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwt = tmp_path / "jwt.pem"
    jwt.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    values = env_template()
    empty = {name for name, value in values.items() if not value}
    secrets = {
        "DATABASE_URL": f"sqlite:///{tmp_path / 'deployment.sqlite3'}",
        "SECRET_KEY": "k" * 20 + "Q7#x" * 10,
        "FIELD_ENCRYPTION_KEY": Fernet.generate_key().decode(),
        "METRICS_TOKEN": "m" * 32,
        "EMAIL_URL": "submission://bank%40example.com:mail-password@mail.example.com",
    }
    assert empty == secrets.keys(), "the template leaves the secrets, database and mail server to fill in"
    return {
        **values,
        **secrets,
        "JWT_PRIVATE_KEY_FILE": str(jwt),
        "STATIC_ROOT": str(tmp_path / "static"),
        "BANKAPI_VAR_DIR": str(tmp_path / "var"),
    }


def test_a_deployment_started_from_the_filled_in_template_passes_the_deployment_checks(tmp_path):
    result = run_check(filled_template(tmp_path), "--deploy", "--fail-level", "WARNING")

    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


def test_the_template_without_trusted_proxy_count_would_not_start(tmp_path):
    """The setting is in the template because a deployment stops without it."""
    env = {k: v for k, v in filled_template(tmp_path).items() if k != "TRUSTED_PROXY_COUNT"}

    result = run_check(env)

    assert result.returncode != 0
    assert "  TRUSTED_PROXY_COUNT must be set in production" in result.stderr


def test_trusted_proxy_count_is_the_number_of_proxies_of_the_documented_topology():
    """docs/deployment.md draws what stands in front of the web nodes; each proxy that
    appends to X-Forwarded-For is one hop the service must trust, no more (a client
    could then choose its own address) and no fewer (every client would be the proxy)."""
    deployment = (ROOT / "docs" / "deployment.md").read_text()
    topology = deployment.split("## Topology", 1)[1].split("```", 2)[1]
    in_front = topology.split("web node", 1)[0]
    appending = re.findall(r"proxy.*appends X-Forwarded-For", in_front)

    assert len(appending) == 1
    assert env_template()["TRUSTED_PROXY_COUNT"] == str(len(appending))
