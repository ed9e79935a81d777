// PNG through libpng's simplified API (Debian's libpng 1.6), which reads row by row into mirror's buffer: libpng's own
// memory is a few rows, whatever the image's size.
//
// A 16-bit PNG without gAMA, sRGB, cHRM or iCCP is read as sRGB-coded, as browsers and Pillow show it: the simplified
// API's default takes such samples as linear light, and a 16-bit photo came out far brighter (mean 178 against 122).
#include "internal.h"
#include <png.h>
#include <stdlib.h>
#include <string.h>

static uint32_t mc_be32(const unsigned char *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }

int mc_png_read_header(const unsigned char *data, size_t length, struct mc_png_header *header, struct mc_error *error) {
    static const unsigned char signature[8] = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};
    memset(header, 0, sizeof *header);
    if (length < 33 || memcmp(data, signature, 8) != 0 || memcmp(data + 12, "IHDR", 4) != 0)
        return mc_fail(error, MIRROR_CODECS_MALFORMED, "not a PNG (no IHDR chunk first)");
    uint32_t width = mc_be32(data + 16), height = mc_be32(data + 20);
    if (width < 1 || height < 1 || width > 0x7FFFFFFF || height > 0x7FFFFFFF)
        return mc_fail(error, MIRROR_CODECS_MALFORMED, "the PNG declares %u x %u pixels", width, height);
    header->width = (int)width;
    header->height = (int)height;
    header->bit_depth = data[24];
    header->color_type = data[25];
    header->interlaced = data[28] != 0;
    return 0;
}

/// Decodes to RGBA when `keep_alpha` and the image has alpha; otherwise to RGB, or to grey when `grey_stays` and the
/// image has no colour; alpha that goes is composited onto white.
static int mc_png_read(const unsigned char *input, size_t length, bool keep_alpha, bool grey_stays, struct mc_pixels *pixels,
                       struct mc_error *error) {
    png_image image;
    memset(&image, 0, sizeof image);
    image.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_memory(&image, input, length))
        return mc_fail(error, MIRROR_CODECS_MALFORMED, "the PNG does not decode: %s", image.message);
    image.flags |= PNG_IMAGE_FLAG_16BIT_sRGB;
    int alpha = keep_alpha && (image.format & PNG_FORMAT_FLAG_ALPHA);
    int grey = grey_stays && !(image.format & PNG_FORMAT_FLAG_COLOR);
    image.format = alpha ? PNG_FORMAT_RGBA : grey ? PNG_FORMAT_GRAY : PNG_FORMAT_RGB;
    int status = mc_allocate(pixels, (int)image.width, (int)image.height, alpha ? 4 : grey ? 1 : 3, error);
    if (status != 0) {
        png_image_free(&image);
        return status;
    }
    png_color white = {255, 255, 255};  // what transparency is composited onto when alpha goes
    if (!png_image_finish_read(&image, &white, pixels->data, 0, NULL)) {
        status = mc_fail(error, MIRROR_CODECS_MALFORMED, "the PNG does not decode: %s", image.message);
        mc_pixels_free(pixels);
        png_image_free(&image);
    }
    return status;
}

int mc_png_decode(const unsigned char *input, size_t length, bool keep_alpha, struct mc_pixels *pixels, struct mc_error *error) {
    return mc_png_read(input, length, keep_alpha, false, pixels, error);
}

int mc_png_decode_luma(const unsigned char *input, size_t length, struct mc_pixels *pixels, struct mc_error *error) {
    return mc_png_read(input, length, false, true, pixels, error);
}
