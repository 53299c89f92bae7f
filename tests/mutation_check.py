"""Mutation testing of the judge: change one decision at a time (a comparison, a bound, a retry rule, an expected
check, the node type's GPUs, a strict reader's refusal) and list the tests that go red. A decision no test notices
can be lost unnoticed; a mutant that survives and lets a bad node pass is a hole.

    PYTHONPATH=src python tests/mutation_check.py [--only TEXT] [--jobs N] [--broad]

Each mutant copies src/ to a temporary directory, replaces one exact snippet with the changed code, and runs its
tests against the copy: the tests it names (they must catch it), with ``--broad`` also every test file of the
judge's rules (``RULES_TESTS``). Exit 1 when a mutant leaves its tests green. Its output with ``--broad`` is
recorded in docs/evidence/2026-11-27-mutation/ (docs/judge.md). tests/test_mutation.py runs every mutant against
its own tests (``-x``) in CI, and checks that each snippet is still in the source once. Not collected by pytest
(its name does not start with test_).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "gpuaccept"
RULES_TESTS = ["tests/test_judge_rules_fail.py"]


@dataclass(frozen=True)
class Mutation:
    name: str  # the decision, as a reader would name it
    file: str  # under src/gpuaccept
    old: str | tuple[str, ...]  # the decision as written (each snippet exactly once in the file)
    new: str | tuple[str, ...]  # what replaces it
    tests: tuple[str, ...]  # the pytest arguments that run the tests that must catch it

    def pairs(self) -> list[tuple[str, str]]:
        olds = (self.old,) if isinstance(self.old, str) else self.old
        news = (self.new,) if isinstance(self.new, str) else self.new
        return list(zip(olds, news, strict=True))


R = "tests/test_judge_rules_fail.py"
U = "tests/test_unfoolable.py"
J = "tests/test_judge.py"
H = "tests/test_health.py"
T = "tests/test_trust.py"
REF = "tests/test_references.py"
NTF = "tests/test_node_type_file.py"
C = "tests/test_complete.py"


def k(file: str, expression: str) -> tuple[str, ...]:
    return (file, "-k", expression)


def t(file: str, *names: str) -> tuple[str, ...]:
    return tuple(f"{file}::{n}" for n in names)


M = Mutation
MUTATIONS: list[Mutation] = [
    # ---- validate: what ReFrame recorded and the document's own word
    M("a ReFrame result neither pass nor fail", "judge/validate.py", 'if result not in ("pass", "fail"):', "if False:",
      t(R, "test_a_reframe_result_neither_pass_nor_fail_fails_the_check")),
    M("a ReFrame failure before sanity", "judge/validate.py",
      'if result == "fail" and phase not in ("sanity", "performance"):', "if False:",
      t(R, "test_a_reframe_failure_before_sanity_fails_the_check")),
    M("a tool that could not look is not run", "judge/validate.py", 'if doc.get("not_run"):', "if False:",
      t(J, "test_a_tool_that_could_not_look_is_not_run")),
    M("a sampled check without the sampler's document", "judge/validate.py",
      'problems.append(Finding("power", case.power.error, scope="power sampler", file=case.power.path.name))', "pass",
      t(R, "test_a_sampled_check_without_the_samplers_document_fails")),
    M("the GPUs a GPU check's document saw are counted", "judge/validate.py",
      'gpus = (1 if check.one_gpu else len(facts.get("gpus") or [])) if check.needs_gpu else None', "gpus = None",
      k(R, "devices_list or another_number_of_gpus")),
    M("a check's registered rules are applied", "judge/validate.py", "problems += outcome.findings", "pass",
      t(R, "test_an_hpl_residual_not_below_the_threshold_fails")),
    M("a rule that finds nothing to look at makes the case not run", "judge/validate.py", "if outcome.not_run:",
      "if False:", t("tests/test_fabric.py", "test_validate_gives_not_run_without_an_hca_and_problems_with_a_fault")),
    M("a rule's reason it could not look is kept", "judge/validate.py",
      "cannot_look = outcome.cannot_look or cannot_look", "pass",
      t(J, "test_an_unreadable_kernel_log_is_not_run_and_the_node_not_accepted")),
    M("the health rules are applied", "judge/rules/table.py", "findings, metrics, waived, _gpu_counts(",
      "[], metrics, waived, _gpu_counts(", t(J, "test_health_rules_are_judged_from_the_observations")),
    M("HPL's residual rules are applied", "judge/rules/table.py",
      'return Outcome(of_document("hpl", document.hpl_problems(case.doc, case.path), case.path))',
      "return Outcome()", t(R, "test_an_hpl_residual_not_below_the_threshold_fails")),
    M("the throttle rules are applied", "judge/rules/table.py",
      "return Outcome(document.throttle_findings(case.doc, case.path))",
      "return Outcome()", k(R, "clocks_held_back")),
    M("a health check that could not read the kernel log is not run", "judge/rules/table.py",
      'cannot_look=not_run or ""', 'cannot_look=""',
      t(J, "test_an_unreadable_kernel_log_is_not_run_and_the_node_not_accepted")),
    M("a document the rules cannot read fails its check", "judge/validate.py", "except MALFORMED as err:",
      "except () as err:", t(U, "test_a_verdict_is_written_even_for_inputs_that_used_to_raise")),
    # ---- rules: the tool's own word, HPL, throttling, the power sampler
    M("the tool's own errors", "judge/rules/document.py",
      'problems = [f"{path.name}: error: {e}" for e in doc.get("errors") or []]', "problems = []",
      t(R, "test_the_tools_own_error_fails_the_check")),
    M("the tool's failed verification", "judge/rules/document.py", 'if not verification["passed"]:', "if False:",
      t(R, "test_the_tools_failed_verification_fails_the_check")),
    M("a GPU document without devices", "judge/rules/document.py",
      'if gpus_seen_by_node is not None and "devices" not in doc:', "if False:", k(R, "devices_list")),
    M("a GPU count other than the node's", "judge/rules/document.py", "if seen != gpus_seen_by_node:", "if False:",
      t(R, "test_a_gpu_document_listing_another_number_of_gpus_fails")),
    M("a document that is not gpuaccept.bench/1", "judge/rules/document.py",
      'if problem:\n        raise DocumentError(f"{path}: {problem}")',
      'if False:\n        raise DocumentError(f"{path}: {problem}")', k(J, "missing_or_broken_document")),
    M("the power sampler's errors", "judge/rules/document.py",
      'problems += [f"power sampler: {e}" for e in power_doc.get("errors") or []]', "pass",
      t(R, "test_the_power_samplers_error_fails_the_sampled_check")),
    M("the power sampler's failed verification", "judge/rules/document.py", 'if not pver.get("passed", False):',
      "if False:",
      t(R, "test_the_power_samplers_failed_verification_fails_the_sampled_check")),
    M("an unknown throttle reason", "judge/rules/document.py",
      'if reason in FAULT_REASONS or reason.startswith("unknown"):', "if reason in FAULT_REASONS:",
      k(R, "clocks_held_back")),
    M("a throttle fault", "judge/rules/document.py", 'if reason in FAULT_REASONS or reason.startswith("unknown"):',
      'if reason.startswith("unknown"):', k(R, "clocks_held_back")),
    M("a missing HPL scaled residual", "judge/rules/document.py",
      'problems.append(f"{path.name}: {what}: no scaled residual ({residual!r})")', "pass",
      t(R, "test_a_missing_hpl_scaled_residual_fails")),
    M("an HPL residual not below its threshold", "judge/rules/document.py",
      "elif threshold is not None and not residual < threshold:", "elif False:",
      t(R, "test_an_hpl_residual_not_below_the_threshold_fails")),
    M("no finite HPL threshold", "judge/rules/document.py",
      'problems.append(f"{path.name}: no finite residual threshold ({threshold!r}): nothing was checked")', "pass",
      k(R, "threshold_that_checks_nothing")),
    M("an HPL threshold outside (0, 16]", "judge/rules/document.py", "elif not 0 < threshold <= HPL_THRESHOLD_MAX:",
      "elif False:", k(R, "threshold_that_checks_nothing")),
    M("HPL's own failed residual check", "judge/rules/document.py",
      'if run.get("residual_verdict", "PASSED") != "PASSED" or run.get("passed", True) is not True:', "if False:",
      t(R, "test_hpls_own_failed_residual_check_fails")),
    M("no HPL run recorded", "judge/rules/document.py", "if not runs:\n        problems.append(",
      "if False:\n        problems.append(", t(R, "test_an_hpl_document_with_no_run_fails")),
    M("an HPL output cut short", "judge/rules/document.py", 'if "ended" in results and results["ended"] is not True:',
      "if False:", t(U, "test_an_hpl_output_cut_short_fails")),
    # ---- the strict reader of every JSON input (gpuaccept.textinput)
    M("a key twice in one object", "textinput.py", "if key in out:", "if False:", k(U, "not_strict_json_fails")),
    M("a key twice in one YAML mapping (the datasheets)", "textinput.py", "if seen:", "if False:",
      t(U, "test_a_datasheet_with_a_key_twice_is_refused")),
    M("a YAML alias refused, never expanded (the references, the datasheets, the thresholds, the XID catalogue)",
      "textinput.py", "if self.check_event(yaml.AliasEvent):", "if False:",
      t(REF, "test_one_yaml_loader_refuses_aliases_and_keys_twice_with_or_without_lines")),
    M("NaN and Infinity", "textinput.py", "parse_constant=_no_constant,", "", k(U, "not_strict_json_fails")),
    M("a number out of range", "textinput.py", "if not math.isfinite(value):", "if False:",
      k(U, "not_strict_json_fails")),
    M("nesting bounded", "textinput.py", "if depth > MAX_DEPTH:", "if False:", k(U, "not_strict_json_fails")),
    M("a document reached through a symbolic link", "textinput.py",
      "os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC", "os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC",
      t(U, "test_a_document_that_is_a_link_to_another_document_of_the_run_fails")),
    M("a document outside the run directory", "textinput.py",
      "if not any(inside(path, root) for root in roots) and os.path.lexists(path):", "if False:",
      t(U, "test_a_document_reached_through_a_linked_folder_outside_the_run_fails")),
    # ---- load: the run directory, its retries
    M("a test case ReFrame ran again counts each time", "judge/load.py",
      "        cases.extend(tc for tc in run.get(\"testcases\", []) if not tc.get(\"fixture\"))\n    return cases",
      "        cases.extend(tc for tc in run.get(\"testcases\", []) if not tc.get(\"fixture\"))\n"
      "    return list({str(tc.get(\"unique_name\") or tc.get(\"name\")): tc for tc in cases}.values())",
      t(U, "test_a_fault_reframe_ran_again_is_not_washed_away_by_its_later_pass")),
    M("the documents are held to the run directory", "judge/load.py",
      "within = roots(run_dir) if run_dir is not None else None", "within = None",
      t(U, "test_a_document_reached_through_a_linked_folder_outside_the_run_fails")),
    M("facts whose GPUs are not objects", "judge/load.py", "problem = facts_problem(facts)\n    if problem:",
      'problem = ""\n    if problem:', k(U, "facts_or_report and node-facts")),
    M("a retry without the one before it", "judge/load.py", "if k != len(out) + 1:", "if False:",
      k(U, "retry_folder")),
    M("a retry's list of checks that gpuaccept run does not write", "judge/load.py",
      "why = _retried_problem(checks)", 'why = ""', k(U, "retry_folder")),
    M("a retry folder that is a link", "judge/load.py", "if d.is_symlink():", "if False:", k(U, "retry_folder")),
    M("a retry folder gpuaccept run does not name so", "judge/load.py",
      "elif not _RETRY_NAME.match(d.name):", "elif False:", k(U, "retry_folder")),
    # ---- summarize and manifest: what the run wrote is what is judged
    M("the run's manifest is checked", "judge/summarize.py", "problems, warning = manifest.verify(root)",
      'problems, warning = [], ""', t(U, "test_re_judging_refuses_a_changed_added_or_missing_document_by_name")),
    M("a retry folder's problems are failed inputs", "judge/summarize.py", "errors += retry_problems",
      "errors += []", k(U, "retry_folder")),
    M("a run without a manifest says so", "judge/summarize.py",
      'result.rows += [verdict.Row("inputs", "manifest", verdict.INFO, reason=w, expected=False) for w in warnings]',
      "pass", t(U, "test_a_run_recorded_before_manifests_is_judged_with_a_warning_row")),
    M("a file changed since the run", "manifest.py", "if was == is_:\n            continue",
      "if True:\n            continue", t(U, "test_re_judging_refuses_a_changed_added_or_missing_document_by_name")),
    # ---- verdict: metrics, expected checks, the node, retries
    M("a gated metric without a reference", "judge/verdict.py",
      'return Row(key, metric, FAIL, value, unit, reason="no reference value for this metric", owner=owner)',
      'return Row(key, metric, INFO, value, unit, reason="no reference value for this metric", owner=owner)',
      t(R, "test_a_gated_metric_without_a_reference_fails")),
    M("a referenced metric not measured", "judge/verdict.py", "FAIL if ref.judged else INFO,", "INFO,",
      t(R, "test_a_referenced_metric_not_measured_fails")),
    M("a figure in another unit than its reference", "judge/verdict.py",
      "if status != INFO and unit != ref.unit:", "if False:",
      t(R, "test_a_figure_in_another_unit_than_its_reference_fails")),
    M("a problem fails its check", "judge/verdict.py",
      'if problems:\n        row = Row(key, None, FAIL, reason="; ".join(problems), findings=',
      'if False:\n        row = Row(key, None, FAIL, reason="; ".join(problems), findings=',
      t(R, "test_the_tools_failed_verification_fails_the_check")),
    M("a check the node type has references for is expected", "judge/verdict.py",
      "expected = node_type is None or check.key in node_type.checks", "expected = node_type is None",
      t(R, "test_the_tools_failed_verification_fails_the_check")),
    M("an optional check that ran is judged", "judge/verdict.py",
      "if row.status == NOT_RUN and expected and check.optional and not metric_rows:",
      "if expected and check.optional:",
      t(R, "test_a_failed_optional_check_still_rejects") + t(U, "test_an_optional_check_that_ran_gates_the_node")),
    M("a run in which nothing ran", "judge/verdict.py", "return ran and all(r.status == PASS for r in judged)",
      "return all(r.status == PASS for r in judged)", t(R, "test_a_run_in_which_nothing_ran_is_not_accepted")),
    M("an expected check not run", "judge/verdict.py", "return ran and all(r.status == PASS for r in judged)",
      "return ran and all(r.status in (PASS, NOT_RUN) for r in judged)",
      t(R, "test_an_expected_check_that_did_not_run_rejects_the_node")),
    M("a failed row counts", "judge/verdict.py",
      "judged = [r for r in rows if r.expected and r.status not in (INFO, WAIVED)]",
      "judged = [r for r in rows if r.expected and r.status not in (INFO, WAIVED, FAIL)]",
      t(R, "test_a_referenced_metric_not_measured_fails")),
    # Two rules guard this, each enough alone (the failed 'references' row, and accepting no node without a node
    # type): deleting one leaves the other, so they are deleted together.
    M("no reference file for the node type", "judge/verdict.py",
      ("accepted = node_type is not None and decide(rows)",
       'rows.append(Row("references", None, FAIL, reason=why_no_refs + BASELINE_HINT))'),
      ("accepted = decide(rows)", "pass"), t(R, "test_a_node_type_without_references_rejects_the_node")),
    M("the GPU count of the node", "judge/verdict.py", "ok = seen_gpus == claim", "ok = True",
      t(R, "test_a_gpu_missing_from_the_node_rejects_it")),
    M("more GPUs than the node type", "judge/verdict.py", "ok = seen_gpus == claim", "ok = seen_gpus >= claim",
      t(U, "test_more_gpus_than_the_node_type_fail_the_count")),
    M("fewer GPUs than the node type", "judge/verdict.py", "ok = seen_gpus == claim", "ok = seen_gpus <= claim",
      t(R, "test_a_gpu_missing_from_the_node_rejects_it")),
    M("the GPUs are the node type's model", "judge/verdict.py",
      'rows.append(Row("node", "gpu_model", FAIL if wrong else PASS, reason=wrong))',
      'rows.append(Row("node", "gpu_model", PASS, reason=wrong))', k(U, "gpus_differ or h200s_judged")),
    M("no datasheet: cannot judge", "judge/verdict.py", "if run.limits.unknown:", "if False:",
      t(U, "test_a_gpu_model_without_a_datasheet_cannot_be_judged")),
    M("a faulty node of an unknown model is rejected, not unjudgeable", "judge/verdict.py",
      'return said[0].reason if said and len(said) == len(blocking) and not v.accepted else ""',
      'return said[0].reason if said else ""',
      t(U, "test_a_faulty_node_of_an_unknown_gpu_model_is_rejected_not_unjudgeable")),
    M("physical bounds of the figures", "judge/verdict.py", "impossible = bounds.problems(key, metrics, limits)",
      "impossible = {}", k(R, "out_of_physical_bounds")),
    M("only a figure outside its band is measured again", "judge/verdict.py",
      "r.value is not None and (r.lower_bound is not None or r.upper_bound is not None)", "True",
      t(T, "test_only_figures_out_of_band_are_retried")),
    M("a count or a residual is a fault, never measured again", "judge/verdict.py",
      "            and retry.retryable(key, r.metric)\n", "", k(U, "never_retried_away")),
    M("a fault's earlier attempt stands", "judge/verdict.py",
      'stands = _earlier_stands(earlier[c], new, attempt, source or f"attempt {attempt}")', "stands = None",
      k(U, "never_retried_away")),
    M("a retry replaces only an attempt out of band", "judge/verdict.py", "if not faults and ran:", "if ran:",
      k(U, "never_retried_away")),
    M("a fault a retry found counts", "judge/verdict.py", "if not faults and any(_is_fault(r) for r in ran):",
      "if False:", k(U, "a_retry_found_rejects")),
    M("a retry that did not run the check leaves the failure", "judge/verdict.py",
      "ran = [r for r in new if r.metric is None and r.status in (PASS, FAIL)]",
      "ran = [r for r in new if r.metric is None]",
      t(U, "test_a_dip_is_still_measured_again_and_a_retry_that_did_not_run_the_check_leaves_the_failure")),
    M("a recorded verdict is read by its rows", "judge/verdict.py",
      'accepted=bool(doc["node_type"]) and decide(rows) and not incomplete(doc, rows),',
      'accepted=doc["verdict"] == PASS,',
      t(U, "test_show_takes_the_verdict_from_the_rows_and_says_when_the_file_disagrees")),
    # ---- retry: which figures are performance figures
    M("only performance figures are retryable", "judge/retry.py",
      'return unit == "ratio" and any(fnmatch.fnmatchcase(metric, p) for p in PERFORMANCE_RATIOS)', "return True",
      k(U, "never_retried_away or not_out_of_band")),
    # ---- references: the one comparison, link gates, the node's GPUs, node baselines
    M("below the band fails", "references/model.py", "if lo is not None and measured < lo:", "if False:",
      t(REF, "test_assess_is_the_one_decision")),
    M("above the band fails", "references/model.py", "if hi is not None and measured > hi:", "if False:",
      t(T, "test_a_node_baseline_judges_that_nodes_host_figures")),
    M("no value fails", "references/model.py", 'return FAIL, "no value", bounds', 'return PASS, "no value", bounds',
      t(REF, "test_assess_is_the_one_decision")),
    M("a value that is not a finite number fails", "references/model.py",
      'return FAIL, f"not a finite number: {_show(measured)}", bounds',
      'return PASS, f"not a finite number: {_show(measured)}", bounds', t(REF, "test_assess_is_the_one_decision")),
    M("the lower bound of a band", "references/model.py", "return self.value * (1.0 - self.lower)",
      "return self.value * (1.0 - 2 * self.lower)", t(REF, "test_assess_is_the_one_decision")),
    M("a link gate is a fraction of the link", "references/model.py", "floor = self.link_fraction * rate",
      "floor = 0.5 * self.link_fraction * rate", t(REF, "test_a_link_gate_is_a_fraction_of_the_node_link")),
    M("a tolerance over 0.5 needs its reason", "references/parse.py", "if tol is not None and tol > MAX_TOLERANCE:",
      "if False:", k(REF, "bad_files_name_file_line_and_key")),
    M("reference values bounded", "references/parse.py", "if value is not None and why:", "if False:",
      k(R, "out_of_bounds_is_refused or reference_of_1e_9")),
    M("a GPU of another PCI device id", "references/detect.py",
      "(by_id and str(device).upper() not in wanted)", "False", k(U, "gpus_differ")),
    M("a GPU of another name", "references/detect.py", "(name is not None and name not in names)", "False",
      k(U, "gpus_differ or h200s_judged")),
    M("a node baseline of another node type", "references/baselines.py",
      "if baseline.node_type != node_type.name:", "if False:",
      t(T, "test_a_node_baseline_judges_that_nodes_host_figures")),
    M("detection counts the GPUs", "references/detect.py", 'if len(gpus) != m["gpu_count"]:', "if False:",
      t(REF, "test_detect_and_mismatch_reasons")),
    # ---- the node type resolved once (node-type.json): a file changed since refused, the run's node type judged
    M("a reference file changed since the run resolved it", "references/resolve.py", "if now != sha:", "if False:",
      t(NTF, "test_a_reference_file_changed_since_the_run_resolved_it_is_refused")),
    M("the judge takes the run's node type", "judge/summarize.py",
      'if resolved is None or node_type not in ("", resolved.name):', "if True:",
      t(NTF, "test_the_judge_takes_the_runs_node_type_where_it_wrote_one")),
    M("node-type.json read strictly", "references/resolve.py", 'if doc.get("schema") != SCHEMA:', "if False:",
      k(NTF, "read_strictly")),
    # ---- bounds: what no GPU node can measure
    M("physical bounds: above the hardware", "references/bounds.py", "if b.high is not None and value > b.high:",
      "if False:", k(R, "out_of_physical_bounds")),
    M("physical bounds: zero or negative", "references/bounds.py",
      "if b.low is not None and (value <= b.low if b.low_open else value < b.low):", "if False:",
      k(R, "out_of_physical_bounds")),
    M("the smallest reference that judges", "references/bounds.py",
      'if floor is not None and value < floor and (unit != "ratio" or higher_is_better):', "if False:",
      k(R, "out_of_bounds_is_refused or reference_of_1e_9")),
    M("a GEMM rate above its datasheet peak", "references/bounds.py",
      'return _peak(limits, datasheets.GEMM_PRECISION[m["prec"]], 1)', 'return None, ""',
      k(R, "out_of_physical_bounds")),
    M("an HPL rate per GPU above the datasheet", "references/bounds.py", 'return _peak(limits, "fp64_tensor", 1)',
      'return None, ""', k(R, "out_of_physical_bounds")),
    M("an HPL node sum above the datasheet times the GPUs", "references/bounds.py",
      'return _peak(limits, "fp64_tensor", limits.gpus)', 'return None, ""', k(R, "out_of_physical_bounds")),
    M("a device copy above the memory bandwidth", "references/bounds.py",
      'return sheet.memory_gbps, f"the {sheet.names[0]} memory bandwidth ({sheet.source})"', 'return None, ""',
      k(R, "out_of_physical_bounds")),
    M("a host copy above the PCIe link", "references/bounds.py",
      'return limits.link_gbps, f"the rate of the PCIe link NVML reports ({limits.link})"', 'return None, ""',
      k(R, "out_of_physical_bounds")),
    M("a bidirectional copy above twice the link", "references/bounds.py",
      'return 2 * limits.link_gbps, f"twice the rate of the PCIe link NVML reports ({limits.link})"',
      'return None, ""', k(R, "out_of_physical_bounds")),
    M("an average power above the board power", "references/bounds.py",
      "if sheet is not None and sheet.max_power_w and any(", "if False and any(", k(R, "out_of_physical_bounds")),
    M("a datasheet fraction above 1", "references/bounds.py",
      'return 1.0, "the datasheet peak itself (a fraction of it is at most 1)"', 'return None, ""',
      k(R, "out_of_physical_bounds")),
    M("a GPU's figure is bounded by one GPU, not the node", "references/bounds.py",
      "gpus = limits.gpus if layer == metric_table.NODE else 1", "gpus = limits.gpus",
      t(U, "test_a_gpus_power_is_bounded_by_one_board_on_a_node_of_several")),
    # ---- readers re-derive the verdict from its rows
    M("fleet reads the verdict from the rows", "judge/readback.py",
      'return bool(doc.get("node_type")) and decide(read) and not incomplete(doc, read)',
      'return doc.get("verdict") == PASS',
      t(U, "test_fleet_takes_the_verdict_from_the_rows")),
    M("a reader says when the file disagrees with its rows", "judge/readback.py", "if stored != derived:",
      "if False:", t(U, "test_show_takes_the_verdict_from_the_rows_and_says_when_the_file_disagrees")),
    M("the exporter reads the verdict from the rows", "judge/exporter.py",
      "accepted = 1 if verdict.node_type and decide(verdict.rows) else 0",
      "accepted = 1 if verdict.accepted else 0", t(U, "test_the_exporter_takes_the_verdict_from_the_rows")),
    M("a fleet verdict whose rows are not a list", "results/fleet.py", "broken = _unreadable(rows, failed)",
      'broken = ""', k("tests/test_fleet.py", "unreadable")),
    # ---- per-GPU figures (judge/pergpu.py)
    M("per GPU: figures of a GPU the document does not list", "judge/pergpu.py", "if index not in gpus:",
      "if False and index not in gpus:", k("tests/test_pergpu.py", "do_not_match_the_devices")),
    M("per GPU: a GPU listed twice", "judge/pergpu.py", "elif index in per_gpu:", "elif False:",
      k("tests/test_pergpu.py", "do_not_match_the_devices")),
    M("per GPU: a GPU the document leaves out", "judge/pergpu.py", "if lacking:", "if False:",
      t("tests/test_pergpu.py", "test_a_document_that_leaves_a_gpu_out_fails_that_gpu")),
    # ---- the memory test (judge/rules.py)
    M("memtest: a bad word", "judge/rules/document.py", "        elif bad:\n", "        elif False:\n",
      t("tests/test_memtest.py", "test_a_bad_word_names_the_gpu_the_pattern_the_offset_and_the_bit")),
    M("memtest: memory not tested", "judge/rules/document.py", "if not passes or not tested:", "if False:",
      k("tests/test_memtest.py", "hides_a_gpu_or_its_count")),
    M("memtest: errors_total is the sum of the GPUs'", "judge/rules/document.py",
      "if errors_total is not None and errors_total != total:", "if False:",
      k("tests/test_memtest.py", "hides_a_gpu_or_its_count")),
    # ---- the burn-in (judge/burnin_rules.py)
    M("burn-in: an XID during the burn-in", "judge/burnin_rules.py", 'for e in gpu.g.get("xid_events") or []:',
      "for e in []:", t("tests/test_burnin.py", "test_an_xid_fails_with_its_time_and_what_to_do")),
    M("burn-in: a clock-event reason but the power cap", "judge/burnin_rules.py",
      "if e.reason in tl.POWER_CAP_OR_IDLE:", "if True:",
      t("tests/test_burnin.py", "test_a_gpu_that_throttles_thermally_at_300_s_fails_naming_the_gpu_and_the_time")),
    M("burn-in: the last GEMM window against the first", "judge/burnin_rules.py",
      "if r >= LAST_OVER_FIRST_MIN:", "if True:",
      t("tests/test_burnin.py", "test_a_gpu_that_throttles_thermally_at_300_s_fails_naming_the_gpu_and_the_time")),
    M("burn-in: a GPU lost mid-run or a sampling gap", "judge/burnin_rules.py", "if gap > MAX_GAP_S:", "if False:",
      t("tests/test_burnin.py", "test_a_gpu_lost_mid_run_and_a_sampling_gap_fail")),
    M("burn-in: stopped short", "judge/burnin_rules.py",
      "if elapsed < planned - window:", "if False:",
      t("tests/test_burnin.py", "test_a_burn_in_stopped_short_fails")),
    # ---- NVLink, DCGM, pinned configuration, fleet drift
    M("a fleet whose configuration drifts", "results/fleet.py",
      "return bool(entries) and all(e.verdict == PASS for e in entries) and not drifted",
      "return bool(entries) and all(e.verdict == PASS for e in entries)", k("tests/test_nvlink.py", "fleet")),
    M("a failed DCGM test", "judge/dcgm_rules.py", 'if status in ("pass", "skip", "not_run"):', "if True:",
      ("tests/test_dcgm.py", "tests/test_dcgm_recorded.py")),
    M("an NVLink error counter that grew", "judge/nvlink_rules.py", "if delta > limit:", "if False:",
      ("tests/test_nvlink.py",)),
    M("an NVLink link that went down during the suite", "judge/nvlink_rules.py",
      'if ln.get("state") == "up" and later.get("state") != "up":', "if False:", ("tests/test_nvlink.py",)),
    M("fewer NVLink links up than the node type's", "judge/nvlink_rules.py", "elif want and up < want:", "elif False:",
      ("tests/test_nvlink.py",)),
    M("a GPU off its node type's pins", "judge/health_rules.py",
      'findings.append(finding("config_drift", g, d.message, str(d.fix)))', "pass", ("tests/test_nvlink.py",)),
    M("a power limit off its node type's pin", "judge/config_drift.py",
      "if have is None or abs(have - float(want)) > POWER_TOLERANCE_W:", "if False:",
      k("tests/test_nvlink.py", "off_a_pin and power_enforced")),
    M("a node type lacking a gated reference is a gap", "judge/coverage.py",
      "if name in refs or not metric_table.gated(key, name):", "if True:",
      t("tests/test_coverage.py", "test_a_node_type_without_a_gated_reference_fails_gpuaccept_references")),
    # ---- health rules (docs/checks/health.md)
    M("health: the GPU count", "judge/health_rules.py", "if len(gpus) != count:", "if False:",
      t(H, "test_gpu_count_driver_and_cuda_versions")),
    M("health: the driver version", "judge/health_rules.py",
      'if not version_allowed(driver, expect["driver_versions"]):', "if False:",
      t(H, "test_gpu_count_driver_and_cuda_versions")),
    M("health: the CUDA version", "judge/health_rules.py", 'if not version_allowed(cuda, expect["cuda_versions"]):',
      "if False:", t(H, "test_gpu_count_driver_and_cuda_versions")),
    M("health: the link generation under load", "judge/health_rules.py", "if gen_want and gen < gen_want:",
      "if False:", k(H, "changed_field and pcie_gen_loaded")),
    M("health: the link width under load", "judge/health_rules.py", "if width_want and width < width_want:",
      "if False:", k(H, "changed_field and pcie_width_loaded")),
    M("health: ECC enabled", "judge/health_rules.py",
      'if expect["ecc"] and g.get("ecc_enabled") is not True:', "if False:", k(H, "changed_field and ecc_enabled")),
    M("health: uncorrectable ECC errors", "judge/health_rules.py", "        if count:\n", "        if False:\n",
      k(H, "changed_field and ecc_uncorrectable")),
    M("health: row remapping and page retirement pending or failed", "judge/health_rules.py",
      "if (g.get(reading) or {}).get(flag):", "if False:", k(H, "changed_field and remapped_rows")),
    M("health: retired pages over the limit", "judge/health_rules.py",
      'if total > expect["retired_pages_max"]:', "if False:", k(H, "changed_field and retired_pages")),
    M("health: persistence mode", "judge/health_rules.py",
      'if want != "any" and mode is not (want == "enabled"):', "if False:",
      k(H, "changed_field and persistence_mode")),
    M("health: a foreign compute process", "judge/health_rules.py",
      'for p in [] if load.get("passive") else g.get("processes") or []:', "for p in []:",
      t(H, "test_the_recorded_gemm_process_is_a_foreign_process")),
    M("health: an XID event", "judge/xid_actions.py", "for e in xids:", "for e in []:",
      t(H, "test_an_xid_line_after_the_given_time_fails")),
    M("health: an unreadable kernel log is not a pass", "judge/health_rules.py",
      "if not isinstance(xids, list):\n        why", "if False:\n        why",
      t(H, "test_an_unreadable_kernel_log_makes_the_health_check_not_run")),
    # ---- completeness, judged not believed (tests/test_complete.py)
    M("every GPU of the node once in a per-GPU document", "judge/validate.py",
      'problems += of_document("devices", devices, path)', "pass",
      k(C, "twice or uuid_is_another")),
    M("a GPU of the node a document never measured", "judge/completeness.py", "elif n == 0 and every:", "elif False:",
      k(C, "twice")),
    M("a GPU a document lists twice", "judge/completeness.py",
      'out.append(f"{path.name}: {_label(g)} is listed {n} times',
      'print(f"{path.name}: {_label(g)} is listed {n} times',
      k(C, "twice")),
    M("a device whose UUID is another GPU's", "judge/completeness.py",
      'if d.get(key) and g.get(key) and d[key] != g[key]:', "if False:", k(C, "uuid_is_another")),
    M("two GPUs of the node facts with one serial", "judge/completeness.py", 'for key in ("serial", "uuid"):',
      "for key in ():", k(C, "one_serial_and_uuid")),
    M("the GPUs of one node agree", "judge/completeness.py", "for g, diff in majority_differences(readings):",
      "for g, diff in []:", k(C, "differs_from_the_others")),
    M("a tool's per-GPU records cover its GPUs", "judge/completeness.py", "if seen.get(index, 0) == 0:", "if False:",
      k(C, "three_gpus_of_four or no_record_of_one_gpu")),
    M("the burn-in's per-GPU records are judged", "judge/rules/table.py", "if isinstance(records, list):",
      "if False:",
      k(C, "no_record_of_one_gpu")),
    M("memtest: a stop reason fails", "judge/rules/document.py", 'if row.get("stopped"):', "if False:",
      k(C, "killed_after")),
    M("memtest: the time asked", "judge/rules/document.py",
      "elif seconds * (passes + 1) / passes < MEMTEST_TIME_FRACTION * asked_s:", "elif False:", k(C, "killed_after")),
    M("memtest: the bytes planned", "judge/rules/document.py",
      "if tested is not None and target is not None and tested < target:", "if False:", k(C, "fewer_bytes")),
    M("burn-in: the judge's floor", "judge/burnin_rules.py", "if planned < MIN_DURATION_S:", "if False:",
      k(C, "12_seconds")),
    M("burn-in: the first and last seconds are watched", "probe/burnin_timeline.py",
      'times = [0.0, *timeline["t_s"], end_s]', 'times = [*timeline["t_s"]]', k(C, "first_or_last_seconds")),
    M("burn-in: no GPU recorded", "judge/burnin_rules.py", "if not isinstance(per_gpu, list) or not per_gpu:",
      "if not isinstance(per_gpu, list):", k(C, "recorded_no_gpu")),
    M("NVLink counters not compared fail on an NVLink node type", "judge/nvlink_rules.py", "if required(expect):",
      "if False:", k(C, "end_of_suite_reading or unreadable_at_the_end")),
    M("an NVLink link not read after the suite", "judge/nvlink_rules.py",
      'unread.append((g, f"NVLink link {k} read before the suite, not after it"))', "pass",
      k(C, "unreadable_at_the_end")),
    M("an NVLink counter that went down is a reset", "judge/nvlink_rules.py", "if delta < 0:",
      "if delta < 0 and False:", k(C, "reset_and_fails")),
    M("summarize refuses a node type without a suite's section", "cli_verdict.py",
      "if why:\n        raise references.ReferenceError(why)",
      "if False:\n        raise references.ReferenceError(why)", k(C, "memory_tests_section")),
    M("a check that ran on a type without its section is judged by its rules", "judge/verdict.py",
      "elif not expected and (found.problems or found.failed) and check.key in missing:", "elif False:",
      k(C, "bad_words_rejects_even")),
    M("a node figure is what its GPUs' figures give", "judge/consistency.py",
      "if abs(node - expected) > RELATIVE_TOLERANCE * max(abs(node), abs(expected), 1e-12):", "if False:",
      k(C, "far_below")),
    M("HPL-CUDA over every GPU of the node", "judge/consistency.py",
      ("if n is not None and n != gpus:", "if p is not None and q is not None and p * q != gpus:"),
      ("if False:", "if False:"), k(C, "hpl_cuda_over_two")),
    M("the manifest holds the node facts and ReFrame's report", "manifest.py",
      "and name not in recorded]  # fmt: skip", "and False]  # fmt: skip", k(C, "manifest_without_the_node_facts")),
    M("the manifest lists the node facts and ReFrame's report", "manifest.py",
      "if here == run_dir and _judge_output(name):", "if here == run_dir and (_judge_output(name) or name in COVERED):",
      k(C, "manifest_without_the_node_facts")),
    M("readers flag a run without a manifest", "manifest.py",
      'return f"no manifest ({path}): its documents cannot be shown unchanged since the run"', 'return ""',
      k(C, "manifest_was_deleted")),
    M("the metrics flag inputs not vouched for", "judge/exporter.py",
      'vouched = 0 if any(r.check == "inputs" for r in verdict.rows) else 1', "vouched = 1",
      k(C, "manifest_was_deleted")),
    M("a verdict without a row for a check of its suite is incomplete", "judge/verdict.py",
      'if missing:\n        return f"no row for', 'if False:\n        return f"no row for', k(C, "deleted_or_hidden")),
    M("a verdict whose failed check is marked not expected is incomplete", "judge/verdict.py", "if hidden:",
      "if False:", k(C, "deleted_or_hidden")),
    M("YAML nested too deep is refused", "textinput.py", "if self._depth > MAX_DEPTH:", "if False:",
      k(C, "nested")),
    M("a check with a figure missing is not retried", "judge/verdict.py", "row.out_of_band = all(",
      "row.out_of_band = any(", k(C, "not_retried")),
    M("VBIOS pins are judged", "judge/config_drift.py",
      "if allowed and not version_allowed(config.get(field), allowed):", "if False:", k(C, "vbios_and_mig_pins")),
    M("MIG pins are judged", "judge/config_drift.py",
      'if mig != "any" and config.get("mig_mode_current") != mig:', "if False:", k(C, "vbios_and_mig_pins")),
]  # fmt: skip


def mutated_tree(tmp: Path, mutation: Mutation) -> Path:
    """A copy of the project in ``tmp`` whose src/ carries the mutation (everything else linked); returns src/."""
    for entry in ROOT.iterdir():
        if entry.name not in ("src", ".git"):
            os.symlink(entry, tmp / entry.name)
    src = tmp / "src"
    shutil.copytree(ROOT / "src", src, ignore=shutil.ignore_patterns("__pycache__"))
    path = src / "gpuaccept" / mutation.file
    text = path.read_text()
    for was, now in mutation.pairs():
        if text.count(was) != 1:
            raise SystemExit(f"{mutation.name}: {was!r} is {text.count(was)} times in src/gpuaccept/{mutation.file}, "
                             "expected once: update tests/mutation_check.py")  # fmt: skip
        text = text.replace(was, now)
    path.write_text(text)
    return src


def applies(mutation: Mutation) -> str:
    """Why the mutation no longer applies to the source ("" when each snippet is there exactly once)."""
    text = (SRC / mutation.file).read_text()
    for was, _now in mutation.pairs():
        if text.count(was) != 1:
            return f"{was!r} is {text.count(was)} times in src/gpuaccept/{mutation.file}"
    return ""


def run(mutation: Mutation, broad: bool = False, first: bool = False) -> list[str]:
    """The tests that fail with the mutation (an empty list: no test notices it). ``first``: stop at the first."""
    tests = list(mutation.tests) + (RULES_TESTS if broad else [])
    with tempfile.TemporaryDirectory(prefix="gpuaccept-mutation-") as tmp:
        src = mutated_tree(Path(tmp), mutation)
        env = {**os.environ, "PYTHONPATH": str(src), "PYTHONDONTWRITEBYTECODE": "1"}
        argv = [sys.executable, "-m", "pytest", "-q", "-rf", "-p", "no:cacheprovider", "-o", "addopts=",
                *(["-x"] if first else []), *tests]  # fmt: skip
        proc = subprocess.run(argv, cwd=tmp, env=env, capture_output=True, text=True, check=False)
    failed = sorted({line.removeprefix("FAILED ").split(" - ")[0] for line in proc.stdout.splitlines()
                     if line.startswith("FAILED ")})  # fmt: skip
    count = re.search(r"(\d+) failed", proc.stdout)
    if (count and int(count.group(1)) != len(failed)) or proc.returncode not in (0, 1):
        raise RuntimeError(f"{mutation.name}: pytest exited {proc.returncode}:\n{proc.stdout[-3000:]}"
                           f"{proc.stderr[-3000:]}")  # fmt: skip
    return failed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="only mutations whose name contains this")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="mutants run at once (%(default)s)")
    parser.add_argument("--broad", action="store_true", help=f"also run {', '.join(RULES_TESTS)} for each")
    args = parser.parse_args()
    chosen = [m for m in MUTATIONS if not args.only or args.only in m.name]
    stale = [f"{m.name}: {why}" for m in chosen if (why := applies(m))]
    if stale:
        print("mutations that no longer apply:\n  " + "\n  ".join(stale))
        return 1
    uncaught = []
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for m, red in zip(chosen, pool.map(lambda m: run(m, args.broad), chosen), strict=True):
            print(f"{'RED  ' if red else 'GREEN'} {m.name} (src/gpuaccept/{m.file}): {len(red)} test(s) fail")
            for test in red:
                print(f"        {test}")
            if not red:
                uncaught.append(m.name)
            sys.stdout.flush()
    listed = ": " + "; ".join(uncaught) if uncaught else ""
    print(f"\n{len(chosen)} mutants, {len(uncaught)} no test catches{listed}")
    return 1 if uncaught else 0


if __name__ == "__main__":
    sys.exit(main())
