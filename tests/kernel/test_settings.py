import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_check(env: dict[str, str]) -> subprocess.CompletedProcess:
    clean = {
        k: v
        for k, v in os.environ.items()
        if k
        not in {
            "SECRET_KEY",
            "JWT_PRIVATE_KEY",
            "JWT_PRIVATE_KEY_FILE",
            "FIELD_ENCRYPTION_KEY",
            "BANKAPI_ENV",
        }
    }
    return subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_production_refuses_to_start_without_secrets():
    result = run_check({"BANKAPI_ENV": "production"})
    assert result.returncode != 0
    assert "SECRET_KEY must be set in production" in result.stderr


def test_production_refuses_to_start_without_jwt_key(tmp_path):
    result = run_check(
        {
            "BANKAPI_ENV": "production",
            "SECRET_KEY": "x" * 50,
            "FIELD_ENCRYPTION_KEY": "Jx2yW1r7fWc3xXz9m1hHn8mJ7y3Q6Qv0Rk4bV2d8TgA=",
            "ALLOWED_HOSTS": "api.example.com",
        }
    )
    assert result.returncode != 0
    assert "JWT_PRIVATE_KEY_FILE must be set in production" in result.stderr


def test_malformed_boolean_setting_fails_closed():
    result = run_check({"DJANGO_DEBUG": "maybe"})
    assert result.returncode != 0
    assert "DJANGO_DEBUG must be a boolean" in result.stderr
