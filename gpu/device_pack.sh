#!/bin/bash
# gpu/device_pack.sh [BUILD] - run HERE before a device call: build the GPU
# targets (sm_90) in BUILD (default build-gpu) and gather what the device
# machine needs into .dev-bin/: pagefault, test_gpu, test_gpu_host,
# libpagefault_gpu.so, the two probes (pagefault_stream_probe,
# pagefault_launch_probe) and the shared libraries the device image lacks
# (ncursesw, Criterion and its dependencies), and packs them into
# .dev-pack/bin.txz. Carry the source copy with .dev-pack inside it (not
# .dev-bin); gpu/device_run.sh unpacks it. Both are git-ignored (.gitignore:
# /.dev-*/).
set -eu
cd "$(dirname "$0")/.."
B=${1:-build-gpu}
# CMAKE_EXTRA: more configure flags, e.g. -DPF_SANITIZE=... (with its own
# BUILD dir: the cache keeps a flag until it is set again)
cmake -S . -B "$B" -DPF_WERROR=ON -DCMAKE_CUDA_ARCHITECTURES=90 ${CMAKE_EXTRA:-} >/dev/null
cmake --build "$B" -j2 --target pagefault test_gpu test_gpu_host pagefault_gpu pagefault_stream_probe \
    pagefault_launch_probe
rm -rf .dev-bin && mkdir -p .dev-bin/lib
cp "$B/pagefault" "$B/tests/test_gpu" "$B/tests/test_gpu_host" "$B/gpu/libpagefault_gpu.so" \
    "$B/gpu/pagefault_stream_probe" "$B/gpu/pagefault_launch_probe" .dev-bin/
for f in .dev-bin/pagefault .dev-bin/test_gpu .dev-bin/test_gpu_host; do
    ldd "$f" | awk '/=> \// {print $3}'
done | sort -u | grep -vE '/(libc|libm|libdl|libpthread|librt|libresolv|libstdc\+\+|libgcc_s|ld-linux[^/]*)\.so' |
    while read -r lib; do cp -L "$lib" .dev-bin/lib/; done
# The five binaries each hold every kernel (about 13 MB each): gzip's 32 KB
# window packs each copy again (61 MiB with 16 versions, near the device
# tool's 64 MiB), while xz -9's 64 MiB dictionary sees that the copies are
# the same and packs them about once; device_run.sh unpacks it.
# written aside, then renamed: a copy taken meanwhile never sees half a file
mkdir -p .dev-pack && rm -f .dev-pack/bin.tgz &&
    XZ_OPT=-9 tar cJf .dev-pack/bin.txz.new .dev-bin && mv .dev-pack/bin.txz.new .dev-pack/bin.txz
du -sh .dev-bin .dev-pack/bin.txz
