#ifndef MIRROR_CIMAGELIBRARIES_SHIM_H
#define MIRROR_CIMAGELIBRARIES_SHIM_H
// The codecs' own headers, for tests and test servers that make and read images (TurboJPEG, libpng, libwebp, giflib):
// what a host would serve, crafted files among it. mirror itself reaches them only through CCodecs.
#include <gif_lib.h>
#include <png.h>
#include <turbojpeg.h>
#include <webp/decode.h>
#include <webp/encode.h>
#include <webp/mux.h>
#endif
