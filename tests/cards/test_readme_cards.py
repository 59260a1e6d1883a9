"""The README's card section works after its walk-through, as written."""

import json
import re
import shutil

import pytest

from cards.models import Card
from tests.kernel.test_readme import README, for_server, run_blocks, walkthrough_script


def cards_script() -> str:
    section = README.read_text().split("## Cards: a card's secure details", 1)[1].split("\n## ", 1)[0]
    return "\n".join(re.findall(r"```bash\n(.*?)```", section, re.S))


@pytest.mark.skipif(shutil.which("curl") is None, reason="the README uses curl")
def test_readme_reveals_a_cards_details_with_a_totp_code(transactional_db, live_server, sandbox, tmp_path):
    (tmp_path / "var").mkdir()
    (tmp_path / "var" / "sandbox.json").write_text(json.dumps(sandbox))
    script = for_server(walkthrough_script() + "\n" + cards_script(), live_server.url)

    result = run_blocks(script, tmp_path)

    assert result.returncode == 0, result.stdout + result.stderr
    last = re.findall(r"^\{\n.*?^\}$", result.stdout, re.S | re.M)[-1]
    card = Card.objects.get(id=sandbox["customer"]["cardId"])
    assert json.loads(last) == {
        "success": True,
        "data": {
            "pan": card.pan,
            "cvv": card.cvv,
            "expiryMonth": card.expiry_month,
            "expiryYear": card.expiry_year,
            "nameOnCard": "SANDBOX CUSTOMER ONE",
        },
    }
