/* fault.h — fault injection for the tests: named faults that make the program fail at one chosen
 * moment (a crash before a rename, a SIGKILL inside a checkpoint write, a NaN loss), so the tests
 * can show that every such moment is survived.
 *
 * One environment variable switches them on, read once per process:
 *     VG_FAULT=name[=N][,name[=N]...]      e.g. VG_FAULT=kill_in_checkpoint=3
 * vg_fault("name") is N (1 when "=N" is left out) if VG_FAULT names it, else 0.
 *
 * The hooks exist only in builds compiled with -DVG_FAULTS (the Makefile's test builds:
 * build/run_tests and build/train-faults). Elsewhere vg_fault is the constant 0, so every hook
 * site compiles away and ./train has no way to be told to fail. */
#ifndef VG_FAULT_H
#define VG_FAULT_H

#ifdef VG_FAULTS
long vg_fault(const char *name);
/* for tests that call the library in their own process: from now on vg_fault(name) is value
 * (0: off), whatever VG_FAULT says */
void vg_fault_set(const char *name, long value);
#else
static inline long vg_fault(const char *name) { (void)name; return 0; }
#endif
#endif
