"""The README's webhook walk-through works after its first walk-through, as written:
a receiver of the reader's own on a loopback port gets the payment's events, signed,
and the README's check (and its hand-written `verify`) accepts them."""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time

import pytest

from events.models import WebhookEndpoint
from tests.kernel.test_readme import README, for_server, walkthrough_script
from tests.support.shared_clock import shared_clock

API_GUIDE = README.parent / "docs" / "api-guide.md"
HEADING = "### Walk-through: a signed delivery to your own receiver"


def webhooks_script() -> str:
    section = re.split(r"\n##+ ", README.read_text().split(HEADING, 1)[1], maxsplit=1)[0]
    return "\n".join(re.findall(r"```bash\n(.*?)```", section, re.S))


def listening(port: int) -> bool:
    """Whether something still accepts on the port, given a few seconds to exit."""
    deadline = time.monotonic() + 10
    while True:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) != 0:
                return False
        if time.monotonic() > deadline:
            return True
        time.sleep(0.1)


def readme_verify():
    """The `verify` function the API guide's events section gives receivers."""
    section = API_GUIDE.read_text().split("## Events and webhooks", 1)[1].split("\n## ", 1)[0]
    (code,) = re.findall(r"```python\n(.*?)```", section, re.S)
    namespace: dict = {}
    exec(code, namespace)  # noqa: S102 - the README's own code, which is what is tested
    return namespace["verify"]


@pytest.mark.skipif(shutil.which("curl") is None, reason="the README uses curl")
def test_readme_registers_a_receiver_and_it_gets_the_payment_events_signed(
    transactional_db, live_server, sandbox, tmp_path
):
    (tmp_path / "var").mkdir()
    (tmp_path / "var" / "sandbox.json").write_text(json.dumps(sandbox))
    script = for_server(walkthrough_script() + "\n" + webhooks_script(), live_server.url)
    scratch = tmp_path / "scratch"
    scratch.mkdir()

    # The second sign-in's wait for the next TOTP code moves a clock the test and
    # the shell share instead of passing (tests/support/shared_clock.py).
    with shared_clock() as clock:
        shell = subprocess.Popen(
            ["bash", "-euo", "pipefail", "-c", script],
            cwd=tmp_path,
            # mktemp's folder: the receiver's files
            env={**os.environ, "TMPDIR": str(scratch), **clock.environment()},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            out, err = shell.communicate(timeout=150)
            port = re.search(r"^receiver listening at http://127\.0\.0\.1:(\d+)/hooks$", out, re.M)
            # The last step stopped the receiver: nothing listens on its port any more.
            assert port and not listening(int(port.group(1))), out + err
        finally:
            # The receiver, if the script stopped before it killed it.
            try:
                os.killpg(shell.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    assert shell.returncode == 0, out + err
    endpoint_id = re.search(r"^webhook endpoint (\S+)$", out, re.M).group(1)
    # Removed at the end, as the last step says, with its deliveries done.
    assert not WebhookEndpoint.objects.filter(id=endpoint_id).exists()
    (hooks,) = (folder for folder in scratch.iterdir() if (folder / "endpoint.json").exists())
    deliveries = [json.loads((hooks / f"delivery-{n}.json").read_text()) for n in (1, 2)]
    assert not (hooks / "delivery-3.json").exists()
    events = [json.loads(d["body"]) for d in deliveries]
    assert [e["type"] for e in events] == ["payment_request.accepted", "payment_request.settled"]
    request_id = events[0]["data"]["requestId"]
    assert events[1]["data"]["requestId"] == request_id
    assert (events[1]["data"]["amount"], events[1]["data"]["status"]) == ("3.00", "SETTLED")
    assert events[0]["data"]["amount"] == "3.00"

    # What the reader sees: the signed headers and the body of the settled event, then
    # each delivery verified with the answered secret, and a changed body refused.
    headers = {k.lower(): v for k, v in deliveries[1]["headers"].items()}
    shown = json.loads(re.search(r'^(\{"webhook-id": .*\})$', out, re.M).group(1))
    assert shown == {k: headers[k] for k in ("webhook-id", "webhook-timestamp", "webhook-signature")}
    assert shown["webhook-id"] == events[1]["eventId"] and shown["webhook-signature"].startswith("v1,")
    verified = re.findall(r"^verified (\S+) (\S+) (\S+)$", out, re.M)
    assert verified == [
        ("payment_request.accepted", events[0]["eventId"], request_id),
        ("payment_request.settled", events[1]["eventId"], request_id),
    ]
    assert "a changed body: refused" in out

    # The secret the README kept signs what arrived; the README's own `verify` agrees.
    secret = json.loads((hooks / "endpoint.json").read_text())["data"]["secret"]
    verify = readme_verify()
    verify(secret, headers, deliveries[1]["body"].encode())
    with pytest.raises(ValueError, match="bad signature"):
        verify(secret, headers, deliveries[1]["body"].replace("3.00", "30.00").encode())
    with pytest.raises(ValueError, match="bad signature"):
        verify("whsec_" + "A" * 44, headers, deliveries[1]["body"].encode())


@pytest.mark.skipif(shutil.which("curl") is None, reason="the README uses curl")
def test_a_step_that_fails_still_stops_the_receiver_and_removes_its_endpoint(
    transactional_db, live_server, sandbox, tmp_path
):
    (tmp_path / "var").mkdir()
    (tmp_path / "var" / "sandbox.json").write_text(json.dumps(sandbox))
    # A step after the endpoint is registered fails (a transient error, say): with
    # `set -e` the shell ends there.
    failing = webhooks_script().replace("# 3. A payment of 3.00", "false\n# 3. A payment of 3.00", 1)
    assert failing != webhooks_script()
    script = for_server(walkthrough_script() + "\n" + failing, live_server.url)
    scratch = tmp_path / "scratch"
    scratch.mkdir()

    shell = subprocess.Popen(
        ["bash", "-c", script],
        cwd=tmp_path,
        env={**os.environ, "TMPDIR": str(scratch)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = shell.communicate(timeout=150)
        port = re.search(r"^receiver listening at http://127\.0\.0\.1:(\d+)/hooks$", out, re.M)
        assert port and not listening(int(port.group(1))), out + err
    finally:
        try:
            os.killpg(shell.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    assert shell.returncode != 0 and "verified" not in out
    endpoint_id = re.search(r"^webhook endpoint (\S+)$", out, re.M).group(1)
    assert not WebhookEndpoint.objects.filter(id=endpoint_id).exists()
