from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from specgate.sse import DONE, SSESplitter, encode_event, event_data


def test_split_across_chunk_boundaries() -> None:
    s = SSESplitter()
    assert s.feed(b'data: {"a"') == []
    assert s.feed(b": 1}\n\ndata: [DO") == [b'data: {"a": 1}\n\n']
    assert s.feed(b"NE]\n\n") == [b"data: [DONE]\n\n"]
    assert s.pending == b""


def test_crlf_and_comments() -> None:
    events = SSESplitter().feed(b": ping\r\n\r\ndata: x\r\n\r\n")
    assert [event_data(e) for e in events] == [None, b"x"]


def test_multiline_data_joined() -> None:
    assert event_data(b"event: m\ndata: a\ndata:b\n\n") == b"a\nb"
    assert event_data(encode_event(DONE)) == DONE


def test_oversized_event_refused() -> None:
    s = SSESplitter(max_event_bytes=10)
    with pytest.raises(ValueError, match="larger"):
        s.feed(b"data: " + b"x" * 20)


@given(
    st.lists(st.binary(min_size=0, max_size=40).filter(lambda b: b"\n" not in b and b"\r" not in b), max_size=20),
    st.data(),
)
def test_any_chunking_gives_same_events(payloads: list[bytes], data: st.DataObject) -> None:
    stream = b"".join(encode_event(p) for p in payloads)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=10)))
    s = SSESplitter()
    out: list[bytes] = []
    prev = 0
    for cut in [*cuts, len(stream)]:
        out += s.feed(stream[prev:cut])
        prev = cut
    assert [event_data(e) for e in out] == payloads
