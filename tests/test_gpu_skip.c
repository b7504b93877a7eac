/* tests/test_gpu_skip.c - test_gpu in a build without CUDA: nothing to run
 * on a device, so report skipped (77) with the reason the API gives. */
#include <stdio.h>

#include "gpu/gpu.h"

int main(void)
{
    char why[200] = "";
    if (pf_gpu_available(why, sizeof why)) {
        printf("test_gpu: the API reports a device in a build without CUDA\n");
        return 1;
    }
    printf("skipped: no CUDA device (%s)\n", why);
    return 77;
}
