#ifndef MIRROR_CODECS_TESTING_H
#define MIRROR_CODECS_TESTING_H
// Entry points of the codecs that only the tests call: the sweeps over every geometry the transform can ask for, and
// the EXIF reader on its own. They live in CCodecs (they run its internals) and are declared here, in a target only
// the test targets depend on, so that `import CCodecs` is the resize path and nothing else.
#include <stddef.h>

/// The EXIF orientation (1-8) of a JPEG, from its APP1 segment; 1 when it has none or it cannot be read.
int mirror_codecs_jpeg_orientation(const unsigned char *data, size_t length);

/// Runs the resampler on every one-dimensional resample from `first_in`-`last_in` to 1-`max_out` pixels, across a row
/// and down a column. Returns how many it refused (the first in `message`).
long mirror_codecs_sweep_resampler(int first_in, int last_in, int max_out, char *message, size_t capacity);

/// Computes the transform's geometry for every source of `first_width`-`last_width` × 1-`max_height` pixels, every
/// fit (a stretch from square sources only: it scales each axis alone), every size from 1 to `max_size`, with and
/// without only-if-bigger: as packed pixels (the RGB path) and as the
/// JPEG planes of every subsampling decoded at that size (every size, not only those a DCT scale gives). Counts the
/// geometries that crop outside their image or plane, miss the box, or ask the resampler for anything outside
/// 1-`max_in` to 1-`max_out` pixels (`geometries` says how many were computed). Returns the failures (the first in
/// `message`).
long mirror_codecs_sweep_geometry(int first_width, int last_width, int max_height, int max_size, int max_in, int max_out,
                                  long *geometries, char *message, size_t capacity);

#endif
