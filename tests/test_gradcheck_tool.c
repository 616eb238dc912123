/* test_gradcheck_tool.c — ./gradcheck's command line: --list, --help, an unknown NAME refused with
 * the list of names, the pass rule in the header, aligned columns. Runs ./gradcheck (from $VG_BIN
 * when tests/run.sh sets it); skips visibly when it is not built. The rows themselves are checked
 * by tests/run.sh, which runs ./gradcheck in full. */
#include "test.h"
#include <stdlib.h>
#include <string.h>

VG_TEST(gradcheck_tool_list_help_and_unknown_names) {
    if (!vg_test_have_program("gradcheck")) VG_SKIP("./gradcheck is not built");
    static char out[1 << 16];
    CHECK(vg_test_run("./gradcheck --list", out, sizeof out) == 0);
    /* one name a line, sorted, no duplicates, and the ops every model uses among them */
    CHECK(strstr(out, "\nlayernorm\n") && strstr(out, "\nattention\n") && strstr(out, "add\n") == out);
    int lines = 0;
    char prev[64] = "";
    for (char *p = out, *nl; (nl = strchr(p, '\n')); p = nl + 1, lines++) {
        *nl = 0;
        CHECK_MSG(!strchr(p, ' ') && strlen(p) < sizeof prev, "--list line %d: '%s'", lines, p);
        CHECK_MSG(strcmp(prev, p) < 0, "--list not sorted and unique: '%s' after '%s'", p, prev);
        snprintf(prev, sizeof prev, "%.63s", p);   /* checked above: shorter than prev */
    }
    CHECK(lines > 30);
    CHECK(vg_test_run("./gradcheck --help", out, sizeof out) == 0 && strstr(out, "usage: ./gradcheck") && strstr(out, "--list"));
    /* a name no op contains: exit 2, the names listed (nothing run: no summary line) */
    CHECK(vg_test_run("./gradcheck nosuchop", out, sizeof out) == 2);
    CHECK(strstr(out, "no op name contains 'nosuchop'") && strstr(out, "  layernorm\n") && !strstr(out, "passed"));
    CHECK(vg_test_run("./gradcheck layernorm nosuchop", out, sizeof out) == 2);
    CHECK(vg_test_run("./gradcheck --frobnicate", out, sizeof out) == 2 && strstr(out, "--frobnicate"));
    /* a selection: the pass rule first, then a header whose columns line up with the rows */
    CHECK(vg_test_run("./gradcheck layernorm", out, sizeof out) == 0);
    CHECK(strstr(out, "eps 1e-06") && strstr(out, "atol 1e-05") && strstr(out, "rtol 0.001") && strstr(out, "2 passed, 0 failed"));
    const char *hdr = strstr(out, "\nop ");
    REQUIRE(hdr);
    hdr++;
    const char *row = strchr(hdr, '\n') + 1;
    const char *cols[] = {"variant", "inputs", "result"};
    const char *rowcols[] = {"affine", "(", "PASS"};
    for (int c = 0; c < 3; c++) {
        const char *h = strstr(hdr, cols[c]), *r = strstr(row, rowcols[c]);
        REQUIRE(h && r);
        CHECK_MSG(h - hdr == r - row, "column %s at %d in the header, %d in the row", cols[c], (int)(h - hdr), (int)(r - row));
    }
}
