from django.contrib.auth.hashers import Argon2PasswordHasher as DjangoArgon2PasswordHasher


class Argon2PasswordHasher(DjangoArgon2PasswordHasher):
    """Django's Argon2id with one lane (`parallelism = 1`) instead of eight.

    The same memory and time cost, so the same work for an attacker per guess;
    but a check runs on one thread. With eight lanes each check starts eight
    threads, and a handful of checks in flight outnumber every other request's
    threads for the CPU: the bound on checks in flight (authn.services.password_checks)
    then bounds the CPU they take to that many cores. Hashes made with other
    parameters still verify, and are remade with these at the next sign-in.
    """

    parallelism = 1
