#!/bin/bash
# On a 1 x H200 141 GB SXM VM, from this branch's tree (carried as .wt/issue-3, .whl beside it): the
# GpuHplStyle ReFrame check 5 times under the power sampler, as on the H100
# (../2026-11-22-h100-hpl-reframe/device_rfm.sh), to measure the h200 node type. h200.yaml had no hplstyle
# section yet, so the runs are judged against a scratch copy of reference_values whose h200.yaml gets
# informational-only hplstyle entries (measuring, not judging); the references come from these documents.
set -u
mkdir -p /tmp/refs && cp reference_values/*.yaml /tmp/refs/
SRC=$(python3 -c "import yaml; print(next(iter(yaml.safe_load(open('/tmp/refs/h200.yaml'))['sources'])))")
{
  echo "  hplstyle:"
  for m in tflops_min:TFLOP/s tflops_sum:TFLOP/s residual_max:ratio energy_j:J power_avg_w:W power_peak_w:W gflops_per_watt:GFLOP/s; do
    echo "    ${m%%:*}: {informational: 'being measured (device_h200_hpl.sh)', unit: ${m#*:}, source: $SRC}"
  done
} >> /tmp/refs/h200.yaml
NODE_TYPE=h200 REFDIR=/tmp/refs INJECT=0 bash docs/evidence/2026-11-22-h100-hpl-reframe/device_rfm.sh
