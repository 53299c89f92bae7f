"""gpuaccept: acceptance tests for GPU nodes.

The package holds what Ansible and ReFrame don't already do: node facts, reference values per node type,
verdicts from ReFrame's report, and the Prometheus textfile.
"""

__version__ = "0.1.0"
