"""Tokens for tests of routes other than /v1/auth/* (whose flows have their own
tests end to end). These call the same service the sign-in routes call."""

from authn.models import User
from authn.tokens import tokens_issue


def user_by_email(email: str, program_id: str | None) -> User:
    return User.objects.get(email=email, program_id=program_id)


def tokens_for(email: str, program_id: str | None):
    return tokens_issue(user_by_email(email, program_id))


def access_header(email: str, program_id: str | None) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Bearer {tokens_for(email, program_id).access_token}"}


def id_header(email: str, program_id: str | None) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Bearer {tokens_for(email, program_id).id_token}"}
