import pytest
from rest_framework.request import Request
from rest_framework.test import APIRequestFactory

from bankapi.errors import ApiError
from bankapi.http.pagination import paginate, parse_limit
from bankapi.models import Customer, Program


def list_request(**params: str) -> Request:
    return Request(APIRequestFactory().get("/v1/customers", params))


@pytest.mark.parametrize("raw, expected", [(None, 50), ("1", 1), ("200", 200), ("201", 200), ("5000", 200)])
def test_limit_is_clamped_to_200(raw, expected):
    assert parse_limit(raw) == expected


@pytest.mark.parametrize("raw", ["0", "-1", "1.5", "10abc", "", " 10", "abc", "1e3"])
def test_invalid_limits_are_refused(raw):
    with pytest.raises(ApiError) as caught:
        parse_limit(raw)
    assert caught.value.status == 400
    assert caught.value.extra["errors"][0]["field"] == "limit"


def test_pages_walk_newest_first_without_repeats_or_gaps(db):
    program = Program.objects.create(name="Paging", account_type="consumer")
    made = [Customer.objects.create(program=program, name=f"c{i}") for i in range(7)]
    queryset = Customer.objects.filter(program=program)

    seen, token = [], None
    while True:
        page = paginate(queryset, list_request(limit="3", **({"nextToken": token} if token else {})))
        seen.extend(page.items)
        token = page.next_token
        if token is None:
            break
        # A row created between pages must not shift what the next page returns.
        Customer.objects.create(program=program, name="late")

    assert [c.pk for c in seen[:7]] == [
        c.pk for c in sorted(made, key=lambda c: (c.created_at, c.pk), reverse=True)
    ]
    assert len({c.pk for c in seen}) == len(seen)


def test_forged_or_garbled_token_is_refused(db):
    with pytest.raises(ApiError) as caught:
        paginate(Customer.objects.all(), list_request(nextToken="eyJjIjoiMjAyNi0wMS0wMSJ9:forged"))
    assert caught.value.extra["errors"][0]["field"] == "nextToken"


@pytest.mark.parametrize("raw", ["9" * 5000, "0" * 4999 + "7" * 8, "1" + "0" * 40])
def test_enormous_limits_are_clamped_not_a_crash(raw):
    assert parse_limit(raw) == 200


@pytest.mark.parametrize("raw, expected", [("007", 7), ("0" * 5000 + "12", 12)])
def test_leading_zeros_are_read_as_the_number(raw, expected):
    assert parse_limit(raw) == expected


@pytest.mark.parametrize("raw", ["٥", "١٠", "10\n", "0" * 5000])
def test_non_ascii_digits_newlines_and_zero_are_refused(raw):
    with pytest.raises(ApiError):
        parse_limit(raw)
