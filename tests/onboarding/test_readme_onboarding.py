"""The README's onboarding section works after its walk-through, as written."""

import json
import re
import shutil

import pytest

from onboarding.models import Application, DocumentUpload
from tests.kernel.test_readme import README, for_server, run_blocks, walkthrough_script


def onboarding_script() -> str:
    section = (
        README.read_text()
        .split("## Onboarding: an individual from application to an uploaded document", 1)[1]
        .split("\n## ", 1)[0]
    )
    return "\n".join(re.findall(r"```bash\n(.*?)```", section, re.S))


@pytest.mark.skipif(shutil.which("curl") is None, reason="the README uses curl")
def test_readme_onboards_an_individual_to_an_uploaded_document(
    transactional_db, live_server, sandbox, settings, tmp_path
):
    settings.AWS_STORAGE_BUCKET_NAME = None
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": tmp_path / "media"},
        },
    }
    (tmp_path / "var").mkdir()
    (tmp_path / "var" / "sandbox.json").write_text(json.dumps(sandbox))
    script = for_server(walkthrough_script() + "\n" + onboarding_script(), live_server.url)

    # mktemp's folder, where the walk-throughs keep their files: tmp_path/scratch.
    result = run_blocks(script, tmp_path)
    scratch = tmp_path / "scratch"

    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    application_id = re.search(r"^application (\S+)$", out, re.M).group(1)
    application = Application.objects.get(id=application_id)
    assert str(application.customer_id) == sandbox["customer2"]["customerId"]
    assert application.workflow_stage == "IN_PROGRESS"
    accepted = {doc.key for doc in application.legal_acceptance().documents}
    assert accepted == {"terms", "privacy", "marketing"}
    key = re.search(r"^uploaded (\S+)$", out, re.M).group(1)
    upload = DocumentUpload.objects.get(key=key)
    assert str(upload.application_id) == application_id
    assert (tmp_path / "media" / key).read_bytes() == b"%PDF-1.4 sandbox passport scan\n"
    # Nothing left in the folder it ran from: its files went to a temporary folder.
    assert sorted(path.name for path in tmp_path.iterdir()) == ["media", "scratch", "var"]
    assert {path.name for path in next(scratch.iterdir()).iterdir()} >= {"legal.json", "passport.pdf"}
    assert "same bytes" in out
    documents = [json.loads(chunk) for chunk in re.findall(r"^\{\n.*?^\}$", out, re.S | re.M)]
    accept, read, status = documents[-3:]
    assert accept["data"]["acceptance"]["documentSetVersion"]
    assert read["data"]["application"]["legalDocumentsAcceptance"] == accept["data"]["acceptance"]
    assert status["data"] == {"steps": []}
