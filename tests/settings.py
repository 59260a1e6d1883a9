"""Settings of the test suite: a development run, chosen explicitly.

With DATABASE_URL set (the PostgreSQL pass) `config.settings` would otherwise be
a deployment and require real secrets; the suite runs on the generated
development ones. Subprocesses the tests start inherit the choice.
"""

import os

os.environ.setdefault("BANKAPI_ENV", "development")

from config.settings import *  # noqa: E402, F403
