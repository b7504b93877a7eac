#!/bin/bash
# gpu/device_pack.sh - run HERE before a device call: build the GPU targets
# in build-gpu (sm_90) and copy the shared libraries they need that the
# device image lacks (ncursesw, Criterion and its dependencies) into
# .devlib/. Carry build-gpu and .devlib with the call; gpu/device_run.sh
# uses them. Both paths must be git-ignored (build* is; add .devlib to
# .git/info/exclude once).
set -eu
cd "$(dirname "$0")/.."
cmake -S . -B build-gpu -DPF_WERROR=ON -DCMAKE_CUDA_ARCHITECTURES=90 >/dev/null
cmake --build build-gpu -j2 --target pagefault test_gpu test_gpu_host pagefault_gpu
rm -rf .devlib && mkdir -p .devlib
for f in build-gpu/pagefault build-gpu/tests/test_gpu build-gpu/tests/test_gpu_host; do
    ldd "$f" | awk '/=> \// {print $3}'
done | sort -u | grep -vE '/(libc|libm|libdl|libpthread|librt|libresolv|libstdc\+\+|libgcc_s|ld-linux[^/]*)\.so' |
    while read -r lib; do cp -L "$lib" .devlib/; done
du -sh build-gpu .devlib
