"""An operator's working day in a real browser (headless Chromium) on a 1,366 x 768
laptop screen: each list and page they work in shows, without scrolling, what
they must see (its filters, the money with its currency, labelled content, the
zone of every time), and no page shows raw JSON."""

import re
from decimal import Decimal

from django.contrib.contenttypes.models import ContentType
from django.test import override_settings
from django.utils import timezone

from approvals.models import Approval, ApprovalSignature
from audit.models import StaffView
from authn.models import User
from bankapi.models import Account, Customer
from payments.models import Hold
from payments.payees import Payee, UkAccount
from payments.services.acceptance import PaymentInstruction, payment_accept
from tests.backoffice.test_browser import SCREENSHOTS, browser, pytestmark, server  # noqa: F401 - fixtures
from tests.batches.factories import make_batch
from tests.support.factories import BeneficiaryFactory, UserFactory

SCREEN = {"width": 1366, "height": 768}
IBAN = "GB29NWBK60161331926819"

# Where a text first shows on the page: the bottom of the innermost visible
# element holding it (null when none does).
TEXT_BOTTOM = """(text) => {
  // Headers may be shown in capitals (CSS): compared in lower case.
  const holds = (el) => el.innerText && el.innerText.toLowerCase().includes(text.toLowerCase());
  const visible = (el) => { const r = el.getBoundingClientRect(); return r.width > 0 && r.height > 0; };
  const inner = [...document.body.querySelectorAll('*')].filter(
    (el) => holds(el) && visible(el) && ![...el.children].some((child) => holds(child) && visible(child)));
  const bottoms = inner.map((el) => el.getBoundingClientRect().bottom + window.scrollY);
  return bottoms.length ? Math.min(...bottoms) : null;
}"""

# Raw JSON or a Python repr an operator should never read.
RAW = re.compile(r"""\{\s*["']|\[\s*\{|["']\s*:\s*["'{\[]|\bobject \(\d+\)""")
A_TIME = re.compile(
    r"\b\d{1,2} (?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4}, \d{1,2}:\d{2}(?: [A-Za-z.]+)?"
)


def _world(account: Account) -> dict:
    """A customer called Margaret Smith with an IBAN, a 20,000.00 payment held for
    review to a saved payee, a batch with a failed item, an executed approval
    signed by a colleague, and holds, one open and one released."""
    Customer.objects.filter(pk=account.customer_id).update(name="Margaret Smith")
    Account.objects.filter(pk=account.pk).update(iban=IBAN)
    payee = BeneficiaryFactory(customer=account.customer, name="Big Supplier", account_number="12345678")
    held = payment_accept(
        account=account,
        instruction=PaymentInstruction(
            amount=Decimal("20000.00"),
            currency="GBP",
            reference="Machinery",
            beneficiary=payee,
            payee=Payee(
                name="Big Supplier", account=UkAccount(sort_code="200000", account_number="12345678")
            ),
        ),
    )
    batch = make_batch(account=account, owner_customer=account.customer, statuses=("SUCCESS", "FAILED"))
    initiator = User.objects.filter(customer=account.customer).first()
    colleague = UserFactory(
        program_id=account.program_id, customer=account.customer, email="colleague@example.com"
    )
    approval = Approval.objects.create(
        program_id=account.program_id,
        sandbox=account.sandbox,
        kind=Approval.Kind.PAYMENT,
        status=Approval.Status.EXECUTED,
        customer=account.customer,
        initiator=initiator,
        required=1,
        passkey_required=False,
        content={
            "kind": "payment",
            "accountId": str(account.id),
            "amount": "20000.00",
            "currency": "GBP",
            "reference": "Machinery",
            "payee": {"name": "Big Supplier", "accountNumber": "12345678", "sortCode": "200000"},
        },
        content_hash="a" * 64,
        replay={},
        expires_at=timezone.now(),
        result={"requestId": str(held.id)},
        decided_at=timezone.now(),
    )
    ApprovalSignature.objects.create(
        approval=approval, user=colleague, method=ApprovalSignature.Method.TOTP, approved_at=timezone.now()
    )
    now = timezone.now()
    Hold.objects.create(
        account=account, amount=Decimal("4.00"), placed_at=now, memo=f"Batch {batch.id} item 0"
    )
    Hold.objects.create(
        account=account,
        amount=Decimal("5.00"),
        placed_at=now,
        released_at=now,
        memo=f"Batch {batch.id} item 1",
    )
    Account.objects.filter(pk=account.pk).update(held=Decimal("4.00"))
    return {"held": held, "batch": batch, "approval": approval, "colleague": colleague}


_SHOTS = iter(range(100))


def _check(page, must_see: list[str], problems: list) -> None:
    """Each text of `must_see` above the fold; no raw JSON; every time with its zone."""
    path = page.url.split("/admin", 1)[1]
    fold = page.viewport_size["height"]
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    name = re.sub(r"[^\w]+", "_", path).strip("_")[:80] or "admin"
    page.screenshot(path=str(SCREENSHOTS / f"operator-{next(_SHOTS):02d}-{name}.png"))
    for text in must_see:
        bottom = page.evaluate(TEXT_BOTTOM, text)
        if bottom is None or bottom > fold:
            problems.append((path, f"{text!r} not above the fold (bottom {bottom})"))
    shown = page.inner_text("body")
    for raw in RAW.findall(shown):
        problems.append((path, f"raw JSON or repr: {raw!r}"))
    for time in A_TIME.findall(shown):
        if not time.endswith(" UTC"):
            problems.append((path, f"a time without its zone: {time!r}"))


@override_settings(ADMIN_REQUIRE_TOTP=False)
def test_an_operator_sees_what_each_page_is_for_above_the_fold(server, browser, account):  # noqa: F811
    world = _world(account)
    held, batch, approval = world["held"], world["batch"], world["approval"]
    User.objects.create_superuser("root@backoffice.example", "Root-Password-4242", role="management")
    page = browser.new_page(viewport=SCREEN)
    page.goto(f"{server}/admin/")
    page.fill("#id_username", "root@backoffice.example")
    page.fill("#id_password", "Root-Password-4242")
    page.click("#login-form [type=submit]")
    page.wait_for_selector("#dashboard")
    problems: list = []

    page.goto(f"{server}/admin/payments/paymentrequest/")
    _check(page, ["By created at", "Held for compliance review", "20,000.00 GBP", "UTC"], problems)

    # Approving the held payment: the confirm page says whose money goes to whom.
    page.check(f"input[name=_selected_action][value='{held.id}']")
    page.select_option("select[name=action]", "approve_held")
    page.click("button[name=index]")
    page.wait_for_selector("textarea[name=reason]")
    _check(
        page,
        [
            "Margaret Smith",
            "Big Supplier, 200000 12345678",
            "20,000.00 GBP",
            "Held for compliance review",
            "UTC",
        ],
        problems,
    )

    page.goto(f"{server}/admin/batches/batch/")
    _check(page, ["By created at", "Total per currency", "20.00 GBP", "1 success, 1 failed", "UTC"], problems)
    page.goto(f"{server}/admin/batches/batch/{batch.pk}/change/")
    _check(page, ["Customer: Margaret Smith", "20.00 GBP", "1 success, 1 failed", "Payer account"], problems)
    if page.inner_text("body").count("Margaret Smith") != 1:
        problems.append(("batch page", "the customer is named more than once"))
    if page.locator("table.batch-items tbody tr").count() != 2:
        problems.append(("batch page", "its items are not listed on it"))

    page.goto(f"{server}/admin/approvals/approval/")
    _check(page, ["By created at", "20,000.00 GBP", "Margaret Smith", "UTC"], problems)
    page.goto(f"{server}/admin/approvals/approval/{approval.pk}/change/")
    _check(page, ["20,000.00 GBP", "Margaret Smith", "Payee › Name", "Big Supplier"], problems)
    for label in ("Payee › Account number", "Request id"):
        if page.evaluate(TEXT_BOTTOM, label) is None:
            problems.append(("approval page", f"no labelled field {label!r}"))
    if "Signed by colleague@example.com with an authenticator code" not in page.inner_text("body"):
        problems.append(("approval page", "the signature is not readable"))

    page.goto(f"{server}/admin/payments/hold/")
    _check(page, ["Open (lowers the available balance)", "Released", "4.00 GBP", "UTC"], problems)
    if page.locator("#searchbar").count() != 1:
        problems.append(("holds", "no search"))

    page.goto(f"{server}/admin/events/event/")
    _check(page, ["Events (read-only", "By created at", "UTC"], problems)
    if "to change" in page.inner_text("#content"):
        problems.append(("events", "titled as a list to change"))

    # Finding a caller: by name, by e-mail, by IBAN as printed.
    for path, term, expected in (
        ("bankapi/customer", "margaret smi", "Margaret Smith"),
        ("authn/user", "COLLEAGUE@", "colleague@example.com"),
        ("bankapi/account", "gb29 nwbk 6016 1331 9268 19", IBAN[-8:]),
    ):
        page.goto(f"{server}/admin/{path}/")
        page.fill("#searchbar", term)
        page.press("#searchbar", "Enter")
        page.wait_for_load_state()
        if page.locator("#result_list tbody tr").count() != 1:
            problems.append((path, f"the search {term!r} did not find its one row"))
        _check(page, [expected] if path != "bankapi/account" else [], problems)

    assert problems == [], "\n".join(map(str, problems))
    searches = set(StaffView.objects.exclude(search="").values_list("content_type", "search"))
    expected_searches = {
        (ContentType.objects.get_by_natural_key(*path.split("/")).id, term)
        for path, term in (
            ("bankapi/customer", "margaret smi"),
            ("authn/user", "COLLEAGUE@"),
            ("bankapi/account", "gb29 nwbk 6016 1331 9268 19"),
        )
    }
    assert expected_searches <= searches
