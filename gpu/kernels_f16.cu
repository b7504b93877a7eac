/* gpu/kernels_f16.cu - the attention kernels of gpu/kernels.cuh made for
 * fp16: one translation unit an element type, so that the build compiles the
 * three at once (one file of all three was the build's longest step). */
#include "gpu/kernels.cuh"

const pf_kern::Dtype pf_kern::kF16 = {launch_t<__half>, occupancy_t<__half>, prepare_t<__half>};
