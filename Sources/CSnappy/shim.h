#ifndef MIRROR_CSNAPPY_SHIM_H
#define MIRROR_CSNAPPY_SHIM_H
// Snappy (Debian libsnappy-dev), for Parquet pages compressed with SNAPPY: its C API, snappy_uncompressed_length and
// snappy_uncompress, both of which check their input.
#include <snappy-c.h>
#endif
