/* stb_image_impl.c — stb_image's decoder compiled from Debian's libstb-dev header into the fuzz
 * and replay programs (instead of linking libstb), so that under `make fuzz` the decoder itself is
 * instrumented: libFuzzer sees its branches and ASan/UBSan check its memory accesses. */
#define STB_IMAGE_IMPLEMENTATION
#include <stb/stb_image.h>
