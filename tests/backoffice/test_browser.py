"""A compliance officer, in a real browser (headless Chromium), signs in to the
admin, approves a held payment with a reason and sees its new state."""

import shutil
from pathlib import Path

import pyotp
import pytest
from django.db import connections
from django.test import override_settings

from authn.models import User
from batches.models import BatchItem
from onboarding.models import Application, LegalDocumentSet
from payments.models import PaymentRequest
from tests.backoffice.conftest import held_payments
from tests.batches.factories import make_batch
from tests.support.factories_backoffice import OPERATOR_PASSWORD
from tests.support.factories_onboarding import application_of, legal_document_set, legal_set_accepted

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

playwright_sync = pytest.importorskip("playwright.sync_api", reason="Playwright is not installed")
pytestmark = pytest.mark.skipif(
    not (Path(CHROMIUM).exists() or shutil.which("chromium")),
    reason="Chromium is not installed (Debian: apt-get install chromium); .ci/run installs it",
)


@pytest.fixture
def server(transactional_db, monkeypatch):
    """This project's server on 127.0.0.1 and a free port, sharing the test database."""
    from pytest_django.live_server_helper import LiveServer

    # Playwright's sync API keeps an event loop on this thread; the ORM calls the
    # test makes between browser steps are still plain synchronous calls.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    live = LiveServer("127.0.0.1:0")
    live._live_server_modified_settings.enable()
    yield live.url
    live._live_server_modified_settings.disable()
    live.stop()


@pytest.fixture
def browser():
    with playwright_sync.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS, headless=True)
        yield chromium
        chromium.close()
        # The test's ORM calls ran while Playwright's event loop was set on this
        # thread, so Django gave them a connection of their own (async-context
        # storage): close it here, or it outlives the test and holds the test
        # database open when the run drops it.
        connections.close_all()


@override_settings(ADMIN_REQUIRE_TOTP=True)
def test_an_operator_approves_a_held_payment_in_the_browser(server, browser, operator, account):
    (held,) = held_payments(account, 1)
    operator.totp_secret, operator.totp_confirmed = pyotp.random_base32(), True
    operator.save()
    page = browser.new_page()

    page.goto(f"{server}/admin/")
    page.fill("#id_username", operator.email)
    page.fill("#id_password", OPERATOR_PASSWORD)
    page.fill("#id_otp_code", pyotp.TOTP(operator.totp_secret).now())
    page.click("#login-form [type=submit]")
    page.wait_for_selector("#dashboard")
    assert "Held payments to review: 1" in page.inner_text("#dashboard")

    page.click("text=Held payments to review: 1")
    page.check(f"input[name=_selected_action][value='{held.id}']")
    page.select_option("select[name=action]", "approve_held")
    page.click("button[name=index]")
    page.wait_for_selector("textarea[name=reason]")
    page.click("text=Confirm")  # empty: the browser keeps the page, nothing is sent
    assert page.locator("textarea[name=reason]").count() == 1
    assert PaymentRequest.objects.get(id=held.id).status == "PENDING_TM"
    page.fill("textarea[name=reason]", "Invoice matches the contract")
    page.click("text=Confirm")
    page.wait_for_selector("ul.messagelist")

    assert "1 done." in page.inner_text("ul.messagelist")
    assert PaymentRequest.objects.get(id=held.id).status == "PENDING"
    page.goto(f"{server}/admin/payments/paymentrequest/?q={held.id}")
    assert "Pending settlement" in page.inner_text("#result_list")
    page.goto(f"{server}/admin/")
    assert "Held payments to review: 0" in page.inner_text("#dashboard")


# Every admin page on the screens people have: a laptop's 1,366 x 768 and a desktop's
# 1,920 x 1,080. Screenshots of what each shows without scrolling, to look at, and
# the layout facts the browser can measure.
SCREENS = ((1366, 768), (1920, 1080))
SCREENSHOTS = Path(__file__).resolve().parents[2] / "var" / "screenshots"
# A list shows at least this many of its rows (all of them, if fewer) above the fold.
ROWS_ABOVE_THE_FOLD = 5

# Measured in the page: the changelist table's overflow, the page's, the tallest
# header cell and the tallest id cell in lines of their own text, and the bottom of
# the rows the fold must not cut.
LAYOUT = """(rowsAboveTheFold) => {
  const lines = (cell) => {
    const range = document.createRange();
    range.selectNodeContents(cell);
    const rects = [...range.getClientRects()].filter((r) => r.width > 0 && r.height > 0);
    return new Set(rects.map((r) => Math.round(r.bottom))).size;
  };
  const results = document.querySelector('#changelist .results');
  const headers = [...document.querySelectorAll('#result_list thead th .text')];
  const ids = [...document.querySelectorAll('#result_list tbody th')];
  const rows = [...document.querySelectorAll('#result_list tbody tr')].slice(0, rowsAboveTheFold);
  return {
    overflow: results ? results.scrollWidth - results.clientWidth : 0,
    pageOverflow: document.documentElement.scrollWidth - window.innerWidth,
    headerLines: Math.max(0, ...headers.map(lines)),
    idLines: Math.max(0, ...ids.map(lines)),
    rows: rows.length,
    rowsBottom: Math.max(0, ...rows.map((row) => Math.round(row.getBoundingClientRect().bottom))),
    fold: window.innerHeight,
  };
}"""


def admin_pages() -> list[str]:
    """The index, each changelist and each add page the superuser can open."""
    from django.contrib import admin

    pages = ["/admin/"]
    for model, model_admin in admin.site._registry.items():
        base = f"/admin/{model._meta.app_label}/{model._meta.model_name}/"
        pages.append(base)
        if model_admin.has_add_permission(_superuser_request()):
            pages.append(base + "add/")
    return pages


def _superuser_request():
    from django.test import RequestFactory

    request = RequestFactory().get("/admin/")
    request.user = User(is_superuser=True, is_staff=True, is_active=True)
    return request


def rows_of_every_kind(account, sandbox) -> None:
    """Beside the sandbox's world: held payments (with their events), a batch whose
    failed items have a long error, and every application with its legal set accepted."""
    held_payments(account, 2)
    batch = make_batch(
        account=account, owner_customer=account.customer, statuses=("SUCCESS", "FAILED", "FAILED")
    )
    BatchItem.objects.filter(batch=batch, status="FAILED").update(
        error="INSUFFICIENT_FUNDS: the payer account's available balance does not cover this item and its fee"
    )
    applications = list(Application.objects.all()) or [application_of(account.customer)]
    for application in applications:
        document_set = LegalDocumentSet.objects.filter(is_current=True, program=application.program).first()
        document_set = document_set or legal_document_set(application.program)
        legal_set_accepted(application, document_set)


@override_settings(ADMIN_REQUIRE_TOTP=False)
def test_every_admin_page_fits_a_laptop_screen(server, browser, account, sandbox):
    rows_of_every_kind(account, sandbox)
    User.objects.create_superuser("root@backoffice.example", "Root-Password-4242", role="management")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page = browser.new_page(viewport={"width": 1366, "height": 768})
    page.goto(f"{server}/admin/")
    page.fill("#id_username", "root@backoffice.example")
    page.fill("#id_password", "Root-Password-4242")
    page.click("#login-form [type=submit]")
    page.wait_for_selector("#dashboard")

    pages = admin_pages()
    changelists = [p for p in pages if p.endswith("/") and p.count("/") == 4]
    # A change page of each model with a row: the first row its changelist links.
    for path in changelists:
        page.goto(f"{server}{path}")
        first = page.locator("#result_list tbody tr th a, #result_list tbody tr td a").first
        if first.count():
            pages.append(first.get_attribute("href"))
    # The lists the layout is about have rows to lay out.
    without_rows = [
        p for p in changelists if p.split("/")[3] in BUSY_LISTS and not _has_rows(page, server, p)
    ]
    assert without_rows == []

    problems = []
    for width, height in SCREENS:
        page.set_viewport_size({"width": width, "height": height})
        for path in pages:
            response = page.goto(f"{server}{path}")
            assert response is not None and response.status == 200, path
            name = path.strip("/").replace("/", "_") or "admin"
            page.screenshot(path=str(SCREENSHOTS / f"{width}x{height}-{name}.png"))
            layout = page.evaluate(LAYOUT, ROWS_ABOVE_THE_FOLD)
            if (
                layout["overflow"] > 0
                or layout["pageOverflow"] > 0
                or layout["headerLines"] > 2
                or layout["idLines"] > 1
                or layout["rowsBottom"] > layout["fold"]
            ):
                problems.append((f"{width}x{height}", path, layout))
    assert problems == [], "\n".join(map(str, problems))


# Lists that must have rows in the test above (the ones operators work in).
BUSY_LISTS = {"user", "paymentrequest", "batch", "batchitem", "event", "application", "customer", "account"}


def _has_rows(page, server: str, path: str) -> bool:
    page.goto(f"{server}{path}")
    return page.locator("#result_list tbody tr").count() > 0
