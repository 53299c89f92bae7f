#!/bin/bash
# Links the BLAS that HPL, NVBLAS and gpuaccept-cpugemm call from PyPI's mkl-static archives into one shared
# library (about 30 MB, 1.4 MB xz-compressed), for nodes where MKL's wheels (about 1 GB) cannot go, e.g. a
# machine reached through a size-limited carry. Every CPU code path of those routines is kept (MKL dispatches
# at run time); only the listed symbols are exported.
#
#   pip download --no-deps mkl-static==2024.2.2 && unzip mkl_static-*.whl      (or pip install mkl-static)
#   scripts/mkl-blas-subset.sh <dir holding libmkl_core.a> OUTPUT.so
#
# Then: roles/gpuaccept_hpl with gpuaccept_hpl_source_blas: custom, gpuaccept_hpl_custom_blas_lib: OUTPUT.so
# (docs/checks/hpl.md). Needs gcc and GNU OpenMP (libgomp: MKL's GNU threading layer).
set -euo pipefail
if [ $# -ne 2 ]; then
  echo "usage: $0 MKL_LIB_DIR OUTPUT.so" >&2
  exit 2
fi
lib=$1
out=$2
for a in libmkl_intel_lp64.a libmkl_gnu_thread.a libmkl_core.a; do
  [ -f "$lib/$a" ] || { echo "$0: $lib/$a not found (PyPI's mkl-static puts the archives in <prefix>/lib)" >&2; exit 2; }
done
syms="dgemm_ dtrsm_ dgemv_ dtrsv_ dger_ daxpy_ dcopy_ dscal_ dswap_ idamax_ ddot_ dnrm2_ dasum_ drot_ dsymv_ dtrmv_"
syms="$syms dsyr_ dsyr2_"
for p in s d c z; do for r in gemm symm syrk syr2k trsm trmm; do syms="$syms ${p}${r}_"; done; done
for r in hemm herk her2k; do syms="$syms c${r}_ z${r}_"; done
syms="$syms cblas_dgemm cblas_sgemm cblas_dtrsm cblas_dgemv cblas_dtrsv cblas_dger cblas_daxpy cblas_dcopy"
syms="$syms cblas_dscal cblas_dswap cblas_idamax mkl_get_version_string MKL_Get_Version_String"
syms="$syms MKL_Set_Num_Threads MKL_Set_Dynamic MKL_Get_Max_Threads MKL_CBWR_Get_Auto_Branch"
syms="$syms mkl_set_num_threads mkl_set_dynamic mkl_get_max_threads"
map=$(mktemp)
trap 'rm -f "$map"' EXIT
{ echo "{ global:"; for s in $syms; do echo "  $s;"; done; echo "local: *; };"; } > "$map"
undef=()
for s in $syms; do undef+=("-Wl,-u,$s"); done
gcc -shared -o "$out" -Wl,-soname,"$(basename "$out")" -Wl,--version-script="$map" "${undef[@]}" \
  -Wl,--start-group "$lib/libmkl_intel_lp64.a" "$lib/libmkl_gnu_thread.a" "$lib/libmkl_core.a" -Wl,--end-group \
  -lgomp -lpthread -lm -ldl
nm -D --defined-only "$out" | grep -c ' T ' | xargs echo "$out: exported functions:"
