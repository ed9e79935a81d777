#ifndef MIRROR_CZSTD_SHIM_H
#define MIRROR_CZSTD_SHIM_H
// Zstandard (Debian libzstd-dev), for Parquet pages compressed with ZSTD: ZSTD_getFrameContentSize to check a frame's
// stated size before anything is allocated, ZSTD_decompress into a buffer of the page's size.
#include <zstd.h>
#endif
