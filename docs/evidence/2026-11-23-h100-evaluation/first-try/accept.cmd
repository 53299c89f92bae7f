WHEELHOUSE=/work/main/.devq/a/whl make accept SUITE=evaluation ANSIBLE_ARGS=-e @/root/out/extra-vars.yml
