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
 * 3. Edge coverage, for a binary built with -fsanitize-coverage=trace-pc
 *    (scripts/build-pimcomp.sh --coverage links it against this library, which defines the
 *    callback): every basic block entered marks the edge from the previous block (AFL's
 *    hash: block id xor the previous id shifted) in a byte map of PIMDIFF_EDGE_MAP_BYTES
 *    bytes, shared with the harness through the file $PIMDIFF_EDGE_MAP (mapped, not written
 *    at exit, so a crash keeps its edges). Block ids are offsets in the binary, so they do not
 *    depend on where it is loaded. Without the variable the edges land in a private map.
 *    When the binary was also built with gcov (--coverage), a crash dumps its line counts
 *    before dying (a normal exit writes them anyway).
 *
 * 4. With PIMDIFF_HUGE_BSS=1, asks for transparent huge pages (MADV_HUGEPAGE) over the
 *    program's zero-initialized data. Why: every compile zeroes a 200 MB static array
 *    (evaluation/ModelEvaluation.cpp, MVMUL_instruction_group_core) and, with 4 KiB pages,
 *    most of a compile's time is the kernel's 51,200 page faults for it; with 2 MiB pages they
 *    are 100. The memory's contents are the same (zeros), so the compile is the same.
 *
 * Built by scripts/build-pimcomp.sh as libpimdiff-shim.so beside the binary.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <sys/mman.h>
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

/* Must match EDGE_MAP_BYTES in src/coverage/edges.rs. */
#define PIMDIFF_EDGE_MAP_BYTES 65536u

static unsigned char private_map[PIMDIFF_EDGE_MAP_BYTES];
static unsigned char *edge_map = private_map;
static __thread uintptr_t previous_block;
static uintptr_t load_base;

/* The callback GCC's -fsanitize-coverage=trace-pc inserts at the start of every basic block. */
__attribute__((no_sanitize_coverage)) void __sanitizer_cov_trace_pc(void)
{
    uintptr_t pc = (uintptr_t)__builtin_return_address(0) - load_base;
    uintptr_t block = (uintptr_t)((pc * 0x9E3779B97F4A7C15ull) >> 48) & (PIMDIFF_EDGE_MAP_BYTES - 1);
    edge_map[block ^ previous_block] = 1;
    previous_block = block >> 1;
}

static int first_object(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    *(uintptr_t *)data = (uintptr_t)info->dlpi_addr;
    return 1; /* the first object is the program itself */
}

/* Maps $PIMDIFF_EDGE_MAP (a file of PIMDIFF_EDGE_MAP_BYTES bytes) as the edge map. Called at
 * start-up and, in a fork server, by each forked child for its own case. */
void pimdiff_map_edges(void)
{
    dl_iterate_phdr(first_object, &load_base);
    const char *path = getenv("PIMDIFF_EDGE_MAP");
    if (path == NULL || *path == '\0')
        return;
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return;
    void *m = mmap(NULL, PIMDIFF_EDGE_MAP_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (m != MAP_FAILED) {
        edge_map = m;
        previous_block = 0;
    }
}

static int program_bss(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    (void)data;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_W) || ph->p_memsz <= ph->p_filesz)
            continue;
        const uintptr_t huge = 2u << 20;
        uintptr_t start = info->dlpi_addr + ph->p_vaddr + ph->p_filesz;
        uintptr_t end = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
        start = (start + huge - 1) & ~(huge - 1);
        end &= ~(huge - 1);
        if (end > start)
            madvise((void *)start, end - start, MADV_HUGEPAGE);
    }
    return 1; /* the first object is the program itself */
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
    void (*gcov_dump)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "__gcov_dump");
    if (gcov_dump != NULL)
        gcov_dump();
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
    pimdiff_map_edges();
    const char *huge = getenv("PIMDIFF_HUGE_BSS");
    if (huge != NULL && strcmp(huge, "1") == 0)
        dl_iterate_phdr(program_bss, NULL);
}
