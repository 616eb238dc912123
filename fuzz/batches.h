/* batches.h — one training and one evaluation batch of a dataset the fuzzer made: the transforms
 * (random-resized crop, resize + centre crop, pad-crop) on odd image sizes, every output finite. */
#ifndef VG_FUZZ_BATCHES_H
#define VG_FUZZ_BATCHES_H
#include "data/data.h"
void fuzz_batches(const vg_dataset *d, int image_size);
#endif
