"""The codes only batches answer, registered with their statuses when the app is
ready (see `bankapi.errors`)."""

from bankapi.errors import DomainErrorCode


class BatchErrorCode(DomainErrorCode):
    # An ISO 20022 file whose GrpHdr/MsgId this owner sent before.
    DUPLICATE_MESSAGE = "DUPLICATE_MESSAGE"
    # A draft past its lifetime (BATCH_DRAFT_TTL_SECONDS).
    DRAFT_EXPIRED = "DRAFT_EXPIRED"


STATUSES: dict[DomainErrorCode, int] = {
    BatchErrorCode.DUPLICATE_MESSAGE: 409,
    BatchErrorCode.DRAFT_EXPIRED: 422,
}
