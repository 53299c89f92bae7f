#!/bin/bash
/work/main/.venv/bin/python -m gpuaccept dcgm-diag --level 2 --output dcgm_diag.json
