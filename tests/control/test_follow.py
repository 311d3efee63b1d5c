"""Parsing followed chunks: the fast parser must agree with the run-directory contract's reader exactly."""

from __future__ import annotations

import pytest

import cockpit.launch.follow as follow
from cockpit.launch.follow import Chunk, FileCursor, parse_jsonl_fast
from runcontract.files import parse_jsonl_bytes

SAMPLES = [
    b"",
    b'{"a": 1}\n',
    b'{"a": 1}\n{"b": 2}',  # unterminated last line waits for more
    b'{"loss": NaN, "step": 1}\n{"loss": Infinity}\n',  # what json.dumps(allow_nan=True) writes
    b'{"a": 1}\n[1, 2]\n3\n"text"\nnull\n',  # valid JSON that is not a record
    b'{"a": 1}, {"b": 2}\n{"c": 3}\n',  # two values on one line
    b'{"a": \n{"b": 2}\n\xff\xfe\n   \n{"c": [1, {"d": 2}]}\n',  # corrupt, binary, blank
    b"[\n1]\n",
]


@pytest.mark.parametrize("with_orjson", [True, False])
@pytest.mark.parametrize("data", SAMPLES)
def test_fast_parser_agrees_with_the_contract_reader(data, with_orjson, monkeypatch):
    if not with_orjson:
        monkeypatch.setattr(follow, "_fast_loads", None)
    elif follow._fast_loads is None:
        pytest.skip("orjson is not installed")
    fast, ref = parse_jsonl_fast(data), parse_jsonl_bytes(data)
    assert (repr(fast.records), fast.next_offset, fast.bad_lines) == (repr(ref.records), ref.next_offset, ref.bad_lines)


def test_cursor_keeps_partial_lines_and_refuses_gaps():
    cur = FileCursor()
    assert cur.feed_jsonl(Chunk("c/m", 0, b'{"step": 1}\n{"st')) == ([{"step": 1}], 0)
    assert (cur.committed, cur.expected) == (12, 16)
    assert cur.feed_jsonl(Chunk("c/m", 40, b"whatever\n")) is None  # a gap: dropped, never guessed
    assert cur.feed_jsonl(Chunk("c/m", 12, b'{"step": 1}\n')) is None  # a repeat: dropped
    assert cur.feed_jsonl(Chunk("c/m", 16, b'ep": 2}\nbad\n')) == ([{"step": 2}], 1)
    assert (cur.committed, cur.bad_lines, cur.dropped_chunks) == (28, 1, 2)
    assert cur.feed_jsonl(Chunk("c/m", 0, b"", reset=True)) == ([], 0) and cur.expected == 0
    log = FileCursor()
    assert log.feed_text(Chunk("c/out", 0, b"one\ntw")) == ["one"]
    assert log.feed_text(Chunk("c/out", 6, b"o\n\xff\n")) == ["two", "\ufffd"]
