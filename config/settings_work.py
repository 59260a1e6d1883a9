"""Settings of the work behind the door: Celery (broker, queues, the beat
schedule), settlement's chunks and helpers, webhook delivery and the outbox
relay. Imported whole by `config.settings`."""

from config.beat import BEAT_SCHEDULE
from config.env import env_bool, env_float, env_int, env_str

_REDIS_URL = env_str("REDIS_URL")

# Celery: with Redis configured, tasks go to a worker; without it they run in-process.
# A create's Idempotency-Key claim left unfinished this long (its worker died) may
# be taken over by a retry; shorter only in tests that kill workers.
IDEMPOTENCY_STALE_CLAIM_SECONDS = env_int("IDEMPOTENCY_STALE_CLAIM_SECONDS", 60)

CELERY_BROKER_URL = _REDIS_URL or "memory://"
CELERY_RESULT_BACKEND = None
CELERY_TASK_ALWAYS_EAGER = not _REDIS_URL
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TIMEZONE = "UTC"
CELERY_ENABLE_UTC = True
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Queues, a set per deployment sharing a Redis (or per test worker): config/celery.py.
CELERY_TASK_DEFAULT_QUEUE = env_str("CELERY_TASK_DEFAULT_QUEUE", "celery")
CELERY_WEBHOOKS_QUEUE = env_str("CELERY_WEBHOOKS_QUEUE", "webhooks")
CELERY_TASK_ROUTES = ("config.celery.task_route",)

# Periodic work (run `celery -A config beat`): the schedule of config/beat.py.
CELERY_BEAT_SCHEDULE = BEAT_SCHEDULE
# Payment requests settled per transaction: a chunk costs a handful of
# statements whatever its size (bench/README measures it).
SETTLEMENT_CHUNK = env_int("SETTLEMENT_CHUNK", 500)
# Helper tasks a settlement run with a backlog of more than a chunk hands chunks
# to, so that other workers settle beside it (0: the run settles alone).
SETTLEMENT_HELPERS = env_int("SETTLEMENT_HELPERS", 1)

# Webhook delivery: the first retry after about this many seconds, doubling up to an
# hour, for this many hours; an endpoint failing that long is disabled.
WEBHOOK_RETRY_BASE_SECONDS = env_float("WEBHOOK_RETRY_BASE_SECONDS", 5.0)
WEBHOOK_RETRY_WINDOW_HOURS = env_float("WEBHOOK_RETRY_WINDOW_HOURS", 72.0)
# How long a worker holds a delivery it is sending; past it (a killed worker) the
# sweep sends it again.
WEBHOOK_DELIVERY_LEASE_SECONDS = env_float("WEBHOOK_DELIVERY_LEASE_SECONDS", 60.0)
# The outbox relay every Celery worker runs (events/relay.py): how long it sleeps
# when the outbox held less than a batch (0 turns it off on this worker), and the
# events it fans out per transaction.
EVENTS_RELAY_POLL_SECONDS = env_float("EVENTS_RELAY_POLL_SECONDS", 0.2)
EVENTS_RELAY_BATCH = env_int("EVENTS_RELAY_BATCH", 500)
# A deployment takes webhook receivers on loopback (and plain http) only with
# this on: for benches and tests on one host, never in service.
WEBHOOKS_ALLOW_LOOPBACK = env_bool("WEBHOOKS_ALLOW_LOOPBACK", False)
