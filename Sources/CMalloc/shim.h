#ifndef MIRROR_CMALLOC_SHIM_H
#define MIRROR_CMALLOC_SHIM_H
// glibc's allocator settings, which Swift's Glibc module does not import (<malloc.h> is not in it). Elsewhere (macOS,
// musl) both calls do nothing and return 0. (<stdlib.h> first: it is what defines __GLIBC__.)
#include <stdlib.h>
#if defined(__GLIBC__)
#include <malloc.h>

/// At most `count` malloc arenas (glibc's default is 8 per core, each keeping the pages its threads freed).
static inline int mirror_malloc_limit_arenas(int count) { return mallopt(M_ARENA_MAX, count); }

/// Gives the free pages of every arena back to the kernel; 1 if any were released.
static inline int mirror_malloc_trim(void) { return malloc_trim(0); }
#else
static inline int mirror_malloc_limit_arenas(int count) { (void)count; return 0; }
static inline int mirror_malloc_trim(void) { return 0; }
#endif

#endif
