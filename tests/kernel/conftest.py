"""Kernel tests act as the payer (tests/support/fixtures.py): its program, its
accounts and its tokens, made for each test."""

import pytest


@pytest.fixture
def customer_auth(payer) -> dict[str, str]:
    return payer.access


@pytest.fixture
def customer_id_auth(payer) -> dict[str, str]:
    return payer.id
