/* LD_PRELOAD shim for PIMCOMP-NN, used by `pimdiff hunt --target pimcomp-nn`, and for the
 * PUMA compiler's driver (scripts/build-puma.sh builds it into each tree's lib/: crash frames,
 * and in the coverage tree the edge callback libpuma.so is linked against).
 *
 * 1. Pins time() to $PIMDIFF_PIN_TIME. Why: PIMCOMP-NN seeds rand() from time(NULL)
 *    (backend/ElementPipelineSchedule.cpp:213, backend/ElementPlacement.cpp:48,
 *    backend/GeneticAlgorithm.cpp:72), so one model can compile to different programs from one
 *    second to the next. The hunt derives the value from the case seed and records it in each
 *    finding, so every finding reproduces exactly. Unset: the real clock.
 * 2. On SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL: writes the backtrace to stderr as lines
 *    `PIMDIFF-FRAME <object> +0x<offset>[ exact]` (offsets relative to the object's load
 *    address, for addr2line), then dies of the same signal. The first line is the interrupted
 *    instruction, taken from the signal's context and marked `exact`; the others are return
 *    addresses already moved back by one byte into their call, so a reader symbolizes every
 *    offset as printed. Why: crashes are deduplicated by their top frames inside the
 *    compiler, and running every crash again under gdb would cost seconds each.
 *
 * 3. Edge coverage, for a binary built with -fsanitize-coverage=trace-pc
 *    (scripts/build-pimcomp.sh --coverage links it against this library, which defines the
 *    callback): every basic block entered marks the edge from the previous block (AFL's
 *    hash: block id xor the previous id shifted) in a byte map of PIMDIFF_EDGE_MAP_BYTES
 *    bytes, shared with the harness through the file $PIMDIFF_EDGE_MAP (mapped, not written
 *    at exit, so a crash keeps its edges). Block ids are offsets in the binary, so they do not
 *    depend on where it is loaded. Without the variable the edges land in a private map.
 *    When the binary was also built with gcov (--coverage), a crash dumps its line counts
 *    before dying (a normal exit writes them anyway). Block ids are offsets from the
 *    program's load address; for code in a shared library (PUMA's libpuma.so) they are stable
 *    when the library's place is, as in the PUMA hunt's runs with ASLR off.
 *
 * 4. With PIMDIFF_HUGE_BSS=1, asks for transparent huge pages (MADV_HUGEPAGE) over the
 *    program's zero-initialized data. Why: every compile zeroes a 200 MB static array
 *    (evaluation/ModelEvaluation.cpp, MVMUL_instruction_group_core) and, with 4 KiB pages,
 *    most of a compile's time is the kernel's 51,200 page faults for it; with 2 MiB pages they
 *    are 100. The memory's contents are the same (zeros), so the compile is the same.
 *
 * 5. With PIMDIFF_LAZY_ZERO=1, a memset to zero of at least LAZY_ZERO_MIN bytes gives the
 *    whole pages it covers back to the kernel (MADV_DONTNEED) instead of writing them, when
 *    they lie in private anonymous writable memory (checked in /proc/self/maps). Why: a
 *    compile zeroes 600 MB it mostly never uses (the static array above and two 200 MB
 *    std::vector<int> resizes, evaluation/ModelEvaluation.cpp), and faulting in and clearing
 *    those pages is nearly all of its time. For private anonymous memory MADV_DONTNEED is
 *    exact: the pages read back as zeros, exactly what memset would have left, and are only
 *    faulted in where the program touches them. Anything else (a file or shared mapping,
 *    locked pages, a refused madvise) takes the real memset.
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
#include <ucontext.h>
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

/* Must match EDGE_MAP_BYTES in engine/src/coverage/edge_map.rs. */
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

/* Below this a memset is written as usual: a madvise and a read of /proc/self/maps cost more
 * than zeroing a few pages. */
#define LAZY_ZERO_MIN (1u << 20)
#define PAGE 4096u

static int lazy_zero;
static void *(*real_memset)(void *, int, size_t);
static __thread int resolving;

static uintptr_t parse_hex(const char **s)
{
    uintptr_t v = 0;
    for (;; (*s)++) {
        char c = **s;
        if (c >= '0' && c <= '9')
            v = v * 16 + (uintptr_t)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v = v * 16 + (uintptr_t)(c - 'a' + 10);
        else
            return v;
    }
}

enum maps_verdict { MAPS_NO, MAPS_YES, MAPS_MORE };

/* One line of /proc/self/maps ("lo-hi rw-p offset 00:00 0 [name]") against the range still to
 * be covered, [*cursor, end). */
static enum maps_verdict judge_mapping(const char *l, uintptr_t *cursor, uintptr_t end)
{
    uintptr_t lo = parse_hex(&l);
    if (*l++ != '-')
        return MAPS_NO;
    uintptr_t hi = parse_hex(&l);
    if (*l++ != ' ')
        return MAPS_NO;
    if (hi <= *cursor)
        return MAPS_MORE; /* before the range */
    if (lo > *cursor)
        return MAPS_NO; /* a hole */
    if (l[0] != 'r' || l[1] != 'w' || l[3] != 'p' || l[4] != ' ')
        return MAPS_NO; /* not private and writable */
    l += 5;
    (void)parse_hex(&l); /* offset */
    if (l[0] != ' ' || l[1] != '0' || l[2] != '0' || l[3] != ':' || l[4] != '0' || l[5] != '0' ||
        l[6] != ' ' || l[7] != '0' || (l[8] != ' ' && l[8] != '\0'))
        return MAPS_NO; /* backed by a file (device and inode not 00:00 0) */
    *cursor = hi;
    return hi >= end ? MAPS_YES : MAPS_MORE;
}

/* Whether [start, end) is covered by private anonymous writable mappings, the memory where
 * MADV_DONTNEED leaves zero-fill pages. Reads the maps with a stack buffer: no allocation. */
static int private_anonymous(uintptr_t start, uintptr_t end)
{
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    char buf[4096];
    size_t have = 0;
    uintptr_t cursor = start;
    enum maps_verdict verdict = MAPS_MORE;
    int skipping = 0; /* inside the tail of a line longer than the buffer */
    while (verdict == MAPS_MORE) {
        ssize_t got = read(fd, buf + have, sizeof buf - 1 - have);
        if (got <= 0)
            break;
        have += (size_t)got;
        buf[have] = '\0';
        size_t pos = 0;
        char *nl;
        while (verdict == MAPS_MORE && (nl = memchr(buf + pos, '\n', have - pos)) != NULL) {
            *nl = '\0';
            if (!skipping)
                verdict = judge_mapping(buf + pos, &cursor, end);
            skipping = 0;
            pos = (size_t)(nl - buf) + 1;
        }
        memmove(buf, buf + pos, have - pos);
        have -= pos;
        if (verdict == MAPS_MORE && have == sizeof buf - 1) {
            /* A line longer than the buffer (a long file name): its fields are in the head. */
            if (!skipping)
                verdict = judge_mapping(buf, &cursor, end);
            skipping = 1;
            have = 0;
        }
    }
    close(fd);
    return verdict == MAPS_YES;
}

static void resolve_memset(void)
{
    resolving = 1;
    real_memset = (void *(*)(void *, int, size_t))dlsym(RTLD_NEXT, "memset");
    resolving = 0;
}

void *memset(void *p, int c, size_t n)
{
    if (real_memset == NULL) {
        if (resolving) { /* dlsym itself zeroing something: byte by byte */
            volatile unsigned char *b = p;
            for (size_t i = 0; i < n; i++)
                b[i] = (unsigned char)c;
            return p;
        }
        resolve_memset();
    }
    if (lazy_zero && c == 0 && n >= LAZY_ZERO_MIN) {
        uintptr_t s = ((uintptr_t)p + PAGE - 1) & ~(uintptr_t)(PAGE - 1);
        uintptr_t e = ((uintptr_t)p + n) & ~(uintptr_t)(PAGE - 1);
        if (e > s && private_anonymous(s, e) && madvise((void *)s, e - s, MADV_DONTNEED) == 0) {
            real_memset(p, 0, s - (uintptr_t)p);
            real_memset((void *)e, 0, (uintptr_t)p + n - e);
            return p;
        }
    }
    return real_memset(p, c, n);
}

/* The fortified spelling (_FORTIFY_SOURCE) of the same call. */
void *__memset_chk(void *p, int c, size_t n, size_t room)
{
    if (n > room) {
        void (*fail)(void) = (void (*)(void))dlsym(RTLD_NEXT, "__chk_fail");
        if (fail != NULL)
            fail();
        abort();
    }
    return memset(p, c, n);
}

/* The program counter of the interrupted instruction, from the signal's context: the faulting
 * instruction itself for a fault (SIGSEGV, SIGBUS, SIGFPE, SIGILL), the instruction after the
 * system call for a signal sent by a call (abort's SIGABRT). 0 where the architecture is not
 * known here. */
static uintptr_t interrupted_pc(const void *context)
{
    const ucontext_t *uc = context;
    if (uc == NULL)
        return 0;
#if defined(__x86_64__)
    return (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__i386__)
    return (uintptr_t)uc->uc_mcontext.gregs[REG_EIP];
#elif defined(__aarch64__)
    return (uintptr_t)uc->uc_mcontext.pc;
#else
    return 0;
#endif
}

/* One `PIMDIFF-FRAME <object> +0x<offset>[ exact]` line: `exact` marks the interrupted
 * instruction's own address; the others are return addresses moved back by one byte, into the
 * call instruction (a return address is the instruction after the call, which may be the next
 * line or, after a call that does not return, the next function). A reader that does not know
 * the mark sees the offset as the first word after `+`. */
static void write_frame(uintptr_t address, int exact)
{
    Dl_info info;
    char line[4200];
    if (!dladdr((void *)address, &info) || info.dli_fname == NULL)
        return;
    unsigned long off = (unsigned long)(address - (uintptr_t)info.dli_fbase);
    if (!exact && off > 0)
        off -= 1;
    int len = snprintf(line, sizeof line, "PIMDIFF-FRAME %s +0x%lx%s\n", info.dli_fname, off,
                       exact ? " exact" : "");
    if (len > 0)
        (void)!write(2, line, (size_t)len < sizeof line ? (size_t)len : sizeof line - 1);
}

/* Writes the crash's frames to stderr: the interrupted instruction from the signal's context
 * (marked exact), then the return addresses of its callers. Why not backtrace()'s frames
 * alone: the unwinder reports the interrupted frame at its exact address, among return
 * addresses that need moving back by one, and which of its frames that is cannot be told from
 * the list; moving it back too put a fault on a function's first instruction into the function
 * before it. The unwinder's walk is still needed for the callers; the interrupted frame is
 * found in it by its address, and only the frames after it are printed. */
static void on_fatal(int sig, siginfo_t *si, void *context)
{
    (void)si;
    void *frames[64];
    int n = backtrace(frames, 64);
    uintptr_t pc = interrupted_pc(context);
    int from = 1; /* frame 0 is this handler */
    if (pc != 0) {
        write_frame(pc, 1);
        for (int i = 0; i < n; i++) {
            if ((uintptr_t)frames[i] == pc) {
                from = i + 1;
                break;
            }
        }
    }
    for (int i = from; i < n; i++)
        write_frame((uintptr_t)frames[i], 0);
    void (*gcov_dump)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "__gcov_dump");
    if (gcov_dump == NULL) /* hidden by libgcov; a PUMA coverage driver exports it so */
        gcov_dump = (void (*)(void))dlsym(RTLD_DEFAULT, "pimdiff_gcov_dump");
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
        sa.sa_sigaction = on_fatal;
        sa.sa_flags = SA_SIGINFO | SA_RESETHAND | SA_ONSTACK;
        sigaction(sigs[i], &sa, NULL);
    }
    static char altstack[65536];
    stack_t ss = {.ss_sp = altstack, .ss_size = sizeof altstack, .ss_flags = 0};
    sigaltstack(&ss, NULL);
    pimdiff_map_edges();
    const char *huge = getenv("PIMDIFF_HUGE_BSS");
    if (huge != NULL && strcmp(huge, "1") == 0)
        dl_iterate_phdr(program_bss, NULL);
    const char *lazy = getenv("PIMDIFF_LAZY_ZERO");
    lazy_zero = lazy != NULL && strcmp(lazy, "1") == 0;
}
