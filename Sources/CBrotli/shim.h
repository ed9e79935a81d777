#ifndef MIRROR_CBROTLI_SHIM_H
#define MIRROR_CBROTLI_SHIM_H
// Brotli's decoder (Debian libbrotli-dev), for Parquet pages compressed with BROTLI: BrotliDecoderDecompress, one call
// into a buffer of the page's size, which fails rather than write past it.
#include <brotli/decode.h>
#endif
