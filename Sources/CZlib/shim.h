#ifndef MIRROR_CZLIB_SHIM_H
#define MIRROR_CZLIB_SHIM_H
// zlib (Debian zlib1g-dev; already linked by libcurl and libpng), for reading gzip tables. inflateInit2 is a macro,
// which Swift cannot call: this wrapper is the one line it needs.
#include <zlib.h>

/// Starts inflating a gzip member (windowBits 15 + 16: gzip's header and trailer, its CRC-32 and length checked).
static inline int mirror_inflate_init_gzip(z_stream *stream) {
    return inflateInit2(stream, 15 + 16);
}
#endif
