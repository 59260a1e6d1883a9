"""A compliance officer, in a real browser (headless Chromium), signs in to the
admin, approves a held payment with a reason and sees its new state."""

import shutil
from pathlib import Path

import pyotp
import pytest
from django.db import connections
from django.test import override_settings

from authn.models import User
from payments.models import PaymentRequest
from tests.backoffice.conftest import held_payments
from tests.support.factories_backoffice import OPERATOR_PASSWORD

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


# Every admin page, at a laptop's and a desktop's width: screenshots to look at, and
# the layout facts the browser can measure.
WIDTHS = (1366, 1920)
SCREENSHOTS = Path(__file__).resolve().parents[2] / "var" / "screenshots"

# Measured in the page: the changelist table's overflow, the tallest header cell
# and the tallest id cell, in lines of their own text.
LAYOUT = """() => {
  const lines = (cell) => {
    const range = document.createRange();
    range.selectNodeContents(cell);
    const rects = [...range.getClientRects()].filter((r) => r.width > 0 && r.height > 0);
    return new Set(rects.map((r) => Math.round(r.bottom))).size;
  };
  const results = document.querySelector('#changelist .results');
  const headers = [...document.querySelectorAll('#result_list thead th .text')];
  const ids = [...document.querySelectorAll('#result_list tbody th')];
  return {
    overflow: results ? results.scrollWidth - results.clientWidth : 0,
    pageOverflow: document.documentElement.scrollWidth - window.innerWidth,
    headerLines: Math.max(0, ...headers.map(lines)),
    idLines: Math.max(0, ...ids.map(lines)),
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


@override_settings(ADMIN_REQUIRE_TOTP=False)
def test_every_admin_page_fits_a_laptop_screen(server, browser, account):
    held_payments(account, 2)
    User.objects.create_superuser("root@backoffice.example", "Root-Password-4242", role="management")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    page.goto(f"{server}/admin/")
    page.fill("#id_username", "root@backoffice.example")
    page.fill("#id_password", "Root-Password-4242")
    page.click("#login-form [type=submit]")
    page.wait_for_selector("#dashboard")

    pages = admin_pages()
    # A change page of each model with a row: the first row its changelist links.
    for path in [p for p in pages if p.endswith("/") and p.count("/") == 4]:
        page.goto(f"{server}{path}")
        first = page.locator("#result_list tbody tr th a, #result_list tbody tr td a").first
        if first.count():
            pages.append(first.get_attribute("href"))

    problems = []
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        for path in pages:
            response = page.goto(f"{server}{path}")
            assert response is not None and response.status == 200, path
            name = path.strip("/").replace("/", "_") or "admin"
            page.screenshot(path=str(SCREENSHOTS / f"{width}-{name}.png"), full_page=True)
            layout = page.evaluate(LAYOUT)
            if width == 1366 and (
                layout["overflow"] > 0
                or layout["pageOverflow"] > 0
                or layout["headerLines"] > 2
                or layout["idLines"] > 1
            ):
                problems.append((path, layout))
    assert problems == [], "\n".join(map(str, problems))
