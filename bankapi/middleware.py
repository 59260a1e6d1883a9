import re
import uuid

_SAFE_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")


class RequestIdMiddleware:
    """Give every request an id, echoed as `X-Request-Id` on every response.

    A caller's own id is kept when it is safe to log; otherwise a new one is made.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        sent = request.headers.get("X-Request-Id", "")
        request.request_id = sent if _SAFE_REQUEST_ID.match(sent) else str(uuid.uuid4())
        response = self.get_response(request)
        response["X-Request-Id"] = request.request_id
        return response
