#ifndef MIRROR_CSYSCALLS_SHIM_H
#define MIRROR_CSYSCALLS_SHIM_H
// glibc calls that Swift's Glibc module does not import: malloc_trim (<malloc.h> is not in it), renameat2 and syncfs
// (they need _GNU_SOURCE), prctl (variadic). Elsewhere (macOS, musl) each has a fallback. (<stdlib.h> first: it is what defines __GLIBC__.)
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>
#if defined(__GLIBC__)
#include <malloc.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

/// Names the calling thread as the kernel shows it (`/proc/self/task/*/comm`, `top -H`, `perf`): the first 15 bytes of
/// `name`. Foundation's `Thread.name` on Linux does not reach the kernel when set before the thread starts.
static inline void mirror_name_this_thread(const char *name) { (void)prctl(PR_SET_NAME, name, 0, 0, 0); }

/// Gives the free pages of every arena back to the kernel; 1 if any were released.
static inline int mirror_malloc_trim(void) { return malloc_trim(0); }

/// Renames `from` to `to` unless `to` exists (`renameat2` with `RENAME_NOREPLACE`, one atomic step): 0, or -1 with
/// errno (`EEXIST` when `to` exists; `EINVAL` or `ENOSYS` where the kernel or the file system cannot).
static inline int mirror_rename_noreplace(const char *from, const char *to) {
#if defined(SYS_renameat2)
    return (int)syscall(SYS_renameat2, -100 /* AT_FDCWD */, from, -100, to, 1u /* RENAME_NOREPLACE */);
#else
    errno = ENOSYS;
    return -1;
#endif
}

/// Writes back and flushes everything of the file system that holds `descriptor` (`syncfs(2)`): 0, or -1 with errno
/// (a write-back error since the file system was opened, since Linux 5.8).
static inline int mirror_syncfs(int descriptor) {
#if defined(SYS_syncfs)
    return (int)syscall(SYS_syncfs, descriptor);
#else
    (void)descriptor;
    errno = ENOSYS;
    return -1;
#endif
}
#else
static inline int mirror_malloc_trim(void) { return 0; }
static inline void mirror_name_this_thread(const char *name) { (void)name; }
static inline int mirror_syncfs(int descriptor) {
    (void)descriptor;
    errno = ENOSYS;
    return -1;
}
static inline int mirror_rename_noreplace(const char *from, const char *to) {
    (void)from; (void)to;
    errno = ENOSYS;
    return -1;
}
#endif

#endif
