#ifndef MIRROR_CLZ4_SHIM_H
#define MIRROR_CLZ4_SHIM_H
// LZ4 (Debian liblz4-dev), for Parquet pages compressed with LZ4_RAW (the block format) and the deprecated LZ4 (the
// same blocks in Hadoop's frames): LZ4_decompress_safe, which never writes past the buffer it is given.
#include <lz4.h>
#endif
