#!/bin/bash
/work/main/results/localhost/20261128T142259Z-evaluation/reframe/stage/gpuaccept/node/builtin/MemtestBuild_598a98ea/gpuaccept-memtest --output memtest.json --seconds 20
