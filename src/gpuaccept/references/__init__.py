"""Reference values in two layers: per GPU SKU, and per node type.

- ``reference_values/gpus/<sku>.yaml`` (schema ``gpuaccept.gpu/1``): how NVML names the GPU (model names and
  PCI device ids, as DCGM keys its diag thresholds) and its per-GPU figures (copies, GEMM, HPL per GPU,
  power), which hold for each GPU of any node built with it.
- ``reference_values/<node_type>.yaml`` (schema ``gpuaccept.references/2``): names its GPU SKU and count and
  holds only what is particular to the node (peer-to-peer, NUMA x GPU, collectives, host GEMM and HPL, node
  sums, health expectations such as NVLink links).
- A self-contained ``gpuaccept.references/1`` file (both layers in one file) still loads.

Which layer a metric belongs to, and its unit, is its check's declaration (src/gpuaccept/checks.py). A node
of a known SKU with no node type file for its GPU count gets the node type ``<sku>_x<count>``: its per-GPU
figures are judged, its node layer is missing (NodeType.node_layer_missing says why) and the node is not accepted
until a node type file is added. The format is described in docs/reference-values.md; every error names the
file, the line and the key.

The package, below the judge and the probes: ``model`` (the references as held), ``schema`` and ``parse`` (the
files), ``node_types`` (which node types a directory holds, one loaded by name), ``detect`` (which node type a node's
facts match), ``baselines`` (a node's own host figures), ``link`` (the PCIe link and the link gates bound to it),
``datasheets`` (the GPU models' datasheet figures) and ``resolve`` (the node type of a run, resolved once by
``gpuaccept run`` and written to its ``node-type.json``, which the ReFrame checks and the judge read).
"""

from __future__ import annotations

from gpuaccept.references.baselines import NodeBaseline, load_node_baseline, with_node_baseline
from gpuaccept.references.detect import detect, detect_sku, mismatches, wrong_gpus
from gpuaccept.references.link import bind_link
from gpuaccept.references.model import (
    GPU_DIR,
    GPU_SCHEMA,
    MAX_FILE_BYTES,
    MAX_TOLERANCE,
    NAME_RE,
    NODE_BASELINE_FILE,
    NODE_BASELINE_SCHEMA,
    NODE_TYPE_RE,
    SCHEMA,
    SCHEMA_V1,
    SOURCE_KINDS,
    UNITS,
    GpuSku,
    MetricReference,
    NodeType,
    ReferenceError,
    check_name,
)
from gpuaccept.references.node_types import (
    load_all,
    load_gpus,
    load_node_type,
    node_type_exists,
    reference_file,
    sku_only,
    unknown_node_type,
)
from gpuaccept.references.parse import _fail, load_file, load_gpu
from gpuaccept.references.schema import SCHEMAS

__all__ = [
    "GPU_DIR", "GPU_SCHEMA", "MAX_FILE_BYTES", "MAX_TOLERANCE", "NAME_RE", "NODE_BASELINE_FILE",
    "NODE_BASELINE_SCHEMA", "NODE_TYPE_RE", "SCHEMA", "SCHEMAS", "SCHEMA_V1", "SOURCE_KINDS", "UNITS", "GpuSku",
    "MetricReference", "NodeBaseline", "NodeType", "ReferenceError", "_fail", "bind_link", "check_name", "detect",
    "detect_sku", "load_all", "load_file", "load_gpu", "load_gpus", "load_node_baseline", "load_node_type",
    "mismatches", "node_type_exists", "reference_file", "sku_only", "unknown_node_type", "with_node_baseline",
    "wrong_gpus",
]  # fmt: skip
