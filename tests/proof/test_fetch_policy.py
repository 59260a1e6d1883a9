"""Every place this service opens a connection, and the address policy over each
that goes where a caller said.

A URL a caller gives (today: webhook endpoints) is fetched only through
`bankapi.ops.outbound`, which checks where it may point and connects to the address
it checked. Everything else connects to hosts the operator configured in the
environment. Both lists are found from the source here, so a new HTTP client,
socket or mailer anywhere in the service fails this file until it is routed
through `bankapi.ops.outbound` or added below with where its connections go.
"""

import ast
import importlib.util
from decimal import Decimal
from pathlib import Path

import pytest

from bankapi.models import Account
from events.models import DeliveryAttempt, WebhookEndpoint
from payments.services.acceptance import PaymentInstruction, payment_accept

ROOT = Path(__file__).resolve().parents[2]
FIRST_PARTY = (
    "bankapi",
    "authn",
    "payments",
    "batches",
    "cards",
    "onboarding",
    "events",
    "audit",
    "approvals",
    "sandbox",
)

# What can open a connection: sockets, HTTP clients, mail, object storage, Redis.
NETWORK_LIBRARIES = (
    "socket",
    "ssl",
    "asyncio",
    "urllib3",
    "requests",
    "httpx",
    "aiohttp",
    "http.client",
    "urllib.request",
    "xmlrpc.client",
    "ftplib",
    "imaplib",
    "poplib",
    "smtplib",
    "telnetlib",
    "boto3",
    "botocore",
    "storages",
    "redis",
    "django.core.mail",
    "django.core.files.storage",
)

# The only module that fetches a URL a caller chose.
GUARDED = "bankapi.ops.outbound"

# module -> (network libraries it imports, where its connections go)
OPERATOR_CONFIGURED = {
    "authn.services.login": ({"django.core.mail"}, "e-mail codes, through the SMTP host of EMAIL_URL"),
    "onboarding.services.ubo_emails": (
        {"django.core.mail"},
        "UBO e-mails, through the SMTP host of EMAIL_URL",
    ),
    "onboarding.tasks": ({"smtplib"}, "none: catches the SMTP errors of the UBO e-mail to retry it"),
    "bankapi.ops.outages": (
        {"redis"},
        "the readiness probe and the metrics' Redis gauge, to REDIS_URL; tells outages apart by their errors",
    ),
    "authn.services.request_budget": ({"redis"}, "the request budgets' counters, to REDIS_URL"),
    "onboarding.services.documents": (
        {"django.core.files.storage", "botocore"},
        "the document storage: this service's S3 bucket (AWS_S3_ENDPOINT_URL) or local files; presigns"
        " URLs and reads a stored object's first bytes to check its type",
    ),
}

# Functions that send to a caller's URL -> what they are.
FETCH_PLACES = {"events.drain._post": "webhook delivery (every attempt, retries and redeliveries)"}


def _modules() -> dict[str, ast.Module]:
    found = {}
    for package in FIRST_PARTY:
        for path in sorted((ROOT / package).rglob("*.py")):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
            found[name] = ast.parse(path.read_text(), filename=str(path))
    return found


MODULES = _modules()


def _network_imports(tree: ast.Module) -> set[str]:
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        for name in names:
            imported |= {
                library for library in NETWORK_LIBRARIES if name == library or name.startswith(f"{library}.")
            }
    return imported


def _functions(tree: ast.Module):
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node


def _calls(node: ast.AST, attribute: str, owner: str) -> list[ast.Call]:
    """Calls of `owner.attribute(...)`, e.g. `outbound.post(...)`."""
    return [
        call
        for call in ast.walk(node)
        if isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and call.func.attr == attribute
        and isinstance(call.func.value, ast.Name)
        and call.func.value.id == owner
    ]


def test_the_first_party_modules_are_all_scanned():
    # A package missing from FIRST_PARTY would escape every check below.
    packages = {
        path.parent.name
        for path in ROOT.glob("*/apps.py")
        if importlib.util.find_spec(path.parent.name) is not None
    }
    assert packages <= set(FIRST_PARTY), packages - set(FIRST_PARTY)
    assert GUARDED in MODULES


def test_only_the_guarded_module_and_operator_configured_ones_use_the_network():
    users = {name: imports for name, tree in MODULES.items() if (imports := _network_imports(tree))}

    assert set(users) == {GUARDED, *OPERATOR_CONFIGURED}, (
        "A module started or stopped using the network. Send callers' URLs through "
        "bankapi.ops.outbound; list a connection to an operator-configured host in OPERATOR_CONFIGURED."
    )
    for name, (libraries, _where) in OPERATOR_CONFIGURED.items():
        assert users[name] == libraries, name
    # HTTP clients in particular: only the guarded module has one.
    http = {"urllib3", "requests", "httpx", "aiohttp", "http.client", "urllib.request", "socket", "ssl"}
    assert {name for name, imports in users.items() if imports & http} == {GUARDED}


def test_every_send_to_a_callers_url_checks_it_first_and_sends_to_what_it_checked():
    places = {}
    for module, tree in MODULES.items():
        for function in _functions(tree):
            if _calls(function, "post", "outbound"):
                places[f"{module}.{function.name}"] = function
    assert set(places) == set(FETCH_PLACES)

    for name, function in places.items():
        checked_names = {
            target.id
            for node in ast.walk(function)
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
            if _calls(node.value, "url_check", "outbound") == [node.value]
            for target in node.targets
            if isinstance(target, ast.Name)
        }
        for call in _calls(function, "post", "outbound"):
            sent_to = call.args[0] if call.args else None
            assert isinstance(sent_to, ast.Name) and sent_to.id in checked_names, (
                f"{name} must send to what outbound.url_check answered"
            )


def test_a_checked_target_is_made_by_the_check_alone():
    makers = {
        f"{module}.{function.name}"
        for module, tree in MODULES.items()
        for function in _functions(tree)
        for call in ast.walk(function)
        if isinstance(call, ast.Call)
        and getattr(call.func, "id", getattr(call.func, "attr", None)) == "Target"
    }
    assert makers == {f"{GUARDED}.url_check"}


def test_the_guarded_module_resolves_and_connects_in_one_place_each():
    tree = MODULES[GUARDED]
    resolvers = {f.name for f in _functions(tree) if _calls(f, "getaddrinfo", "socket")}
    sockets = {f.name for f in _functions(tree) if _calls(f, "socket", "socket")}
    urllib3_shortcuts = [
        call.func.attr
        for call in ast.walk(tree)
        if isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and call.func.attr
        in {"PoolManager", "request", "connection_from_url", "create_connection", "ProxyManager"}
    ]
    assert resolvers == {"system_resolve"}
    assert sockets == {"system_connect"}
    # urllib3's own entry points resolve the name again when they connect.
    assert urllib3_shortcuts == []


def _webhook_delivery(account: Account, url: str, capture) -> str:
    endpoint = WebhookEndpoint.objects.create(
        program_id=account.program_id,
        sandbox=True,
        url=url,
        event_types=["payment_request.accepted"],
        secret="whsec_c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0",
    )
    with capture(execute=True):
        payment_accept(
            account=account,
            instruction=PaymentInstruction(
                amount=Decimal("1.00"), currency=account.currency, reference="Probe"
            ),
        )
    return DeliveryAttempt.objects.get(delivery__endpoint=endpoint).error


# Each fetch place, driven to a URL of the caller's choosing: what it recorded.
EXERCISE = {"events.drain._post": _webhook_delivery}


@pytest.mark.parametrize("place", sorted(FETCH_PLACES))
@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data/",
        "https://[::ffff:a9fe:a9fe]/latest/meta-data/",
        "https://metadata.rebound.example.com/latest/meta-data/",
    ],
)
def test_each_fetch_place_refuses_the_metadata_service_at_run_time(
    place, url, account, settings, loopback_network, django_capture_on_commit_callbacks
):
    assert set(EXERCISE) == set(FETCH_PLACES)
    settings.PRODUCTION = True
    loopback_network.answer("metadata.rebound.example.com", ["169.254.169.254"])

    recorded = EXERCISE[place](account, url, django_capture_on_commit_callbacks)

    assert recorded.startswith("Refused: url"), recorded
    assert loopback_network.refused == []
    assert [address for address, port in loopback_network.connected if port in (80, 443)] == []
