/* test_library_doc.c — docs/library.md's C code is compiled: every ```c block in it must appear,
 * character for character, in one of the example programs that `make test` builds and runs
 * (examples/mlp_cifar10.c, examples/cnn_cifar10.c). An edited example or a hand-written snippet
 * in the doc fails here, with the block's first line. */
#include "test.h"
#include <stdlib.h>
#include <string.h>

/* the whole file as a NUL-terminated string (malloc'ed), or NULL */
static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) { free(s); s = NULL; }
    if (s) s[n] = 0;
    fclose(f);
    return s;
}

VG_TEST(library_doc_c_blocks_are_excerpts_of_the_examples) {
    const char *sources[] = {"examples/mlp_cifar10.c", "examples/cnn_cifar10.c"};
    char *doc = slurp("docs/library.md"), *src[2] = {slurp(sources[0]), slurp(sources[1])};
    REQUIRE(doc && src[0] && src[1]);
    int blocks = 0;
    for (const char *p = strstr(doc, "\n```c\n"); p; p = strstr(p, "\n```c\n")) {
        const char *body = p + 6, *end = strstr(body, "\n```");
        REQUIRE(end);
        char *block = strndup(body, (size_t)(end + 1 - body));   /* with its last newline */
        REQUIRE(block);
        blocks++;
        const char *nl = strchr(block, '\n');
        CHECK_MSG(strstr(src[0], block) || strstr(src[1], block),
                  "docs/library.md: the C block starting \"%.*s\" is in neither %s nor %s",
                  (int)(nl - block), block, sources[0], sources[1]);
        free(block);
        p = end + 4;                                 /* past the closing fence */
    }
    CHECK_MSG(blocks >= 10, "docs/library.md has %d C blocks; expected the walk-through's 10 or more", blocks);
    free(doc); free(src[0]); free(src[1]);
}
