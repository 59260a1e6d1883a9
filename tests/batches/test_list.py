"""GET /v1/batch-payments: every parameter, valid and invalid, and who sees what."""

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from bankapi.models import Account, Program
from bankapi.roles import Role
from batches.models import Batch
from tests.batches.conftest import URL, other_custodian_with_account, payment, verify
from tests.batches.factories import make_batch
from tests.support.factories import SignedIn, UserFactory, funded_account

pytestmark = pytest.mark.django_db


@pytest.fixture
def account(custodian_accounts) -> Account:
    return Account.objects.get(id=custodian_accounts[0]["accountId"])


@pytest.fixture
def program_query(program) -> str:
    return f"programId={program.id}"


def listed(api, auth, query=""):
    response = api.get(f"{URL}?{query}", **auth)
    assert response.status_code == 200, response.json()
    return response.json()["data"]


def ids(data) -> list[str]:
    return [entry["id"] for entry in data["paymentsBatches"]]


def test_custodian_lists_its_batches_newest_first(api, custodian_auth, custodian, account):
    old = make_batch(account=account, custodian=custodian, created_at=timezone.now() - timedelta(hours=1))
    new = make_batch(account=account, custodian=custodian)

    data = listed(api, custodian_auth)

    assert ids(data) == [str(new.id), str(old.id)]
    assert data["nextToken"] is None
    entry = data["paymentsBatches"][0]
    assert entry == {
        "id": str(new.id),
        "status": "PARTIALLY_FAILED",
        "customerId": str(account.customer_id),
        "programId": str(account.program_id),
        "sandbox": True,
        "paymentsCount": 2,
        "createdDateTime": new.created_at.isoformat(),
    }


@pytest.mark.parametrize("limit", ["0", "-1", "1.5", "10abc", "", "abc", " 5", "١٠"])
def test_invalid_limits_are_a_400(api, custodian_auth, limit):
    response = api.get(URL, {"limit": limit}, **custodian_auth)
    assert response.status_code == 400
    assert response.json()["code"] == "VALIDATION_ERROR"
    assert response.json()["errors"][0]["field"] == "limit"


def test_limit_pages_without_duplicates_or_gaps(api, custodian_auth, custodian, account):
    base = timezone.now() - timedelta(days=1)
    made = [
        make_batch(account=account, custodian=custodian, created_at=base + timedelta(minutes=n))
        for n in range(7)
    ]
    # Two batches created in the same instant still page apart (ties break on id).
    Batch.objects.filter(id=made[3].id).update(created_at=made[4].created_at)

    seen, token, pages = [], None, 0
    while True:
        query = "limit=3" + (f"&nextToken={token}" if token else "")
        data = listed(api, custodian_auth, query)
        seen += ids(data)
        pages += 1
        token = data["nextToken"]
        if token is None:
            break
    assert pages == 3
    assert sorted(seen) == sorted(str(b.id) for b in made)
    assert len(seen) == len(set(seen)) == 7


def test_limit_above_200_is_clamped(api, custodian_auth, custodian, account):
    rows = [
        Batch(
            program_id=account.program_id,
            custodian=custodian,
            customer_id=account.customer_id,
            payments_count=0,
            valid_count=0,
            status="COMPLETED",
        )
        for _ in range(201)
    ]
    Batch.objects.bulk_create(rows)
    assert len(ids(listed(api, custodian_auth, "limit=500"))) == 200
    assert len(ids(listed(api, custodian_auth, "limit=200"))) == 200
    assert len(ids(listed(api, custodian_auth, "limit=1"))) == 1
    assert len(ids(listed(api, custodian_auth))) == 50


def test_a_forged_next_token_is_a_400(api, custodian_auth):
    response = api.get(URL, {"nextToken": "forged"}, **custodian_auth)
    assert response.status_code == 400


def test_date_filters_on_the_utc_day_of_creation(api, custodian_auth, custodian, account):
    inside = make_batch(
        account=account, custodian=custodian, created_at=datetime(2026, 6, 30, 23, 59, tzinfo=UTC)
    )
    make_batch(account=account, custodian=custodian, created_at=datetime(2026, 7, 1, 0, 0, tzinfo=UTC))
    make_batch(account=account, custodian=custodian, created_at=datetime(2026, 6, 29, 23, 59, 59, tzinfo=UTC))

    assert ids(listed(api, custodian_auth, "date=2026-06-30")) == [str(inside.id)]
    assert ids(listed(api, custodian_auth, "date=2026-05-01")) == []


@pytest.mark.parametrize(
    "day",
    [
        "",
        "2026/06/30",
        "2026-2-3",
        "2026-02-30",
        "2026-13-01",
        "26-06-30",
        "2026-06-30T00:00",
        "２０２６-０６-３０",
    ],
)
def test_invalid_dates_are_a_400(api, custodian_auth, day):
    response = api.get(URL, {"date": day}, **custodian_auth)
    assert response.status_code == 400
    assert response.json()["errors"][0]["field"] == "date"


@pytest.mark.parametrize("days", ["0", "-1", "1.5", "x", "", "3days"])
def test_invalid_lookback_days_are_a_400_even_with_a_date(
    api, custodian_auth, management_auth, program_query, days
):
    for auth, extra in ((custodian_auth, ""), (management_auth, f"&{program_query}")):
        response = api.get(f"{URL}?date=2026-06-30&lookbackDays={days}{extra}", **auth)
        assert response.status_code == 400
        assert response.json()["errors"][0]["field"] == "lookbackDays"


def test_lookback_days_windows_management_listings_only(
    api, custodian_auth, management_auth, program_query, custodian, account
):
    recent = make_batch(account=account, custodian=custodian, created_at=timezone.now() - timedelta(hours=12))
    old = make_batch(account=account, custodian=custodian, created_at=timezone.now() - timedelta(days=3))

    assert ids(listed(api, management_auth, f"{program_query}&lookbackDays=1")) == [str(recent.id)]
    assert ids(listed(api, management_auth, f"{program_query}&lookbackDays=5")) == [
        str(recent.id),
        str(old.id),
    ]
    # No window without date or lookbackDays.
    assert ids(listed(api, management_auth, program_query)) == [str(recent.id), str(old.id)]
    # Validated, then ignored, for a custodian.
    assert ids(listed(api, custodian_auth, "lookbackDays=1")) == [str(recent.id), str(old.id)]
    # date wins over lookbackDays.
    day = old.created_at.astimezone(UTC).date().isoformat()
    assert ids(listed(api, management_auth, f"{program_query}&lookbackDays=1&date={day}")) == [str(old.id)]


def test_include_item_summary_only_for_the_exact_string_true(api, custodian_auth, custodian, account):
    make_batch(
        account=account,
        custodian=custodian,
        statuses=("SUCCESS", "SUCCESS", "FAILED", "QUEUED", "PROCESSING"),
        amount="2.50",
    )

    entry = listed(api, custodian_auth, "includeItemSummary=true")["paymentsBatches"][0]
    assert entry["itemsStatus"] == {"completed": 2, "pending": 1, "processing": 1, "failed": 1}
    assert entry["totalAmount"] == "12.50"
    for value in ("True", "TRUE", "1", "false", "yes", ""):
        entry = listed(api, custodian_auth, f"includeItemSummary={value}")["paymentsBatches"][0]
        assert "itemsStatus" not in entry and "totalAmount" not in entry


def test_the_item_summary_costs_the_same_queries_for_any_page_size(
    api, custodian_auth, custodian, account, django_assert_max_num_queries
):
    for _ in range(3):
        make_batch(account=account, custodian=custodian)
    with django_assert_max_num_queries(12) as small:
        listed(api, custodian_auth, "includeItemSummary=true")
    for _ in range(40):
        make_batch(account=account, custodian=custodian)
    with django_assert_max_num_queries(len(small.captured_queries)) as large:
        data = listed(api, custodian_auth, "includeItemSummary=true")
    assert len(data["paymentsBatches"]) == 43
    assert len(large.captured_queries) == len(small.captured_queries)


def test_drafts_true_lists_drafts_only_and_never_summaries(
    api, custodian_auth, custodian, account, custodian_accounts
):
    batch = make_batch(account=account, custodian=custodian)
    draft_id = verify(api, custodian_auth, [payment(custodian_accounts[0])])

    drafts = listed(api, custodian_auth, "drafts=true&includeItemSummary=true")
    assert ids(drafts) == [draft_id]
    assert "itemsStatus" not in drafts["paymentsBatches"][0]
    for value in ("", "True", "1", "false"):
        assert ids(listed(api, custodian_auth, f"drafts={value}")) == [str(batch.id)]


def test_drafts_page_and_filter_by_date_like_batches(api, custodian_auth, custodian_accounts):
    made = [verify(api, custodian_auth, [payment(custodian_accounts[0])]) for _ in range(3)]
    first = listed(api, custodian_auth, "drafts=true&limit=2")
    second = listed(api, custodian_auth, f"drafts=true&limit=2&nextToken={first['nextToken']}")
    assert ids(first) + ids(second) == list(reversed(made))
    assert second["nextToken"] is None
    assert ids(listed(api, custodian_auth, "drafts=true&date=2020-01-01")) == []


def test_management_needs_a_program_id(api, management_auth):
    response = api.get(URL, **management_auth)
    assert response.status_code == 400
    assert response.json()["errors"][0]["field"] == "programId"


def test_management_with_an_unknown_program_is_a_404(api, management_auth):
    response = api.get(f"{URL}?programId=4d7c6a7e-4e5f-4b7a-9c1d-000000000000", **management_auth)
    assert response.status_code == 404


def test_management_sees_the_programs_batches_with_names(
    api, management_auth, program_query, custodian, account, customer_account, business
):
    custodian_batch = make_batch(account=account, custodian=custodian)
    own = customer_account
    customer_batch = make_batch(account=own, owner_customer=own.customer)
    business_account = funded_account(business.customer, "0")
    make_batch(account=business_account, owner_customer=business.customer)

    data = listed(api, management_auth, f"{program_query}&includeItemSummary=true")

    by_id = {entry["id"]: entry for entry in data["paymentsBatches"]}
    assert set(by_id) == {str(custodian_batch.id), str(customer_batch.id)}
    assert by_id[str(custodian_batch.id)]["customerName"] == account.customer.name
    assert by_id[str(custodian_batch.id)]["custodianName"] == "Test Custodian"
    assert by_id[str(customer_batch.id)]["customerName"] == own.customer.name
    assert by_id[str(customer_batch.id)]["custodianName"] is None
    assert by_id[str(customer_batch.id)]["itemsStatus"]["completed"] == 1


def test_enrichment_is_for_management_only(api, custodian_auth, custodian, account):
    make_batch(account=account, custodian=custodian)
    entry = listed(api, custodian_auth)["paymentsBatches"][0]
    assert "customerName" not in entry and "custodianName" not in entry


def test_program_id_is_ignored_for_customers_and_custodians(
    api, custodian_auth, custodian, account, business_program
):
    batch = make_batch(account=account, custodian=custodian)
    assert ids(listed(api, custodian_auth, f"programId={business_program.id}")) == [str(batch.id)]


def test_outsiders_see_nothing(
    api, custodian, account, program, business_program, customer_auth, management_auth
):
    batch = make_batch(account=account, custodian=custodian)
    other_custodian, other_account = other_custodian_with_account(program.id)
    make_batch(account=other_account, custodian=other_custodian)
    other = SignedIn(UserFactory(program_id=program.id, role=Role.CUSTODIAN, custodian=other_custodian))
    other_auth = other.access
    assert str(batch.id) not in ids(listed(api, other_auth))
    assert len(ids(listed(api, other_auth))) == 1
    assert ids(listed(api, customer_auth)) == []
    business_mgmt_view = listed(api, management_auth, f"programId={business_program.id}")
    assert str(batch.id) not in ids(business_mgmt_view)


def test_wrong_tokens_are_refused(api, custodian_setup, management, program_query):
    custodian_id_token = custodian_setup.person.id
    management_access = management.access
    assert api.get(URL, **custodian_id_token).status_code == 401
    assert api.get(f"{URL}?{program_query}", **management_access).status_code == 401
    assert api.get(URL).status_code == 401


def test_production_batches_are_not_listed_to_sandbox_callers(api, custodian_auth, custodian, account):
    batch = make_batch(account=account, custodian=custodian)
    Batch.objects.filter(id=batch.id).update(sandbox=False)
    assert ids(listed(api, custodian_auth)) == []
    assert Program.objects.filter(id=account.program_id).exists()
