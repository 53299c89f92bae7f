#!/bin/bash

_onerror()
{
    exitcode=$?
    echo "-reframe: command \`$BASH_COMMAND' failed (exit code: $exitcode)"
    exit $exitcode
}

trap _onerror ERR

make -j 8 FFT=fftw FFTW_INC=/usr/include GIT_REV=25e4adc CUDA_ARCH=-gencode=arch=compute_90,code=sm_90 fft
