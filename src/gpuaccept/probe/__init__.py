"""What runs on the node: facts, the health probe, the power sampler and check, the MD, HPL and NAMD runners
and parsers. Never imports gpuaccept.judge: a probe records, the judge decides."""
