"""Load balancers probe, and Prometheus scrapes, each node by its own address:
the Host header they send is that address, which ALLOWED_HOSTS does not name.
The probes and the scrape answer whatever the Host; every other route still
refuses a host it does not know."""

import json
import subprocess
import sys

import pytest
from django.test import override_settings

from tests.kernel.test_settings import ROOT, production_variables

NODE_ADDRESS = "10.0.0.7:8000"  # not in ALLOWED_HOSTS: what a probe by address sends
PROBES = ("/healthz", "/readyz", "/metrics")


@pytest.mark.django_db
@override_settings(ALLOWED_HOSTS=["api.example.com"])
def test_probes_answer_a_host_that_is_not_allowed_and_other_routes_refuse_it(api):
    answers = {path: api.get(path, HTTP_HOST=NODE_ADDRESS) for path in PROBES}

    assert {path: answer.status_code for path, answer in answers.items()} == dict.fromkeys(PROBES, 200)
    assert answers["/healthz"].json() == {"status": "ok"}
    assert answers["/readyz"].json()["checks"]["database"] == "ok"
    assert b"bankapi_http_requests_total" in answers["/metrics"].content
    assert answers["/healthz"]["X-Request-Id"]

    # Routes that document a 400 (the host refusal is one), signed in or not, and the back office.
    for guarded in ("/v1/approvals", "/v1/batch-payments", "/admin/login/"):
        assert api.get(guarded, HTTP_HOST=NODE_ADDRESS).status_code == 400, guarded
    assert api.get("/v1/approvals", HTTP_HOST="api.example.com").status_code == 401
    assert api.get("/admin/login/", HTTP_HOST="api.example.com").status_code == 200


@pytest.mark.django_db
@override_settings(ALLOWED_HOSTS=["api.example.com"])
def test_a_host_refused_is_one_warning_line_not_a_traceback(api, console):
    api.get("/v1/approvals", HTTP_HOST=NODE_ADDRESS)

    refusals = [line for line in console.lines() if "Invalid HTTP_HOST header" in line]
    assert len(refusals) == 1 and " WARNING django.security.DisallowedHost " in refusals[0]
    assert "Traceback" not in console.text()


@pytest.mark.django_db
@override_settings(ALLOWED_HOSTS=["api.example.com"])
def test_a_probe_by_address_is_still_counted_under_its_route(api):
    api.get("/healthz", HTTP_HOST=NODE_ADDRESS)

    scraped = api.get("/metrics", HTTP_HOST=NODE_ADDRESS).content.decode()

    assert 'route="/healthz"' in scraped


PROBE_SCRIPT = """
import json, django
django.setup()
from django.test import Client
client = Client()
answers = {}
for path in ("/healthz", "/readyz", "/metrics", "/", "/v1/capabilities"):
    answer = client.get(path, HTTP_HOST="10.0.0.7:8000", HTTP_AUTHORIZATION="Bearer scrape-token")
    answers[path] = answer.status_code
print(json.dumps(answers))
"""


def test_under_the_deployment_settings_probes_by_address_answer_over_plain_http(tmp_path):
    """The deployment's settings add what a probe by address also meets: the
    redirect of plain HTTP to HTTPS, and the scrape's bearer token."""
    env = {
        **production_variables(tmp_path),
        "METRICS_TOKEN": "scrape-token",
        "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "metrics"),
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "BANKAPI_ENV": "production",
        "PATH": "/usr/bin:/bin",
    }

    result = subprocess.run(
        [sys.executable, "-c", PROBE_SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )

    assert result.returncode == 0, result.stderr
    answers = json.loads(result.stdout.strip().splitlines()[-1])
    assert answers == {"/healthz": 200, "/readyz": 200, "/metrics": 200, "/": 400, "/v1/capabilities": 400}
