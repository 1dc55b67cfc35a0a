from __future__ import annotations

import orjson
import pytest

from specgate.errors import InvalidRequest, NoHealthyEndpoint, normalise_upstream_error


def test_error_body_shape_and_headers() -> None:
    err = NoHealthyEndpoint("down", retry_after_s=3)
    assert orjson.loads(err.body()) == {
        "error": {"message": "down", "type": "api_error", "param": None, "code": "service_unavailable"}
    }
    assert err.headers()["retry-after"] == "3" and err.status == 503
    assert InvalidRequest("x", param="n").headers()["x-should-retry"] == "false"


@pytest.mark.parametrize(
    ("status", "raw", "message", "code"),
    [
        (
            400,
            b'{"error": {"message": "too long", "type": "BadRequestError", "param": null, "code": 400}}',
            "too long",
            None,
        ),
        (
            404,
            b'{"error": {"message": "no", "type": "NotFoundError", "code": "model_not_found"}}',
            "no",
            "model_not_found",
        ),
        (422, b'{"detail": [{"loc": ["body"], "msg": "bad"}]}', "[{'loc': ['body'], 'msg': 'bad'}]", None),
        (400, b"plain text", "upstream engine answered HTTP 400: plain text", None),
        (400, b"", "upstream engine answered HTTP 400", None),
        (400, b"[1, 2]", "upstream engine answered HTTP 400: [1, 2]", None),
    ],
)
def test_normalise_upstream_error(status: int, raw: bytes, message: str, code: str | None) -> None:
    err = normalise_upstream_error(status, raw)
    body = orjson.loads(err.body())["error"]
    assert err.status == status
    assert body["message"] == message and body["code"] == code
    assert set(body) == {"message", "type", "param", "code"}
