WHEELHOUSE=/work/main/.devq/a/whl make accept SUITE=evaluation ANSIBLE_ARGS=-e @/tmp/w/extra-vars.yml --skip-tags gpuaccept_suite,gpuaccept_bench
