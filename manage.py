#!/usr/bin/env python
import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from django.conf import settings

    from config.env import DeploymentSettingsMissing

    try:
        # Load the settings before any command runs: a deployment missing its
        # secrets stops here with one message, not a traceback per command.
        settings.INSTALLED_APPS  # noqa: B018
    except DeploymentSettingsMissing as exc:
        sys.exit(str(exc))
    from django.core.management import execute_from_command_line

    from bankapi.ops.logs import logging_to_stderr

    # What a command prints on stdout is its answer (`bootstrap_sandbox --json >
    # sandbox.json`): its log lines, JSON ones included, go to stderr. Logging is
    # configured from the settings when the command starts, just below.
    logging_to_stderr(settings.LOGGING)

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
