#!/bin/bash
# gpu/device_pack.sh [BUILD] - run HERE before a device call: build the GPU
# targets (sm_90) in BUILD (default build-gpu) and gather what the device
# machine needs into .dev-bin/: pagefault, test_gpu, test_gpu_host,
# libpagefault_gpu.so and the shared libraries the device image lacks
# (ncursesw, Criterion and its dependencies), and packs them into
# .dev-pack/bin.tgz. Carry the source copy with .dev-pack inside it (not
# .dev-bin); gpu/device_run.sh unpacks it. Both are git-ignored (.gitignore:
# /.dev-*/).
set -eu
cd "$(dirname "$0")/.."
B=${1:-build-gpu}
cmake -S . -B "$B" -DPF_WERROR=ON -DCMAKE_CUDA_ARCHITECTURES=90 >/dev/null
cmake --build "$B" -j2 --target pagefault test_gpu test_gpu_host pagefault_gpu pagefault_stream_probe
rm -rf .dev-bin && mkdir -p .dev-bin/lib
cp "$B/pagefault" "$B/tests/test_gpu" "$B/tests/test_gpu_host" "$B/gpu/libpagefault_gpu.so" \
    "$B/gpu/pagefault_stream_probe" .dev-bin/
for f in .dev-bin/pagefault .dev-bin/test_gpu .dev-bin/test_gpu_host; do
    ldd "$f" | awk '/=> \// {print $3}'
done | sort -u | grep -vE '/(libc|libm|libdl|libpthread|librt|libresolv|libstdc\+\+|libgcc_s|ld-linux[^/]*)\.so' |
    while read -r lib; do cp -L "$lib" .dev-bin/lib/; done
# The binaries hold every kernel (about 13 MB each): compressed, the
# copy that travels stays under the device tool's 64 MiB; device_run.sh
# unpacks it.
# written aside, then renamed: a copy taken meanwhile never sees half a file
mkdir -p .dev-pack && tar czf .dev-pack/bin.tgz.new .dev-bin && mv .dev-pack/bin.tgz.new .dev-pack/bin.tgz
du -sh .dev-bin .dev-pack/bin.tgz
