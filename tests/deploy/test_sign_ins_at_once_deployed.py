"""Eight correct sign-ins sent at once all answer 200 on a web node as deploy/
configures it, even when every one of them lands in the same process.

gunicorn runs the Procfile's web command (deploy/gunicorn.conf.py) with the
environment template's thread count and no PASSWORD_CHECK_WAITERS of its own,
so the bound on waiting sign-ins is the one the deployment gets from its
threads. One worker process takes all eight: one checks, seven wait. The users'
passwords are hashed at the production Argon2 cost, so the first check holds
its slot while the others arrive. The wait of an address without failures is
lengthened so that only the bound on waiters, not a slow shared host, could
refuse one.
"""

import threading

from authn.hashers import Argon2PasswordHasher
from tests.conftest import requires_postgres
from tests.deploy.test_topology import VENV_BIN, env_template, procfile
from tests.proof.processes import Gunicorn, request, server_environment, shell_command
from tests.support.factories_authn import person

AT_ONCE = 8


def sign_ins_at_once(port: int, program_id: str, people: list, addresses: list[str]) -> list[int]:
    statuses = [0] * len(people)
    together = threading.Barrier(len(people))

    def sign_in(n: int) -> None:
        together.wait(30)
        statuses[n] = request(
            port,
            "POST",
            "/v1/auth/login",
            {"email": people[n].email, "password": people[n].password},
            {"X-Program-Id": program_id, "X-Forwarded-For": addresses[n]},
            timeout=90,
        )[0]

    threads = [threading.Thread(target=sign_in, args=(n,)) for n in range(len(people))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return statuses


@requires_postgres
def test_eight_correct_sign_ins_at_once_into_one_process_of_a_deployed_node_all_answer_200(
    transactional_db, program, tmp_path
):
    hasher = Argon2PasswordHasher()
    people = [person(program) for _ in range(AT_ONCE)]
    for someone in people:
        someone.user.password = hasher.encode(someone.password, hasher.salt())
        someone.user.save(update_fields=["password"])
    threads = env_template()["WEB_THREADS"]
    env = server_environment(
        WEB_THREADS=threads, TRUSTED_PROXY_COUNT="1", PASSWORD_CHECK_CLEAN_WAIT_SECONDS="60"
    )
    env["PATH"] = f"{VENV_BIN}:{env.get('PATH', '')}"
    for setting in ("PASSWORD_CHECK_WAITERS", "PASSWORD_CHECKS_IN_FLIGHT"):
        env.pop(setting, None)
    env.pop("REDIS_URL", None)
    server = Gunicorn(env, 1, tmp_path / "gunicorn.log", command=shell_command(procfile()["web"]))
    try:
        one_address = sign_ins_at_once(server.port, str(program.id), people, ["198.51.100.7"] * AT_ONCE)
        many_addresses = sign_ins_at_once(
            server.port, str(program.id), people, [f"198.51.100.{10 + n}" for n in range(AT_ONCE)]
        )
    finally:
        server.stop()
    assert one_address == [200] * AT_ONCE, f"{threads} threads: {one_address}"
    assert many_addresses == [200] * AT_ONCE, f"{threads} threads: {many_addresses}"
