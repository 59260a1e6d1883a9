from django.contrib.auth.backends import ModelBackend

from authn.models import User


class StaffEmailBackend(ModelBackend):
    """Django admin sign-in for back-office staff.

    Staff belong to no program, so their e-mail is unique among program-less
    users. Program users never sign in to admin.
    """

    def authenticate(self, request, username=None, password=None, **kwargs):
        if not username or password is None:
            return None
        user = User.objects.filter(
            email=username.strip().lower(), program__isnull=True, is_staff=True
        ).first()
        if user is None:
            User().set_password(password)  # same hashing cost for unknown users
            return None
        if user.check_password(password) and self.user_can_authenticate(user):
            return user
        return None
