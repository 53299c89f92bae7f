python3 docs/evidence/crosscheck_gemm_torch.py --gemm-bin build/bench/gpuaccept-gemm --rounds 2 --cooldown-s 0.5 --out-dir /tmp/w/xcheck
