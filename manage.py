#!/usr/bin/env python
import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bankapi.settings")
    from django.conf import settings

    from bankapi.env import DeploymentSettingsMissing

    try:
        # Load the settings before any command runs: a deployment missing its
        # secrets stops here with one message, not a traceback per command.
        settings.INSTALLED_APPS  # noqa: B018
    except DeploymentSettingsMissing as exc:
        sys.exit(str(exc))
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
