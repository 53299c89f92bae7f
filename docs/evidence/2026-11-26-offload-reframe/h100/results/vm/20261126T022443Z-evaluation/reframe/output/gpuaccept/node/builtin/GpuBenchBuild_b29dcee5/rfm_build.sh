#!/bin/bash

_onerror()
{
    exitcode=$?
    echo "-reframe: command \`$BASH_COMMAND' failed (exit code: $exitcode)"
    exit $exitcode
}

trap _onerror ERR

make -j 8 GIT_REV=c60e4c6 CUDA_ARCH=-gencode=arch=compute_90,code=sm_90 gpu
