# Written by gpuaccept run from reframe_settings.py.j2: regenerate, do not edit.
#
# ReFrame configuration of vm, node type h200: one system, one
# partition, one environment. Written by the gpuaccept_reframe role from the node's facts in
# /tmp/results/vm/20261125T120449Z-nightly/node-facts.json; the checks read the partition's 'extras'.

site_configuration = {
    'systems': [
        {
            'name': 'gpuaccept',
            'descr': 'A GPU node under acceptance test',
            'hostnames': ['.*'],
            'modules_system': 'nomod',
            'partitions': [
                {
                    'name': 'node',
                    'descr': "h200, 1 GPU(s)",
                    'scheduler': 'local',
                    'launcher': 'local',
                    'environs': ['builtin'],
                    'max_jobs': 1,

                    'features': ['gpu'],
                    'devices': [
                        {'type': 'gpu', 'num_devices': 1},
                    ],

                    'extras': {

                        "node_type": "h200",

                        "reference_dir": "/work/main/reference_values",

                        "gpu_count": 1,

                        "facts_file": "/tmp/results/vm/20261125T120449Z-nightly/node-facts.json",

                        "cuda_arch": "-gencode=arch=compute_90,code=sm_90",

                        "blas": "openblas",

                        "mklroot": "/opt/torch/.venv",

                        "openblas_inc": "/usr/include/x86_64-linux-gnu/openblas-pthread",

                        "openblas_lib": "/usr/lib/x86_64-linux-gnu/openblas-pthread",

                        "git_revision": "16a979c",

                        "namd_home": "/work/main/namd",

                        "bench_dir": "/work/main/build/bench",

                    },
                },
            ],
        },
    ],
    'environments': [
        {
            'name': 'builtin',
            'cc': 'gcc',
            'cxx': 'g++',
            'ftn': '',
            'nvcc': "/usr/local/cuda/bin/nvcc",
        },
    ],
    'logging': [
        {
            'level': 'debug',
            'handlers': [
                {
                    'type': 'stream',
                    'name': 'stdout',
                    'level': 'info',
                    'format': '%(message)s',
                },
                {
                    'type': 'file',
                    'name': 'reframe.log',
                    'level': 'debug',
                    'format': '[%(asctime)s] %(levelname)s: %(check_info)s: %(message)s',
                    'append': False,
                },
            ],
            'handlers_perflog': [
                {
                    'type': 'filelog',
                    'prefix': '%(check_system)s/%(check_partition)s',
                    'level': 'info',
                    'format': ('%(check_job_completion_time)s|%(check_result)s|%(check_name)s|'
                               '%(check_environ)s|%(check_perfvalues)s'),
                    'format_perfvars': ('%(check_perf_value)s|%(check_perf_unit)s|%(check_perf_ref)s|'
                                        '%(check_perf_lower_thres)s|%(check_perf_upper_thres)s|'),
                    'append': True,
                },
            ],
        },
    ],
}
