"""The recorded store (real results of a tiny local study) opened on a copy, with a fixed clock."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from cockpit.forecast.plan import make_plan
from cockpit.store import StudyStore
from cockpit.study.spec import load_study
from cockpit.tui.app import CockpitApp
from cockpit.tui.controller import RecordedController, store_controller

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "recorded-store"
SIZE = (150, 36)
SMALL = (80, 24)  # the smallest terminal the cockpit is laid out for
LARGE = (200, 50)


@dataclass
class Recorded:
    store: StudyStore
    now: float
    study: str = "recorded"

    def snapshot(self):
        return self.store.snapshot(self.study, now=self.now)

    def controller(self, with_plan: bool = False) -> RecordedController:
        plan = None
        if with_plan:
            study = load_study(FIXTURE / "study.toml")
            done = set(self.store.results(self.store.study_key(self.study)))
            plan = make_plan(study, dict.fromkeys(done, "done"), used=0.25, cluster="local")
        return store_controller(self.store, self.study, now=self.now, plan=plan)

    def app(self, *, with_plan: bool = False, **kwargs) -> CockpitApp:
        return CockpitApp(
            self.controller(with_plan), clock=lambda: self.now, poll_interval=None,
            offer_plan=with_plan, **kwargs,
        )


@pytest.fixture
def recorded(tmp_path: Path):
    shutil.copy(FIXTURE / "store.sqlite", tmp_path / "store.sqlite")
    store = StudyStore(tmp_path / "store.sqlite")
    last = store.db.execute("SELECT last_poll_at FROM studies WHERE name = 'recorded'").fetchone()[0]
    yield Recorded(store, now=last + 3.0)
    store.close()
