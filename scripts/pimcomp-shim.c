/* LD_PRELOAD shim for PIMCOMP-NN, used by `pimdiff hunt --target pimcomp-nn`.
 *
 * 1. Pins time() to $PIMDIFF_PIN_TIME. Why: PIMCOMP-NN seeds rand() from time(NULL)
 *    (backend/ElementPipelineSchedule.cpp:213, backend/ElementPlacement.cpp:48,
 *    backend/GeneticAlgorithm.cpp:72), so one model can compile to different programs from one
 *    second to the next. The hunt derives the value from the case seed and records it in each
 *    finding, so every finding reproduces exactly. Unset: the real clock.
 * 2. On SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL: writes the backtrace to stderr as lines
 *    `PIMDIFF-FRAME <object> +0x<offset>` (offsets relative to the object's load address, for
 *    addr2line), then dies of the same signal. Why: crashes are deduplicated by their top frames
 *    inside PIMCOMP-NN, and running every crash again under gdb would cost seconds each.
 *
 * Built by scripts/build-pimcomp.sh as libpimdiff-shim.so beside the binary.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

time_t time(time_t *out)
{
    const char *pinned = getenv("PIMDIFF_PIN_TIME");
    time_t t;
    if (pinned != NULL && *pinned != '\0') {
        t = (time_t)strtoll(pinned, NULL, 10);
    } else {
        time_t (*real)(time_t *) = (time_t (*)(time_t *))dlsym(RTLD_NEXT, "time");
        t = real != NULL ? real(NULL) : (time_t)0;
    }
    if (out != NULL)
        *out = t;
    return t;
}

static void on_fatal(int sig)
{
    void *frames[64];
    char line[4200];
    int n = backtrace(frames, 64);
    for (int i = 0; i < n; i++) {
        Dl_info info;
        if (dladdr(frames[i], &info) && info.dli_fname != NULL) {
            /* Return addresses point after the call: -1 lands inside the calling line. */
            unsigned long off = (unsigned long)((char *)frames[i] - (char *)info.dli_fbase);
            if (i > 0 && off > 0)
                off -= 1;
            int len = snprintf(line, sizeof line, "PIMDIFF-FRAME %s +0x%lx\n", info.dli_fname, off);
            if (len > 0)
                (void)!write(2, line, (size_t)len < sizeof line ? (size_t)len : sizeof line - 1);
        }
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

__attribute__((constructor)) static void install(void)
{
    void *warm[1];
    backtrace(warm, 1); /* loads libgcc_s now, not inside the handler */
    int sigs[] = {SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_fatal;
        sa.sa_flags = SA_RESETHAND | SA_ONSTACK;
        sigaction(sigs[i], &sa, NULL);
    }
    static char altstack[65536];
    stack_t ss = {.ss_sp = altstack, .ss_size = sizeof altstack, .ss_flags = 0};
    sigaltstack(&ss, NULL);
}
