"""Passwords are hashed with Argon2id on one lane: a check runs on one thread, so
the bound on checks in flight bounds the cores they take. Hashes made with
Django's eight lanes still verify and are remade at the next sign-in."""

from django.contrib.auth.hashers import Argon2PasswordHasher as DjangoArgon2PasswordHasher
from django.contrib.auth.hashers import identify_hasher, make_password

from authn.models import User
from config import settings as configured
from tests.authn.helpers import auth_post, challenge_of


def test_new_hashes_are_argon2id_on_one_lane_at_djangos_memory_and_time_cost(settings):
    settings.PASSWORD_HASHERS = configured.PASSWORD_HASHERS

    encoded = make_password("Velvet-Orchard-Compass-81")
    details = identify_hasher(encoded).safe_summary(encoded)

    django = DjangoArgon2PasswordHasher()
    assert (details["variety"], details["parallelism"]) == ("argon2id", 1)
    assert (details["memory cost"], details["time cost"]) == (django.memory_cost, django.time_cost)


def test_a_password_hashed_on_eight_lanes_still_signs_in_and_is_rehashed_on_one(api, totp_person, settings):
    settings.PASSWORD_HASHERS = configured.PASSWORD_HASHERS
    spare = totp_person
    user = User.objects.get(email=spare.email, program_id=spare.program_id)
    user.password = make_password(spare.password, hasher=DjangoArgon2PasswordHasher())
    user.save(update_fields=["password"])
    assert ",p=8$" in user.password

    response = auth_post(
        api, "login", {"email": spare.email, "password": spare.password}, program=spare.program_id
    )

    challenge_of(response, "SOFTWARE_TOKEN_MFA")
    user.refresh_from_db()
    assert ",p=1$" in user.password and user.check_password(spare.password)
