import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run_check(env: dict[str, str], *args: str, command: str = "check") -> subprocess.CompletedProcess:
    """`manage.py <command>` as an operator would run it: the project's own settings,
    none of the variables this test process carries (the suite's development choice,
    its database, its secrets) unless `env` gives them."""
    return run_operator_process(env, "manage.py", command, *args)


def run_operator_process(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    """`python <args>` from the project folder with the environment `run_check` describes."""
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
            "DATABASE_URL",
            "REDIS_URL",
            "ALLOWED_HOSTS",
            "TRUSTED_PROXY_COUNT",
            "DJANGO_SETTINGS_MODULE",
        }
    }
    return subprocess.run(
        [sys.executable, *args],
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
            "TRUSTED_PROXY_COUNT": "1",
        }
    )
    assert result.returncode != 0
    assert "JWT_PRIVATE_KEY_FILE must be set in production" in result.stderr


def test_malformed_boolean_setting_fails_closed():
    result = run_check({"DJANGO_DEBUG": "maybe"})
    assert result.returncode != 0
    assert "DJANGO_DEBUG must be a boolean" in result.stderr


def production_variables(tmp_path: Path) -> dict[str, str]:
    from cryptography.fernet import Fernet
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    key_file = tmp_path / "jwt.pem"
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return {
        "DATABASE_URL": f"sqlite:///{tmp_path / 'deployment.sqlite3'}",
        "SECRET_KEY": "k" * 20 + "Q7#x" * 10,
        "FIELD_ENCRYPTION_KEY": Fernet.generate_key().decode(),
        "JWT_PRIVATE_KEY_FILE": str(key_file),
        "ALLOWED_HOSTS": "api.example.com",
        "STATIC_ROOT": str(tmp_path / "static"),
        # Clients connect directly: 0 is a value, and a deployment must give one.
        "TRUSTED_PROXY_COUNT": "0",
    }


REQUIRED = [
    "SECRET_KEY",
    "FIELD_ENCRYPTION_KEY",
    "JWT_PRIVATE_KEY or JWT_PRIVATE_KEY_FILE",
    "ALLOWED_HOSTS",
    "TRUSTED_PROXY_COUNT",
]


def test_a_database_url_without_bankapi_env_is_a_deployment_and_names_everything_missing(tmp_path):
    result = run_check({"DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}"})

    assert result.returncode != 0
    assert "DATABASE_URL is set, so this is a deployment" in result.stderr
    for name in REQUIRED:
        assert f"{name} must be set in production" in result.stderr
    assert "BANKAPI_ENV=development" in result.stderr
    # One message, not a traceback.
    assert "Traceback" not in result.stderr
    assert result.stderr.count("Cannot start") == 1


@pytest.mark.parametrize(
    "absent",
    ["SECRET_KEY", "FIELD_ENCRYPTION_KEY", "JWT_PRIVATE_KEY_FILE", "ALLOWED_HOSTS", "TRUSTED_PROXY_COUNT"],
)
def test_a_deployment_missing_one_setting_names_that_one(tmp_path, absent):
    env = {k: v for k, v in production_variables(tmp_path).items() if k != absent}

    result = run_check(env)

    assert result.returncode != 0
    named = [name for name in REQUIRED if f"  {name} must be set" in result.stderr]
    assert len(named) == 1 and absent in named[0]


def test_every_manage_command_and_the_server_stop_on_a_deployment_missing_settings(tmp_path):
    env = {"DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}"}
    for command in ("migrate", "bootstrap_sandbox", "runserver"):
        result = run_check(env, command=command)
        assert result.returncode != 0, command
        assert "SECRET_KEY must be set in production" in result.stderr, command
    assert not (tmp_path / "db.sqlite3").exists(), "migrate must not have touched the database"

    clean = {k: v for k, v in os.environ.items() if k not in {"BANKAPI_ENV", "DJANGO_SETTINGS_MODULE"}}
    server = subprocess.run(
        [sys.executable, "-c", "import config.wsgi"],
        cwd=ROOT,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert server.returncode == 3  # gunicorn: the worker cannot boot, stop
    assert "ALLOWED_HOSTS must be set in production" in server.stderr
    assert "Traceback" not in server.stderr


@pytest.mark.parametrize("process", ["worker", "beat"])
def test_celery_worker_and_beat_stop_with_one_message_on_a_deployment_missing_settings(tmp_path, process):
    clean = {k: v for k, v in os.environ.items() if k not in {"BANKAPI_ENV", "DJANGO_SETTINGS_MODULE"}}
    clean = {k: v for k, v in clean.items() if k not in {"SECRET_KEY", "ALLOWED_HOSTS", "REDIS_URL"}}
    result = subprocess.run(
        [sys.executable, "-m", "celery", "-A", "config", process, "--loglevel=INFO"],
        cwd=ROOT,
        env={**clean, "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert "SECRET_KEY must be set in production" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_deployment_without_trusted_proxy_count_stops_naming_it_alone(tmp_path):
    """Behind a proxy, a forgotten TRUSTED_PROXY_COUNT makes every client one
    address (the proxy's): one client's failures would throttle everyone. So a
    deployment must say how many proxies append to X-Forwarded-For, 0 included."""
    env = {k: v for k, v in production_variables(tmp_path).items() if k != "TRUSTED_PROXY_COUNT"}

    missing = run_check(env)
    empty = run_check({**env, "TRUSTED_PROXY_COUNT": ""})
    negative = run_check({**env, "TRUSTED_PROXY_COUNT": "-1"})

    for result in (missing, empty):
        assert result.returncode != 0
        assert "Cannot start: DATABASE_URL is set, so this is a deployment" in result.stderr
        assert "  TRUSTED_PROXY_COUNT must be set in production" in result.stderr
        assert "SECRET_KEY must be set" not in result.stderr
        assert "Traceback" not in result.stderr
    assert negative.returncode != 0
    assert "TRUSTED_PROXY_COUNT must not be negative" in negative.stderr


def test_an_unreadable_jwt_key_file_stops_with_one_message(tmp_path):
    env = {**production_variables(tmp_path), "JWT_PRIVATE_KEY_FILE": str(tmp_path / "absent.pem")}

    result = run_check(env)

    assert result.returncode != 0
    assert f"JWT_PRIVATE_KEY_FILE is {tmp_path / 'absent.pem'}, which cannot be read" in result.stderr
    assert "Traceback" not in result.stderr


def test_development_is_chosen_explicitly_even_with_a_database_url(tmp_path):
    result = run_check({"DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}", "BANKAPI_ENV": "development"})

    assert result.returncode == 0, result.stderr
    assert "no issues" in result.stdout


def test_no_database_url_is_the_zero_setup_development_start(tmp_path):
    result = run_check({"BANKAPI_VAR_DIR": str(tmp_path)})

    assert result.returncode == 0, result.stderr
    assert (tmp_path / "dev-secrets.json").exists()


def test_an_unknown_bankapi_env_fails_closed():
    result = run_check({"BANKAPI_ENV": "prod"})

    assert result.returncode != 0
    assert "BANKAPI_ENV must be development or production" in result.stderr


def test_check_deploy_passes_with_the_production_variables(tmp_path):
    result = run_check(production_variables(tmp_path), "--deploy", "--fail-level", "WARNING")

    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


def test_the_suite_itself_runs_as_a_development_run():
    from django.conf import settings

    assert os.environ["BANKAPI_ENV"] == "development"
    assert settings.PRODUCTION is False


@pytest.mark.parametrize(
    "url, expected",
    [
        (None, {"EMAIL_BACKEND": "django.core.mail.backends.console.EmailBackend"}),
        ("locmem://", {"EMAIL_BACKEND": "django.core.mail.backends.locmem.EmailBackend"}),
        (
            "file:///var/mail%20out",
            {
                "EMAIL_BACKEND": "django.core.mail.backends.filebased.EmailBackend",
                "EMAIL_FILE_PATH": "/var/mail out",
            },
        ),
        (
            "submission://bank%40example.com:p%3Ass@mail.example.com",
            {
                "EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBackend",
                "EMAIL_HOST": "mail.example.com",
                "EMAIL_PORT": 587,
                "EMAIL_HOST_USER": "bank@example.com",
                "EMAIL_HOST_PASSWORD": "p:ss",
                "EMAIL_USE_SSL": False,
                "EMAIL_USE_TLS": True,
            },
        ),
        (
            "smtps://mail.example.com:2465",
            {
                "EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBackend",
                "EMAIL_HOST": "mail.example.com",
                "EMAIL_PORT": 2465,
                "EMAIL_HOST_USER": "",
                "EMAIL_HOST_PASSWORD": "",
                "EMAIL_USE_SSL": True,
                "EMAIL_USE_TLS": False,
            },
        ),
    ],
)
def test_email_url_gives_djangos_email_settings(url, expected):
    from config.env import email_settings

    assert email_settings(url) == expected


@pytest.mark.parametrize("url", ["pigeon://coop", "smtp://", "smtp:///nohost"])
def test_a_bad_email_url_stops_start_up(url):
    from django.core.exceptions import ImproperlyConfigured

    from config.env import email_settings

    with pytest.raises(ImproperlyConfigured):
        email_settings(url)
