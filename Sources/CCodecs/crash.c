// Naming the image a decoder crashed on. DecodeJournal marks every image while it is decoded; when the process dies
// with several marked, the next run cannot tell which one did it, nor whether a decoder did it at all (a SIGKILL from
// outside leaves the same marks). So a thread that arms its mark here, and then dies of a fault or an abort before it
// disarms it, writes one byte into its own slot first: the culprit's flag. The write is one pwrite, which is
// async-signal-safe; then the signal goes on to whichever handler was there before (the Swift runtime's backtracer, or
// the default), so the process dies as it would have.
#include "mirror_codecs.h"
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

static const int mc_crash_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
#define MC_CRASH_SIGNALS (sizeof mc_crash_signals / sizeof mc_crash_signals[0])

static struct sigaction mc_previous[MC_CRASH_SIGNALS];  // written once, under mc_crash_once, before any handler runs
static pthread_once_t mc_crash_once = PTHREAD_ONCE_INIT;

// The armed mark of this thread: where to write which byte (descriptor -1: none).
static _Thread_local int mc_mark_descriptor = -1;
static _Thread_local long long mc_mark_offset;
static _Thread_local unsigned char mc_mark_byte;

static void mc_crash_handler(int signal_number, siginfo_t *info, void *context) {
    (void)context;
    if (mc_mark_descriptor >= 0) {
        ssize_t written = pwrite(mc_mark_descriptor, &mc_mark_byte, 1, (off_t)mc_mark_offset);
        (void)written;  // nothing more can be done for the mark from here
        mc_mark_descriptor = -1;
    }
    // Hand the signal on to the handler before ours. A fault happens again when this handler returns, and reaches it
    // with the kernel's own description of the fault (what the Swift runtime's backtracer prints); a signal sent by
    // raise or abort (si_code ≤ 0) does not, so it is raised again, blocked until this handler returns.
    for (size_t index = 0; index < MC_CRASH_SIGNALS; index++) {
        if (mc_crash_signals[index] == signal_number) sigaction(signal_number, &mc_previous[index], NULL);
    }
    if (!info || info->si_code <= 0) raise(signal_number);
}

static void mc_crash_install(void) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = mc_crash_handler;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    for (size_t index = 0; index < MC_CRASH_SIGNALS; index++) sigaction(mc_crash_signals[index], &action, &mc_previous[index]);
}

void mirror_codecs_arm_crash_mark(int descriptor, long long offset, unsigned char byte) {
    pthread_once(&mc_crash_once, mc_crash_install);
    mc_mark_offset = offset;
    mc_mark_byte = byte;
    mc_mark_descriptor = descriptor;
}

void mirror_codecs_disarm_crash_mark(void) { mc_mark_descriptor = -1; }
