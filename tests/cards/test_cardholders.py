"""POST .../cardholders: who may hold cards on an account, and the rules their
names, e-mail, date of birth and address follow."""

from datetime import timedelta

import pytest
from django.utils import timezone

from cards.models import Cardholder
from tests.cards.conftest import assert_error
from tests.support.auth import id_header
from tests.support.single_line import LINE_BREAKING, with_inside

ADDRESS = {"addressLine1": "1 High Street", "city": "London", "postalCode": "SW1A 1AA", "country": "GB"}
BODY = {
    "firstName": "Ada",
    "lastName": "Lovelace",
    "email": "ada@example.com",
    "dateOfBirth": "1990-12-10",
    "address": ADDRESS,
}


def create(api, holder, body, **kwargs):
    headers = kwargs.pop("headers", holder.auth)
    return api.post(holder.account_url("cardholders", **kwargs), body, format="json", **headers)


def test_a_business_customer_creates_a_cardholder(api, business):
    body = {**BODY, "address": {**ADDRESS, "addressLine2": "Flat 2", "state": "Greater London"}}

    response = create(api, business, body)

    assert response.status_code == 200, response.content
    answer = response.json()
    assert set(answer) == {"success", "cardholderId", "message"}
    assert answer["success"] is True and answer["message"]
    stored = Cardholder.objects.get(id=answer["cardholderId"])
    assert (stored.first_name, stored.last_name, stored.email) == ("Ada", "Lovelace", "ada@example.com")
    assert str(stored.date_of_birth) == "1990-12-10"
    assert (stored.address_line1, stored.address_line2, stored.city, stored.state) == (
        "1 High Street",
        "Flat 2",
        "London",
        "Greater London",
    )
    assert (stored.postal_code, stored.country) == ("SW1A 1AA", "GB")
    assert stored.account_id == business.account.id
    assert (str(stored.program_id), stored.sandbox) == (business.program_id, True)


def test_a_program_without_cardholders_answers_not_supported(api, consumer):
    response = create(api, consumer, BODY)

    assert_error(response, 422, "NOT_SUPPORTED")
    assert not Cardholder.objects.exists()


def test_on_a_consumer_program_with_cardholders_only_the_rules_of_sent_fields_apply(api, consumer):
    program = consumer.program
    program.cardholders_enabled = True
    program.save()

    minimal = create(api, consumer, {"firstName": "Sam", "lastName": "Lee"})
    no_address = create(api, consumer, {"firstName": "Sam", "lastName": "Lee", "dateOfBirth": "2001-02-03"})
    bad_name = create(api, consumer, {"firstName": "Sam1"})

    assert minimal.status_code == 200 and no_address.status_code == 200, minimal.content
    assert_error(bad_name, 400, "VALIDATION_ERROR")
    assert Cardholder.objects.filter(account=consumer.account).count() == 2


@pytest.mark.parametrize("missing", ["firstName", "lastName", "email", "address"])
def test_business_programs_require_names_email_and_address(api, business, missing):
    body = {key: value for key, value in BODY.items() if key != missing}

    body_ = assert_error(create(api, business, body), 400, "VALIDATION_ERROR")

    assert [error["field"] for error in body_["errors"]] == [missing]
    assert not Cardholder.objects.exists()


@pytest.mark.parametrize("missing", ["addressLine1", "city", "postalCode", "country"])
def test_the_address_needs_line1_city_postal_code_and_country(api, business, missing):
    address = {key: value for key, value in ADDRESS.items() if key != missing}

    body = assert_error(create(api, business, {**BODY, "address": address}), 400, "VALIDATION_ERROR")

    assert [error["field"] for error in body["errors"]] == [f"address.{missing}"]


@pytest.mark.parametrize(
    ("first", "last"),
    [
        ("Ada", "Lovelace"),
        ("Mary-Jane", "O'Neil"),
        ("Anna Maria", "Van Der Berg"),
        ("A", "B"),
        ("Abcdefghijk", "Lmnopqrstuvw"),  # 11 + 12 = 23: the limit exactly
        ("Jean-Luc", "De La Tour-Smit"),  # 8 + 15 = 23, separators included
    ],
)
def test_names_of_english_letters_and_inner_separators_are_accepted(api, business, first, last):
    response = create(api, business, {**BODY, "firstName": first, "lastName": last})

    assert response.status_code == 200, response.content
    stored = Cardholder.objects.get(id=response.json()["cardholderId"])
    assert (stored.first_name, stored.last_name) == (first, last)


@pytest.mark.parametrize(
    ("first", "last"),
    [
        ("Abcdefghijkl", "Lmnopqrstuvw"),  # 12 + 12 = 24
        ("Jean-Luc", "De La Tour-Smith"),  # 8 + 16 = 24: separators count
        ("A", "Bcdefghijklmnopqrstuvwxy"),  # 1 + 24
    ],
)
def test_first_and_last_name_together_are_at_most_23_characters(api, business, first, last):
    body = assert_error(
        create(api, business, {**BODY, "firstName": first, "lastName": last}), 400, "VALIDATION_ERROR"
    )

    assert "23" in " ".join(error["message"] for error in body["errors"])
    assert not Cardholder.objects.exists()


@pytest.mark.parametrize(
    "name",
    [
        "",
        " Ada",
        "Ada ",
        "Ada  Byron",
        "Ada--Byron",
        "-Ada",
        "Ada'",
        "Zoë",
        "Ада",
        "Ada1",
        "Ada.B",
        "Ada_B",
        "Ada\tB",
        # `$` matched before a final newline: "John\n" was stored.
        "Ada\n",
        "Ada\r\n",
        "\nAda",
        "Ａda",
        123,
        None,
        ["Ada"],
    ],
)
@pytest.mark.parametrize("field", ["firstName", "lastName"])
def test_names_outside_the_rule_are_refused(api, business, field, name):
    body = assert_error(create(api, business, {**BODY, field: name}), 400, "VALIDATION_ERROR")

    assert field in [error["field"] for error in body["errors"]]
    assert not Cardholder.objects.exists()


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("email", "not-an-email"),
        ("email", ""),
        ("email", 42),
        ("email", "a" * 250 + "@x.io"),
        ("dateOfBirth", "1990-2-3"),
        ("dateOfBirth", "1990/12/10"),
        ("dateOfBirth", "1990-02-30"),
        ("dateOfBirth", "19901210"),
        ("dateOfBirth", "1990-12-10T00:00:00Z"),
        ("dateOfBirth", "１９９０-12-10"),
        ("dateOfBirth", ""),
        ("dateOfBirth", 19901210),
        ("address", "1 High Street, London"),
        ("address", None),
        ("address.country", "gb"),
        ("address.country", "GBR"),
        ("address.country", "XX"),
        ("address.country", "UK"),
        ("address.country", ""),
        ("address.country", 826),
        ("address.addressLine1", ""),
        ("address.addressLine1", "x" * 101),
        ("address.city", ""),
        ("address.postalCode", ""),
        ("address.postalCode", "x" * 17),
        ("address.postalCode", "SW1A#1AA"),
        ("address.postalCode", "-SW1A"),
        ("address.addressLine1", "1 High\nStreet"),
        ("address.addressLine1", "1 High Street\n"),
        ("address.city", "London\n"),
        ("address.postalCode", "SW1A 1AA\n"),
        ("dateOfBirth", "1990-12-10\n"),
        ("address.city", "Lon\x00don"),
        ("address.state", 5),
        ("address.addressLine2", "x" * 101),
    ],
)
def test_bad_fields_are_refused_with_their_name(api, business, field, value):
    body = {**BODY, "address": dict(ADDRESS)}
    if field.startswith("address."):
        body["address"][field.split(".")[1]] = value
    else:
        body[field] = value

    answer = assert_error(create(api, business, body), 400, "VALIDATION_ERROR")

    assert field in [error["field"] for error in answer["errors"]], answer
    assert not Cardholder.objects.exists()


def test_a_date_of_birth_must_be_in_the_past(api, business):
    today = timezone.now().date()

    for day in (today, today + timedelta(days=1)):
        body = assert_error(
            create(api, business, {**BODY, "dateOfBirth": day.isoformat()}), 400, "VALIDATION_ERROR"
        )
        assert body["errors"][0]["field"] == "dateOfBirth"
    yesterday = create(api, business, {**BODY, "dateOfBirth": (today - timedelta(days=1)).isoformat()})
    assert yesterday.status_code == 200, yesterday.content


def test_program_and_sandbox_come_from_the_token(api, business, consumer_program):
    body = assert_error(
        create(api, business, {**BODY, "programId": str(consumer_program.id), "sandbox": False}),
        400,
        "VALIDATION_ERROR",
    )

    assert {error["field"] for error in body["errors"]} == {"programId", "sandbox"}


def test_malformed_json_is_bad_input(api, business):
    response = api.post(
        business.account_url("cardholders"),
        b'{"firstName": ',
        content_type="application/json",
        **business.auth,
    )

    assert_error(response, 400, "VALIDATION_ERROR")


def test_another_customers_account_is_not_found(api, business, consumer, consumer2):
    program = consumer.program
    program.cardholders_enabled = True
    program.save()
    own_customer_other_account = f"/v1/customers/{consumer.customer_id}/accounts/{consumer2.account_id}"
    others = [
        # Another customer's account, through its own customer id.
        create(api, consumer2, {"firstName": "Eve"}, headers=consumer.auth),
        # Another customer's account under the caller's own customer id.
        api.post(
            f"{own_customer_other_account}/cardholders", {"firstName": "Eve"}, format="json", **consumer.auth
        ),
        # Another program's customer and account.
        create(api, business, BODY, headers=consumer.auth),
        create(api, consumer, BODY, account_id="not-an-id"),
    ]

    for response in others:
        assert_error(response, 404, "RESOURCE_NOT_FOUND")
    assert not Cardholder.objects.exists()


def test_an_account_is_resolved_before_the_body_is_read(api, business, consumer):
    response = create(api, business, {"firstName": 5}, account_id=consumer.account_id)

    assert_error(response, 404, "RESOURCE_NOT_FOUND")


def test_the_id_token_and_no_token_are_unauthorized(api, business):
    id_token = create(api, business, BODY, headers=id_header(business.email, business.program_id))
    no_token = create(api, business, BODY, headers={})

    assert_error(id_token, 401, "UNAUTHORIZED")
    assert_error(no_token, 401, "UNAUTHORIZED")
    assert not Cardholder.objects.exists()


@pytest.mark.parametrize("character", LINE_BREAKING.values(), ids=LINE_BREAKING.keys())
@pytest.mark.parametrize("line", ["addressLine1", "addressLine2", "city", "state"])
def test_address_lines_are_single_line_text(api, business, line, character):
    address = {**ADDRESS, line: with_inside("Greater London", character)}

    response = create(api, business, {**BODY, "address": address})

    body = assert_error(response, 400, "VALIDATION_ERROR")
    assert [error["field"] for error in body["errors"]] == [f"address.{line}"]
    assert not Cardholder.objects.exists()
