"""The evaluation suite's two end-to-end runs (`make accept SUITE=evaluation`, one pass, on 1 x H200 and 2 x H200 at
one revision; tests/fixtures/recorded/2026-11-28-evaluation) judged again against today's references.

- 2 x H200: the verdict the machine printed was REJECTED for offload_gemm and fft_offload alone ("the benchmark saw
  1 GPUs, the node has 2"): both measure one GPU by design (the host against one GPU with its copies,
  gpuaccept.checks' ``one_gpu``). Judged today it is ACCEPTED, every GPU check but those two naming both GPUs.
- 1 x H200: the APOA1 input set was removed under the suite (the device tool's refresh of the checkout; the
  evidence README says how), so both MD checks are NOT RUN and the node is still not accepted: an expected check
  that could not look rejects the node.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from conftest import RECORDED
from judge_support import rejudge_today

from gpuaccept.checks import CHECKS
from gpuaccept.judge import completeness, rules, verdict

EVIDENCE = RECORDED / "2026-11-28-evaluation"
TWO = EVIDENCE / "two-h200" / "results" / "localhost" / "20261128T142259Z-evaluation"
ONE = EVIDENCE / "one-h200" / "results" / "localhost" / "20261128T140938Z-evaluation"


def test_the_two_gpu_evaluation_is_accepted_and_the_one_gpu_checks_name_one_gpu():
    v = rejudge_today(TWO)
    assert v.accepted, verdict.table(v)
    recorded = json.loads((TWO / "verdict.json").read_text())
    assert recorded["verdict"] == "fail" and set(recorded["failed_checks"]) == {"offload_gemm", "fft_offload"}
    # the one-GPU checks measured GPU 0 of the node; every other GPU check named both GPUs
    for key in ("offload_gemm", "fft_offload"):
        assert CHECKS[key].one_gpu
    assert not any(c.one_gpu for k, c in CHECKS.items() if k not in ("offload_gemm", "fft_offload"))


def test_the_one_gpu_evaluation_is_not_accepted_for_its_md_checks():
    v = rejudge_today(ONE)
    assert not v.accepted
    text = verdict.table(v)
    assert "APOA1 input set not installed" in text


@pytest.fixture
def two_gpu_facts() -> dict:
    return json.loads((TWO / "node-facts.json").read_text())


def _offload_doc() -> tuple[dict, Path]:
    path = next(TWO.glob("reframe/output/**/offload_gemm.json"))
    return json.loads(path.read_text()), path


def test_a_one_gpu_check_still_names_a_gpu_of_the_node_and_only_one(two_gpu_facts):
    doc, path = _offload_doc()
    assert len(doc["devices"]) == 1
    assert completeness.document_problems("offload_gemm", doc, path, two_gpu_facts, every=False) == []
    assert rules.document_problems(doc, path, 1, one_gpu=True) == []
    # judged as every GPU check is, GPU 1 would be missing
    assert any("never measured" in p for p in completeness.document_problems("offload_gemm", doc, path, two_gpu_facts))
    # a device that is no GPU of the node
    forged = copy.deepcopy(doc)
    forged["devices"][0]["pci_bus_id"] = "00000000:99:00.0"
    assert any("is no GPU of the node facts" in p
               for p in completeness.document_problems("offload_gemm", forged, path, two_gpu_facts, every=False))
    # two devices where one is measured by design
    both = copy.deepcopy(doc)
    gpu1 = two_gpu_facts["gpus"][1]
    both["devices"].append(dict(doc["devices"][0], index=1, pci_bus_id=gpu1["pci_bus_id"], serial=gpu1.get("serial"),
                                uuid=gpu1.get("uuid")))
    assert rules.document_problems(both, path, 1, one_gpu=True) == [
        f"{path.name}: the benchmark saw 2 GPUs, it measures one GPU by design"]
