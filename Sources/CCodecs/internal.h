#ifndef MIRROR_CODECS_INTERNAL_H
#define MIRROR_CODECS_INTERNAL_H
// What the files of this target share. Sizes and offsets are size_t, and every product or sum that could pass
// SIZE_MAX goes through the checked helpers below: an image's header is the attacker's, and a wrapped size is a short
// allocation followed by a long write.
#include "mirror_codecs.h"
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/// Decoded pixels, 8 bits a sample, rows packed: 1 channel (grey), 3 (RGB) or 4 (RGBA, straight alpha).
struct mc_pixels {
    unsigned char *data;
    int width, height, channels;
};

/// Where the reason goes, with its capacity.
struct mc_error {
    char *text;
    size_t capacity;
};

/// Returned inside the target by a step that does not take the image, so that the next path must (the planes path leaves
/// it to the RGB path, TurboJPEG to libvips): not a failure, and never a status of `mirror_codecs.h`, whose functions
/// take the next path themselves.
#define MC_DECLINED (-1)

/// Writes a reason (printf-style) and returns `status`, so that a failure is one line: `return mc_fail(e, ...);`.
int mc_fail(struct mc_error *error, int status, const char *format, ...) __attribute__((format(printf, 3, 4)));

// MARK: Checked arithmetic

/// a × b, or SIZE_MAX when it does not fit (SIZE_MAX is never a size any limit admits).
static inline size_t mc_mul(size_t a, size_t b) {
    size_t product;
    return __builtin_mul_overflow(a, b, &product) ? SIZE_MAX : product;
}

/// a + b, or SIZE_MAX when it does not fit.
static inline size_t mc_add(size_t a, size_t b) {
    size_t sum;
    return __builtin_add_overflow(a, b, &sum) ? SIZE_MAX : sum;
}

/// width × height × channels, or SIZE_MAX; 0 for a non-positive side.
static inline size_t mc_image_bytes(long width, long height, long channels) {
    if (width < 1 || height < 1 || channels < 1) return 0;
    return mc_mul(mc_mul((size_t)width, (size_t)height), (size_t)channels);
}

/// Where the stored pixel (x, y) of a `width` x `height` image goes when it is turned upright as EXIF `orientation`
/// (2-8; 1 is upright already and not asked for) says.
static inline void mc_oriented(int orientation, int x, int y, int width, int height, int *nx, int *ny) {
    switch (orientation) {
    case 2: *nx = width - 1 - x; *ny = y; break;
    case 3: *nx = width - 1 - x; *ny = height - 1 - y; break;
    case 4: *nx = x; *ny = height - 1 - y; break;
    case 5: *nx = y; *ny = x; break;
    case 6: *nx = height - 1 - y; *ny = x; break;
    case 7: *nx = height - 1 - y; *ny = width - 1 - x; break;
    default: *nx = y; *ny = width - 1 - x; break;  // 8
    }
}

/// Allocates `width` × `height` × `channels` bytes; FAILED when it cannot (the estimate has admitted the size already).
int mc_allocate(struct mc_pixels *pixels, int width, int height, int channels, struct mc_error *error);
void mc_pixels_free(struct mc_pixels *pixels);

// MARK: Geometry (resample.c)

/// The scale (≤ 1) at which an image of `width` × `height` still covers what `fit` needs of `size`.
double mc_needed_scale(int width, int height, enum mirror_codecs_fit fit, int size);

/// Where a fit takes its pixels from and puts them: the crop of the source, the resampled size, and the canvas (larger
/// than the resampled image only for a pad).
struct mc_geometry {
    int crop_x, crop_y, crop_width, crop_height;
    int out_width, out_height;
    int final_width, final_height;
    int scaled_width, scaled_height;  // the whole image at the fit's scale, before a crop or a pad (where a blur runs)
};

struct mc_geometry mc_geometry_of(int width, int height, enum mirror_codecs_fit fit, int size, bool only_if_bigger);

/// Resamples `in_width` × `in_height` pixels (rows `in_stride` bytes apart, `channels` interleaved; alpha, if any,
/// last) into `out_width` × `out_height` (rows `out_stride` apart). Catmull-Rom, clamped edges, in the image's own
/// gamma as Pillow does. Returns 0, or FAILED when the resampler refuses (its assertions are errors here).
int mc_resample(const unsigned char *in, int in_width, int in_height, size_t in_stride, unsigned char *out, int out_width,
                int out_height, size_t out_stride, int channels, struct mc_error *error);

/// Crops, resamples and pads `pixels` as the request's fit asks (the pad in its `pad_color`).
int mc_fit(struct mc_pixels *pixels, const struct mirror_codecs_request *request, struct mc_error *error);

/// As mc_fit, with the request's boxes blurred in between, in img2dataset's order: the whole image resized, blurred,
/// then cropped or padded (so that the blur near a crop's edge sees what lies beyond it). The boxes are in the stored
/// image's orientation, and `orientation` says how `pixels` were turned upright from it; `*blurred` says how many boxes
/// had pixels to blur.
int mc_fit_blurred(struct mc_pixels *pixels, const struct mirror_codecs_request *request, int orientation, int *blurred, struct mc_error *error);

/// What mc_fit_blurred takes besides the decoded pixels of `width` × `height` × `channels` (the resized whole image,
/// the resampler's and the blur's working memory, the cropped or padded result), in place of what mc_fit takes.
size_t mc_fit_blurred_memory(int width, int height, int channels, const struct mirror_codecs_request *request);

/// Whether a request asks for boxes to be blurred.
static inline bool mc_blurs(const struct mirror_codecs_request *request) { return request->blur_boxes && request->blur_box_count > 0; }

// MARK: Blur (blur.c)

/// Blurs `count` boxes of `pixels` in place as img2dataset's BoundingBoxBlurrer does (blur.c); `*blurred` says how many
/// had pixels in the image. FAILED for more than MIRROR_CODECS_MAX_BLUR_BOXES boxes or a coordinate that is not finite.
int mc_blur(struct mc_pixels *pixels, const struct mirror_codecs_box *boxes, int count, int orientation, int *blurred, struct mc_error *error);

/// The most mc_blur takes for an image of `width` × `height`, whatever its boxes and channels.
size_t mc_blur_memory(int width, int height);

/// Bytes a resample of `in_width` × … into `out_width` × … takes besides its input and output (stb's working memory).
size_t mc_resample_memory(int in_width, int in_height, int out_width, int out_height, int channels);

// MARK: Formats

/// What a JPEG's headers say, read by walking its markers to the first scan (jpeg.c).
struct mc_jpeg_header {
    int width, height, components;
    int progressive;        // SOF2, SOF6, SOF10, SOF14
    int multi_scan;         // libjpeg keeps the whole image's coefficients: progressive, or a first scan of fewer components
    int adobe_transform;    // the APP14 Adobe transform flag, or -1
    int orientation;        // EXIF, 1-8
    int h[4], v[4];         // sampling factors
    int max_h, max_v;
};

int mc_jpeg_read_header(const unsigned char *data, size_t length, struct mc_jpeg_header *header, struct mc_error *error);
/// Bytes libjpeg itself takes to decode the image at any scale: the whole image's coefficients when it has several
/// scans (2 bytes a coefficient, 64 a block, every block of every component), and a few rows of blocks otherwise.
size_t mc_jpeg_decoder_memory(const struct mc_jpeg_header *header);

/// The size a JPEG decodes to at the smallest DCT scale that still covers what `fit` needs of `size`.
void mc_jpeg_scaled_size(int width, int height, enum mirror_codecs_fit fit, int size, int *scaled_width, int *scaled_height);

int mc_jpeg_decode(const unsigned char *input, size_t length, const struct mc_jpeg_header *header, enum mirror_codecs_fit fit, int size,
                   struct mc_pixels *pixels, struct mc_error *error);
/// Grey at the smallest DCT scale that keeps `side` pixels on the shorter side, not turned upright (the hash turns its
/// grid); returns 0, MALFORMED, FAILED, or MC_DECLINED (libvips takes it).
int mc_jpeg_decode_luma(const unsigned char *input, size_t length, const struct mc_jpeg_header *header, int side, struct mc_pixels *pixels,
                        struct mc_error *error);
/// JPEG to JPEG without leaving YCbCr (see jpeg.c); returns 0, MALFORMED, FAILED, or MC_DECLINED (the RGB path takes it).
int mc_jpeg_planes(const unsigned char *input, size_t length, const struct mc_jpeg_header *header,
                   const struct mirror_codecs_request *request, struct mirror_codecs_output *output, struct mc_error *error);
/// One plane's crop and resample in the planes path: `in_*` within the decoded plane of `plane_width` × `plane_height`
/// samples, resampled to `out_width` × `out_height` in an output plane of `out_plane_width` × `out_plane_height`.
struct mc_plane_resample {
    int plane_width, plane_height;
    int in_x, in_y, in_width, in_height;
    int out_width, out_height;
    int out_plane_width, out_plane_height;
};

/// The planes path's geometry for a JPEG decoded at `width` × `height` with TurboJPEG's `subsampling`.
struct mc_planes_geometry {
    int count;               // 1 (grey) or 3
    int out_subsampling;     // TJSAMP_420, or TJSAMP_GRAY
    int out_width, out_height;
    struct mc_plane_resample plane[3];
};

/// The planes of a JPEG decoded at `width` × `height` with TurboJPEG's `subsampling`, fitted as `g` (its geometry as
/// packed pixels) says. Returns false for a subsampling the planes path does not take.
bool mc_planes_geometry_of(int width, int height, int subsampling, const struct mc_geometry *g, struct mc_planes_geometry *planes);
/// Whether mc_planes_geometry_of's plane sizes are TurboJPEG's for an image `length` pixels across and down.
int mc_plane_length_matches_turbojpeg(int length);

/// Bytes the planes path takes besides libjpeg's own: the decoded planes and the resampled ones.
size_t mc_jpeg_planes_memory(const struct mc_jpeg_header *header, int subsampling, enum mirror_codecs_fit fit, int size, bool only_if_bigger);

struct mc_png_header {
    int width, height, bit_depth, color_type, interlaced;
};
int mc_png_read_header(const unsigned char *data, size_t length, struct mc_png_header *header, struct mc_error *error);
int mc_png_decode(const unsigned char *input, size_t length, bool keep_alpha, struct mc_pixels *pixels, struct mc_error *error);
/// Grey when the PNG has no colour, RGB otherwise; alpha onto white.
int mc_png_decode_luma(const unsigned char *input, size_t length, struct mc_pixels *pixels, struct mc_error *error);

struct mc_webp_header {
    int width, height, has_alpha, has_animation, lossless;
};
int mc_webp_read_header(const unsigned char *data, size_t length, struct mc_webp_header *header, struct mc_error *error);
size_t mc_webp_decoder_memory(const struct mc_webp_header *header);
void mc_webp_scaled_size(const struct mc_webp_header *header, enum mirror_codecs_fit fit, int size, int *scaled_width, int *scaled_height);
int mc_webp_decode(const unsigned char *input, size_t length, const struct mc_webp_header *header, enum mirror_codecs_fit fit, int size,
                   bool keep_alpha, struct mc_pixels *pixels, struct mc_error *error);
/// The luma plane (full range, alpha onto white) at the smallest scale that keeps `side` pixels on the shorter side.
int mc_webp_decode_luma(const unsigned char *input, size_t length, const struct mc_webp_header *header, int side, struct mc_pixels *pixels,
                        struct mc_error *error);

struct mc_gif_header {
    int width, height;      // the logical screen (the first frame's size when the screen is 0 × 0)
};
int mc_gif_read_header(const unsigned char *data, size_t length, struct mc_gif_header *header, struct mc_error *error);
int mc_gif_decode(const unsigned char *input, size_t length, bool keep_alpha, struct mc_pixels *pixels, struct mc_error *error);
/// The first frame as luma on white.
int mc_gif_decode_luma(const unsigned char *input, size_t length, struct mc_pixels *pixels, struct mc_error *error);

/// Encodes `pixels` as JPEG, PNG or WebP into `output` (a buffer from malloc).
int mc_encode(const struct mc_pixels *pixels, enum mirror_codecs_format format, int quality, struct mirror_codecs_output *output,
              struct mc_error *error);
/// The most an encoder takes for an image of `width` × `height` × `channels` (its buffers and the result).
size_t mc_encode_memory(int width, int height, int channels);

// MARK: libvips (vips.c)

struct mc_vips_header {
    int width, height, bands, band_bytes;
};
int mc_vips_read_header(const unsigned char *input, size_t length, struct mc_vips_header *header, struct mc_error *error);
int mc_vips_transform(const unsigned char *input, size_t length, const struct mirror_codecs_request *request,
                      struct mirror_codecs_output *output, struct mc_error *error);
/// Whether libvips alone makes what `request` asks (its thumbnail: no resize, the longer side, a centre crop), rather
/// than decoding the image whole for the codecs' C to fit (mc_vips_decode).
bool mc_vips_fits_alone(const struct mirror_codecs_request *request);
/// Decodes the whole image through libvips, turned upright, into `pixels`: RGB, or RGBA when `keep_alpha` and it has
/// alpha (through an uncompressed PNG in memory, which the codecs' PNG decoder reads: CMYK and 16-bit converted).
int mc_vips_decode(const unsigned char *input, size_t length, bool keep_alpha, struct mc_pixels *pixels, struct mc_error *error);
/// Encodes `pixels` as `format` through libvips (TIFF, HEIF, AVIF), by way of a PNG in memory.
int mc_vips_encode(const struct mc_pixels *pixels, enum mirror_codecs_format format, int quality, struct mirror_codecs_output *output,
                   struct mc_error *error);

// MARK: Plans (transform.c)

/// How an image will be decoded, and what that takes (transform.c).
struct mc_plan {
    int through_vips;
    size_t bytes;
    struct mc_jpeg_header jpeg;
    struct mc_webp_header webp;
};

/// The plan of `request` for `input`: how it decodes and the memory that takes, checked against `memory_limit`
/// (TOO_LARGE past it). Returns 0, MALFORMED, TOO_LARGE or FAILED.
int mc_checked_plan(const unsigned char *input, size_t length, const struct mirror_codecs_request *request, struct mc_plan *plan,
                    struct mc_error *error);
/// Decodes a planned image that does not go through libvips, at the smallest scale the request's fit allows (RGB, or
/// RGBA when the output format keeps alpha). Returns 0, an error status, or MC_DECLINED (libvips takes it).
int mc_decode_planned(const unsigned char *input, size_t length, const struct mc_plan *plan, const struct mirror_codecs_request *request,
                      struct mc_pixels *pixels, struct mc_error *error);

#endif
