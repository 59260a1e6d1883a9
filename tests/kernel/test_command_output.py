"""A management command's stdout is its answer: under a deployment's settings
(JSON log lines) every log line goes to stderr, so that
`bootstrap_sandbox --json > sandbox.json` holds one JSON object and nothing else."""

import json

from tests.kernel.test_settings import production_variables, run_check


def test_bootstrap_json_under_deployment_settings_prints_only_its_object_and_logs_to_stderr(tmp_path):
    env = {**production_variables(tmp_path), "BANKAPI_ENV": "production", "LOG_LEVEL": "INFO"}
    migrated = run_check(env, command="migrate")
    assert migrated.returncode == 0, migrated.stderr

    result = run_check(env, "--json", command="bootstrap_sandbox")

    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)  # the whole of stdout is one JSON value
    assert isinstance(answer, dict) and answer["consumerProgramId"]
    log_lines = [json.loads(line) for line in result.stderr.splitlines() if line.strip()]
    assert log_lines, "the command's log lines (Celery's among them) are on stderr"
    assert all({"timestamp", "level", "logger", "message"} <= set(line) for line in log_lines)
    assert any(line["logger"].startswith("celery") for line in log_lines)
