/* gpu/kernels_bf16.cu - the attention kernels of gpu/kernels.cuh made for
 * bf16: one translation unit an element type, so that the build compiles the
 * three at once (one file of all three was the build's longest step). */
#include "gpu/kernels.cuh"

const pf_kern::Dtype pf_kern::kBf16 = {launch_t<__nv_bfloat16>, occupancy_t<__nv_bfloat16>, prepare_t<__nv_bfloat16>};
