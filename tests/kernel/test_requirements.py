"""The install files: production installs only what the service runs, every file
hash-checked, and nothing the running service imports is left out of that set."""

import ast
import importlib.metadata
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# The service's own packages (every Django app of the project, a new one included,
# and the project's configuration): what the web nodes, workers and beat import.
SERVICE_PACKAGES = sorted([*(path.parent.name for path in ROOT.glob("*/apps.py")), "config"])
# Started or loaded by name rather than imported by the service's code: the process
# commands of deploy/ (gunicorn, celery) and what the settings name as dotted paths
# (Argon2 behind Django's password hasher, S3 storage behind django-storages).
LOADED_BY_NAME = ["gunicorn", "celery", "argon2", "storages", "boto3", "whitenoise", "psycopg", "redis"]
# Development and test tools: never in a production install.
DEV_TOOLS = {
    "pytest", "pytest-django", "playwright", "moto", "schemathesis", "mypy", "ruff", "flask",
    "werkzeug", "factory-boy", "faker", "time-machine", "hypothesis", "django-stubs",
    "djangorestframework-stubs", "openapi-spec-validator", "standardwebhooks", "pip-tools",
    "responses", "docker", "cfn-lint",
}  # fmt: skip


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def locked(path: Path) -> dict[str, tuple[str, list[str]]]:
    """{distribution: (version, hashes)} of a compiled requirements file."""
    text = path.read_text().replace("\\\n", " ")
    entries = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        requirement, *options = line.split(" --")
        match = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?==(\S+)", requirement.strip())
        assert match, f"{path.name}: not pinned with ==: {requirement!r}"
        hashes = [option.split("=", 1)[1].strip() for option in options if option.startswith("hash=")]
        entries[normalise(match[1])] = (match[3], hashes)
    return entries


RUNTIME = locked(ROOT / "requirements.txt")
# Named in requirements.in: what the service uses directly, not only through another package.
DIRECT = {
    normalise(re.split(r"[\[=<>!~ ;]", line.strip(), maxsplit=1)[0])
    for line in (ROOT / "requirements.in").read_text().splitlines()
    if line.strip() and not line.lstrip().startswith(("#", "-"))
}
DEV = locked(ROOT / "requirements-dev.txt")


@pytest.mark.parametrize("name", ["requirements.txt", "requirements-dev.txt"])
def test_every_line_is_pinned_with_hashes(name):
    entries = locked(ROOT / name)
    assert entries, f"{name} pins nothing"
    unhashed = [dist for dist, (_, hashes) in entries.items() if not hashes]
    assert unhashed == [], f"{name}: no --hash for {unhashed}"
    assert all(h.startswith("sha256:") and len(h) == 71 for _, hashes in entries.values() for h in hashes)


def test_runtime_set_holds_no_development_tool():
    assert sorted(DEV_TOOLS & RUNTIME.keys()) == []
    # ... and the development file does hold them (the tests need them).
    assert {"pytest", "mypy", "ruff", "playwright", "moto", "schemathesis", "pip-tools"} <= DEV.keys()


def test_development_set_installs_the_runtime_versions():
    differing = {dist: (version, DEV.get(dist, (None,))[0]) for dist, (version, _) in RUNTIME.items()}
    assert {dist: pair for dist, pair in differing.items() if pair[0] != pair[1]} == {}


def test_stubs_follow_the_django_line_the_service_runs():
    django_line = RUNTIME["django"][0].split(".")[:2]
    assert DEV["django-stubs"][0].split(".")[:2] == django_line
    assert DEV["django-stubs-ext"][0].split(".")[:2] == django_line


def runtime_imports(path: Path) -> set[str]:
    """Top-level names a module imports when it runs (not under `if TYPE_CHECKING:`)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    skipped = {
        id(node)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
        for statement in block.body
        for node in ast.walk(statement)
    }
    names = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def service_modules() -> list[Path]:
    modules = [ROOT / "manage.py"]
    for package in SERVICE_PACKAGES:
        modules += [path for path in (ROOT / package).rglob("*.py") if "tests" not in path.parts]
    return modules


def test_every_import_of_the_service_resolves_from_the_runtime_set():
    imported = set(LOADED_BY_NAME)
    for module in service_modules():
        imported |= runtime_imports(module)
    third_party = imported - set(sys.stdlib_module_names) - set(SERVICE_PACKAGES)
    providers = importlib.metadata.packages_distributions()

    unresolved = sorted(name for name in third_party if name not in providers)
    assert unresolved == [], f"imported by the service but installed by no distribution: {unresolved}"
    missing = {
        name: sorted(providers[name])
        for name in third_party
        if not {normalise(dist) for dist in providers[name]} & DIRECT
    }
    assert missing == {}, f"imported by the service but not named in requirements.in: {missing}"
    assert DIRECT <= RUNTIME.keys(), "requirements.txt is older than requirements.in: run make lock"


def test_what_runtime_distributions_require_is_locked_too():
    """A runtime install with --require-hashes fails on any dependency the lock lacks."""
    unlocked = set()
    for dist in RUNTIME:
        for requirement in importlib.metadata.requires(dist) or []:
            if "extra ==" in requirement:
                continue
            name_and_marker = requirement.split(";", 1)
            if len(name_and_marker) == 2 and not _marker_applies(name_and_marker[1]):
                continue
            unlocked.add(normalise(re.split(r"[ <>=!~\[(]", name_and_marker[0].strip(), maxsplit=1)[0]))
    assert sorted(unlocked - RUNTIME.keys()) == []


def _marker_applies(marker: str) -> bool:
    from packaging.markers import Marker

    return Marker(marker).evaluate({"extra": ""})
