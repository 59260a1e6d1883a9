"""The production guide's rate-limit settings are the service's, with the defaults it states."""

import re

from config import settings as configured
from tests.kernel.test_readme import README

PRODUCTION = README.parent / "docs" / "production.md"


def test_the_production_guide_states_each_rate_limit_setting_and_its_real_default():
    section = PRODUCTION.read_text().split("## Sign-in floods and request budgets", 1)[1].split("\n## ", 1)[0]

    stated = dict(re.findall(r"^\| `([A-Z_]+)` \| [^|]+ \| `([^`]+)` \|$", section, re.M))

    assert set(stated) == {
        "PASSWORD_CHECKS_IN_FLIGHT",
        "PASSWORD_CHECK_WAIT_SECONDS",
        "PASSWORD_CHECK_CLEAN_WAIT_SECONDS",
        "PASSWORD_CHECK_WAITERS",
        "REQUEST_BUDGET_PER_TOKEN",
        "REQUEST_BUDGET_PER_ADDRESS",
        "REQUEST_BUDGET_WINDOW_SECONDS",
    }
    for name, default in stated.items():
        assert str(getattr(configured, name)) == default, name
