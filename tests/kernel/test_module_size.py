"""No module of the service, its benchmarks or its scripts is over 450 lines: a
module that grows past that holds more than one concern and is split by concern
(the ledger's posting, its integrity check and its statement lines are three
modules), not by size. Migrations count too; the tests do not."""

from pathlib import Path

from tests.kernel.test_dependencies import DOMAIN_APPS, KERNEL

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 450
WALKED = (KERNEL, *DOMAIN_APPS, "bench", "scripts", "deploy")


def module_lengths() -> dict[str, int]:
    return {
        path.relative_to(ROOT).as_posix(): len(path.read_text().splitlines())
        for package in WALKED
        for path in sorted((ROOT / package).rglob("*.py"))
    }


def test_every_package_with_code_is_walked():
    from tests.kernel.test_dependencies import PACKAGES

    assert set(PACKAGES) - set(WALKED) == {"tests"}


def test_no_module_is_over_the_limit():
    over = {path: lines for path, lines in module_lengths().items() if lines > LIMIT}

    assert over == {}
