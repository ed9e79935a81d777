#ifndef MIRROR_CMALLOC_SHIM_H
#define MIRROR_CMALLOC_SHIM_H
// glibc's malloc_trim, which Swift's Glibc module does not import (<malloc.h> is not in it). Elsewhere (macOS, musl)
// the call does nothing and returns 0. (<stdlib.h> first: it is what defines __GLIBC__.)
#include <stdlib.h>
#if defined(__GLIBC__)
#include <malloc.h>

/// Gives the free pages of every arena back to the kernel; 1 if any were released.
static inline int mirror_malloc_trim(void) { return malloc_trim(0); }
#else
static inline int mirror_malloc_trim(void) { return 0; }
#endif

#endif
