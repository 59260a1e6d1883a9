from django.contrib.auth.backends import ModelBackend

from authn.models import User
from authn.services.password_checks import password_check_slot


class StaffEmailBackend(ModelBackend):
    """Django admin sign-in for back-office staff.

    Staff belong to no program, so their e-mail is unique among program-less
    users. Program users never sign in to admin.
    """

    def authenticate(self, request, username=None, password=None, **kwargs):
        """The staff user, or None; `PasswordChecksBusy` (429) when no password-check slot frees."""
        if not username or password is None:
            return None
        user = User.objects.filter(
            email=username.strip().lower(), program__isnull=True, is_staff=True
        ).first()
        with password_check_slot():
            if user is None:
                User().set_password(password)  # same hashing cost for unknown users
                return None
            matches = user.check_password(password)
        if matches and self.user_can_authenticate(user):
            return user
        return None
