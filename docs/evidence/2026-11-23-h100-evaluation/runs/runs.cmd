.venv/bin/gpuaccept run --suite evaluation --results /tmp/w/results --reframe-config /work/main/build/reframe_settings.py -- -n MdApoa1.*apoa1_x12|GpuHplCuda
.venv/bin/gpuaccept run --suite evaluation --results /tmp/w/results --reframe-config /work/main/build/reframe_settings.py -- -n MdApoa1.*apoa1_x12|GpuHplCuda
.venv/bin/gpuaccept run --suite evaluation --results /tmp/w/results --reframe-config /work/main/build/reframe_settings.py -- -n MdApoa1.*apoa1_x12|GpuHplCuda
.venv/bin/gpuaccept run --suite evaluation --results /tmp/w/results --reframe-config /work/main/build/reframe_settings.py -- -n MdApoa1.*apoa1_x12|GpuHplCuda
