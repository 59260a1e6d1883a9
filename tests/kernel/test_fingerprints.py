"""Fingerprints are stored in the domain's names with a version, and compare
with the records written under earlier forms of the same request."""

from bankapi.idempotency import Fingerprint

PAYMENT = Fingerprint(
    {"amount": "10.00", "account_id": "a"},
    version=2,
    earlier={1: {"amount": "10.00", "payer_id": "a"}, None: {"amount": "10.00", "accountId": "a"}},
)


def test_a_fingerprint_is_stored_with_its_version():
    assert PAYMENT.stored() == {"version": 2, "fields": {"amount": "10.00", "account_id": "a"}}
    assert PAYMENT.matches(PAYMENT.stored())


def test_a_record_of_an_earlier_version_compares_with_that_versions_form():
    assert PAYMENT.matches({"version": 1, "fields": {"amount": "10.00", "payer_id": "a"}})
    assert not PAYMENT.matches({"version": 1, "fields": {"amount": "10.01", "payer_id": "a"}})
    # The current form under an earlier version is not that version's form.
    assert not PAYMENT.matches({"version": 1, "fields": {"amount": "10.00", "account_id": "a"}})


def test_a_record_without_a_version_compares_with_the_legacy_form():
    assert PAYMENT.matches({"amount": "10.00", "accountId": "a"})
    assert not PAYMENT.matches({"amount": "10.01", "accountId": "a"})
    assert not PAYMENT.matches({"amount": "10.00", "account_id": "a"})


def test_a_version_or_a_form_it_does_not_know_never_matches():
    current_only = Fingerprint({"amount": "10.00"})

    assert not current_only.matches({"amount": "10.00"})
    assert not PAYMENT.matches({"version": 3, "fields": {"amount": "10.00", "account_id": "a"}})
    assert not PAYMENT.matches(None)
