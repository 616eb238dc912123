/* fuzz_image_decode.c — image decoding (data/image_decode.c): PNG through libpng, JPEG and the
 * other formats stb_image reads through stb_image, which is compiled into this program from
 * Debian's header (fuzz/stb_image_impl.c) so the decoder itself is instrumented. libpng is
 * Debian's shared library: ASan checks what our code hands it and how we use what it returns,
 * but libFuzzer cannot see its branches. A rejected input gets an error naming it; a decoded one
 * is (3, h, w) with 1 <= src_channels <= 4, and every byte of it is readable. */
#include "fuzz/common.h"
#include "data/data.h"
#include <stdlib.h>

#define NAME "fuzz-image"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint8_t *chw = NULL;
    int h = 0, w = 0, c = 0;
    char err[VG_DATA_ERRLEN] = "";
    if (vg_image_decode_memory(data, size, NAME, &chw, &h, &w, &c, err, sizeof err)) {
        fuzz_expect_error(err, NAME);
        fuzz_require(chw == NULL, "no pixels after a failed decode");
        return 0;
    }
    fuzz_require(chw && h > 0 && w > 0 && c >= 1 && c <= 4, "a decoded image has a size and 1..4 channels");
    fuzz_note("accepted: %dx%d, %d channels in the file", w, h, c);
    unsigned sum = 0;
    for (size_t i = 0; i < (size_t)3 * h * w; i++) sum += chw[i];
    free(chw);
    return (int)(sum & 0);
}
