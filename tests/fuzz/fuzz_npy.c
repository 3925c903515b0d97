/* fuzz_npy.c — libFuzzer harness for the .npy reader (npy_parse: magic,
 * version, header dict, shape arithmetic, data size). */
#include <stdint.h>
#include <stdlib.h>

#include "npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    npy_array a;
    char err[512];
    if (npy_parse(data, size, "fuzz.npy", &a, err, sizeof err) == 0)
        npy_free(&a);
    return 0;
}
