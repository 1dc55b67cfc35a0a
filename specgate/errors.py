"""Every error the gateway answers with, in the OpenAI shape.

    GatewayError                       (500 internal_error: a bug; never for client input)
    ├── InvalidRequest                 400 invalid_request_error  (bad JSON, bad field, with `param`)
    ├── Unauthorized                   401 authentication_error
    ├── Forbidden                      403 permission_error
    ├── ModelNotFound                  404 model_not_found
    ├── PayloadTooLarge                413 request_too_large
    ├── RateLimited                    429 rate_limit_exceeded    (+ Retry-After)
    ├── UpstreamError                  502 bad_gateway            (engine answered nonsense)
    ├── NoHealthyEndpoint              503 service_unavailable    (+ Retry-After)
    ├── UpstreamTimeout                504 timeout
    └── UpstreamHTTPError              the engine's own 4xx, normalised to this shape

Handlers never raise HTTP exceptions of the web framework: they raise these, and `error_response`
turns one into bytes. Body: {"error": {"message", "type", "param", "code"}}.
"""

from __future__ import annotations

from typing import Any

import orjson

__all__ = [
    "Forbidden",
    "GatewayError",
    "InvalidRequest",
    "ModelNotFound",
    "NoHealthyEndpoint",
    "Overloaded",
    "PayloadTooLarge",
    "RateLimited",
    "RequestTimeout",
    "Unauthorized",
    "UpstreamError",
    "UpstreamHTTPError",
    "UpstreamTimeout",
    "error_body",
    "normalise_upstream_error",
]


class GatewayError(Exception):
    status = 500
    type = "internal_error"
    code: str | None = "internal_error"
    # Tells the openai client whether retrying can help (it obeys `x-should-retry`).
    should_retry: bool | None = None

    def __init__(self, message: str, *, param: str | None = None, retry_after_s: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        self.retry_after_s = retry_after_s
        # e.g. x-ratelimit-* on a 429
        self.extra_headers: dict[str, str] = {}

    def headers(self) -> dict[str, str]:
        headers: dict[str, str] = dict(self.extra_headers)
        if self.retry_after_s is not None:
            headers["retry-after"] = str(self.retry_after_s)
        if self.should_retry is not None:
            headers["x-should-retry"] = "true" if self.should_retry else "false"
        return headers

    def body(self) -> bytes:
        return error_body(self.message, self.type, self.param, self.code)


class InvalidRequest(GatewayError):
    status = 400
    type = "invalid_request_error"
    code = "invalid_request"
    should_retry = False


class Unauthorized(GatewayError):
    status = 401
    type = "authentication_error"
    code = "invalid_api_key"
    should_retry = False


class Forbidden(GatewayError):
    status = 403
    type = "permission_error"
    code = "forbidden"
    should_retry = False


class ModelNotFound(GatewayError):
    status = 404
    type = "invalid_request_error"
    code = "model_not_found"
    should_retry = False


class RequestTimeout(GatewayError):
    status = 408
    type = "invalid_request_error"
    code = "request_timeout"


class Overloaded(GatewayError):
    status = 503
    type = "api_error"
    code = "overloaded"


class PayloadTooLarge(GatewayError):
    status = 413
    type = "invalid_request_error"
    code = "request_too_large"
    should_retry = False


class RateLimited(GatewayError):
    status = 429
    type = "rate_limit_error"
    code = "rate_limit_exceeded"


class UpstreamError(GatewayError):
    status = 502
    type = "api_error"
    code = "bad_gateway"


class NoHealthyEndpoint(GatewayError):
    status = 503
    type = "api_error"
    code = "service_unavailable"


class UpstreamTimeout(GatewayError):
    status = 504
    type = "api_error"
    code = "timeout"


class UpstreamHTTPError(GatewayError):
    """An engine's own error answer (mostly 4xx validation), passed on with its status, reshaped."""

    def __init__(self, status: int, message: str, *, type_: str, param: str | None, code: str | None) -> None:
        super().__init__(message, param=param)
        self.status = status
        self.type = type_
        self.code = code
        self.should_retry = False if 400 <= status < 500 and status not in (408, 409, 429) else None


def error_body(message: str, type_: str, param: str | None, code: str | None) -> bytes:
    return orjson.dumps({"error": {"message": message, "type": type_, "param": param, "code": code}})


_STATUS_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "invalid_request_error",
    422: "invalid_request_error",
    429: "rate_limit_error",
}


def normalise_upstream_error(status: int, raw: bytes, retry_after: str | None = None) -> UpstreamHTTPError:
    """vLLM answers `{"error": {..., "code": 400}}` (code = HTTP number) or, from FastAPI, `{"detail": ...}`.

    Whatever arrives, the client gets the OpenAI shape with a string code and the engine's message, and the engine's
    `Retry-After` (seconds or an HTTP date) when it sent one.
    """
    message = f"upstream engine answered HTTP {status}"
    type_ = _STATUS_TYPES.get(status, "api_error")
    param: str | None = None
    code: str | None = None
    try:
        data: Any = orjson.loads(raw)
    except orjson.JSONDecodeError:
        data = None
    if isinstance(data, dict):
        err = data.get("error")
        if isinstance(err, dict):
            message = str(err.get("message") or message)
            type_ = str(err.get("type") or type_)
            param = err.get("param") if isinstance(err.get("param"), str) else None
            raw_code = err.get("code")
            code = str(raw_code) if isinstance(raw_code, str) and not raw_code.isdigit() else None
        elif isinstance(err, str):
            message = err
        elif "detail" in data:
            message = str(data["detail"])
        elif isinstance(data.get("message"), str):
            message = data["message"]
    elif raw:
        message = f"{message}: {raw[:200].decode('utf-8', 'replace')}"
    error = UpstreamHTTPError(status, message, type_=type_, param=param, code=code)
    if retry_after and retry_after.isascii() and retry_after.isprintable():
        if retry_after.isdigit():
            error.retry_after_s = int(retry_after)
        else:
            error.extra_headers["retry-after"] = retry_after
    return error
