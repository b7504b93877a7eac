/* gpu/kernels_f32.cu - the attention kernels of gpu/kernels.cuh made for
 * fp32: one translation unit an element type, so that the build compiles the
 * three at once (one file of all three was the build's longest step). */
#include "gpu/kernels.cuh"

const pf_kern::Dtype pf_kern::kF32 = {launch_t<float>, occupancy_t<float>, prepare_t<float>};
