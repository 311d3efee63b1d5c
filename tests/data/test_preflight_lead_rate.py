"""The preflight judges a dataset's tokenizer at the rate prepare will read: a lead stored at several samples
per frame runs at a multiple of the header's rate (03700181's MCL1: 212x4 on a 125 Hz header is 500 Hz)."""

from __future__ import annotations

import wfdb

from tests.data.wfdb_corpus import CORPUS
from trainer.commands.preflight import dataset_facts
from trainer.data.headers import lead_names
from trainer.data.records import lead_rate


def test_lead_rate_is_wfdbs_per_lead_rate() -> None:
    header = CORPUS / "03700181.hea"
    head = wfdb.rdheader(str(header.with_suffix("")))
    assert lead_names(header) == head.sig_name
    for index, name in enumerate(head.sig_name):
        expected = head.fs * head.samps_per_frame[index]
        assert lead_rate(header, index) == lead_rate(header, name) == expected
    assert lead_rate(header, "MCL1") == 500.0


def test_preflight_checks_the_lead_at_its_own_rate() -> None:
    spec = {"path": str(CORPUS), "tokenizer": {"name": "samples", "lead": "MCL1", "fs": 0, "highpass_hz": 0.5,
                                               "records": ["03700181"], "annotator": "sqrs"}}
    facts = dataset_facts("corpus", spec)
    assert "error" not in facts, facts
    assert facts["fs"] == 500.0 and facts["tokenized_fs"] == 500.0
