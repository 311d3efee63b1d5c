"""LatestRequest: one request at a time, the latest asked meanwhile runs next, the ones between are dropped."""

from __future__ import annotations

from cockpit.tui.latest import LatestRequest


def test_one_at_a_time_and_the_latest_wins():
    started: list[str] = []
    requests: LatestRequest[str] = LatestRequest(started.append)
    requests.ask("a")
    requests.ask("b")  # a runs: b waits
    requests.ask("c")  # c replaces b
    assert started == ["a"] and requests.running
    assert not requests.done("a")  # a's answer is stale: c starts
    assert started == ["a", "c"] and requests.running
    assert requests.done("c") and not requests.running
    assert started == ["a", "c"]


def test_asking_for_nothing_drops_what_waits():
    started: list[str] = []
    requests: LatestRequest[str] = LatestRequest(started.append)
    requests.ask("a")
    requests.ask("b")
    requests.ask(None)  # back to the plan: neither b nor a is shown
    assert not requests.done("a") and started == ["a"] and not requests.running
