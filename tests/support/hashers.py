from django.contrib.auth.hashers import Argon2PasswordHasher


class FastArgon2PasswordHasher(Argon2PasswordHasher):
    """Still Argon2, with a cost small enough for hundreds of test sign-ins."""

    time_cost = 1
    memory_cost = 1024
    parallelism = 1
