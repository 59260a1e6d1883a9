"""A scratch database for a bench that seeds through the ORM: Django's test
database beside the configured one (`test_<name>`), made for the run and
dropped afterwards, also when the run fails, so that a bench never writes into
the database it was pointed at."""

from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def scratch_database() -> Iterator[None]:
    """Run the block on a test database made for it (Django must be set up)."""
    from django.db import connection

    original_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)
    try:
        yield
    finally:
        connection.creation.destroy_test_db(original_name, verbosity=0)
