"""The back office's staff: the operator, a management user who signs in to the
admin site in the administrator group (every permission), not a superuser.

    client.force_login(operator_user())
"""

import uuid

from django.contrib.auth.models import Group

from authn.models import User

OPERATOR_PASSWORD = "Operator-Password-4242"


def operator_user(email: str | None = None, password: str = OPERATOR_PASSWORD) -> User:
    """A new operator (its own e-mail unless one is given)."""
    user = User.objects.create_user(
        email or f"operator.{uuid.uuid4().hex[:12]}@backoffice.example",
        password,
        role="management",
        is_staff=True,
    )
    user.groups.add(Group.objects.get_or_create(name="administrator")[0])
    return user
