"""A clock, its customers and their calls, over HTTP as an integrator makes them."""

from datetime import UTC, datetime, time, timedelta

from tests.support.auth import access_header, id_header


def management(sandbox: dict) -> dict[str, str]:
    return id_header(sandbox["management"]["email"], None)


def z(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def midnight(days_from_today: int) -> datetime:
    day = datetime.now(UTC).date() + timedelta(days=days_from_today)
    return datetime.combine(day, time(0), tzinfo=UTC)


def clock_make(api, sandbox: dict, program: str, frozen: datetime, **extra) -> dict:
    answer = api.post(
        f"/v1/sandbox/test-clocks?programId={program}",
        {"frozenTime": z(frozen), **extra},
        format="json",
        **management(sandbox),
    )
    assert answer.status_code == 200, answer.content
    return answer.json()["data"]


def customer_make(api, sandbox: dict, program: str, clock_id: str | None = None, **body) -> dict:
    if clock_id is not None:
        body["testClockId"] = clock_id
    answer = api.post(
        f"/v1/sandbox/customers?programId={program}", body, format="json", **management(sandbox)
    )
    assert answer.status_code == 200, answer.content
    return answer.json()["data"]


def advance(api, sandbox: dict, program: str, clock_id: str, to: datetime, **headers):
    return api.post(
        f"/v1/sandbox/test-clocks/{clock_id}/advance?programId={program}",
        {"to": z(to)},
        format="json",
        **management(sandbox),
        **headers,
    )


def as_customer(made: dict, program: str) -> dict[str, str]:
    return access_header(made["email"], program)


def account_url(made: dict, account_key: str = "accountId") -> str:
    return f"/v1/customers/{made['customerId']}/accounts/{made[account_key]}"
