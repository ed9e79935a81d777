#ifndef MIRROR_CODECS_H
#define MIRROR_CODECS_H
// The resize path: decode, orient, crop, resample and encode one image, with the memory it will take known and
// checked from its headers before any decoder allocates.
//
// JPEG, PNG, WebP and GIF go straight through their codecs (Debian's TurboJPEG, libpng, libwebp, giflib) and the
// resampler of Debian's libstb-dev, compiled into this target with its assertions turned into errors; everything else
// (TIFF, HEIF, AVIF, BMP, CMYK JPEGs, animated WebP) through libvips, loaded with dlopen on first use. Every function
// here may be called from any thread at once; none keeps state between calls (but libvips' start, once).
#include <stdbool.h>
#include <stddef.h>

/// A format as `MirrorImages` sniffs it (its order is `ImageFormat`'s, which Swift maps explicitly).
enum mirror_codecs_format {
    MIRROR_CODECS_JPEG = 0,
    MIRROR_CODECS_PNG = 1,
    MIRROR_CODECS_WEBP = 2,
    MIRROR_CODECS_GIF = 3,
    MIRROR_CODECS_BMP = 4,
    MIRROR_CODECS_TIFF = 5,
    MIRROR_CODECS_HEIF = 6,
    MIRROR_CODECS_AVIF = 7,
};

/// How an image is fitted into size × size (img2dataset's `resize_mode` names in brackets).
enum mirror_codecs_fit {
    MIRROR_CODECS_LONGER_SIDE = 0,   // the longer side becomes `size` (keep_ratio_largest)
    MIRROR_CODECS_CENTER_CROP = 1,   // the shorter side becomes `size`, the rest cropped around the centre (center_crop)
    MIRROR_CODECS_PAD = 2,           // the longer side becomes `size`, then padded with `pad_color` to size × size (border)
    MIRROR_CODECS_NONE = 3,          // no resize (re-encode only)
    MIRROR_CODECS_SHORTER_SIDE = 4,  // the shorter side becomes `size` (keep_ratio)
    MIRROR_CODECS_FIXED = 5,         // stretched to size × size, the aspect not kept
};

/// The most boxes one image may ask to blur: a row's list is the table's, and each box costs a pass over its rows.
#define MIRROR_CODECS_MAX_BLUR_BOXES 1000

/// A box to blur, `[x0, y0, x1, y1]` as fractions of the image's width and height (img2dataset's default
/// `bbox_format`, "albumentations"), in the image's stored orientation: a JPEG turned upright by its EXIF orientation
/// has its boxes turned with it. Coordinates are clamped to 0-1; a box with no area inside the image blurs nothing.
struct mirror_codecs_box {
    float x0, y0, x1, y1;
};

/// How a call ended.
enum mirror_codecs_status {
    MIRROR_CODECS_OK = 0,
    /// The bytes do not decode cleanly: corrupt or cut-short data, decoder warnings, a frame without rows.
    MIRROR_CODECS_MALFORMED = 1,
    /// Decoding would take more memory than `memory_limit` (a decompression bomb, or a very large image).
    MIRROR_CODECS_TOO_LARGE = 2,
    /// Anything else: out of memory, libvips missing, an encoder or the resampler failing.
    MIRROR_CODECS_FAILED = 3,
};

/// What to do with one image.
struct mirror_codecs_request {
    enum mirror_codecs_format input_format;   // as served
    enum mirror_codecs_fit fit;
    int size;                                 // the box's side, in pixels (1 or more)
    bool only_if_bigger;                      // a smaller image is kept at its size (and only cropped or padded)
    enum mirror_codecs_format output_format;  // JPEG, PNG or WebP through the codecs; TIFF, HEIF or AVIF through libvips
    int quality;                              // JPEG, WebP, HEIF and AVIF quality, 1-100
    size_t memory_limit;                      // bytes the transform may take at most (0: no limit)
    unsigned pad_color;                       // what MIRROR_CODECS_PAD fills with, 0xRRGGBB (opaque)
    const struct mirror_codecs_box *blur_boxes;  // boxes to blur after the resize, before a crop or pad; NULL for none
    int blur_box_count;                       // how many, 0 to MIRROR_CODECS_MAX_BLUR_BOXES
};

/// What a transform made, or why it made nothing.
struct mirror_codecs_output {
    unsigned char *data;   // the encoded image, to free with mirror_codecs_free; NULL on failure
    size_t length;
    int width, height;
    int blurred_boxes;     // the boxes that covered part of the image, and were blurred
    char message[256];     // why, when the status is not OK
};

/// The most memory, in bytes, that `mirror_codecs_transform` will take for `input` (the decoders' own buffers and
/// mirror's), read from its headers without decoding. Returns OK with `*bytes`, or MALFORMED, TOO_LARGE (when
/// `memory_limit` is set and exceeded) or FAILED with the reason in `message`.
enum mirror_codecs_status mirror_codecs_estimate(const unsigned char *input, size_t length,
                                                 const struct mirror_codecs_request *request, size_t *bytes, char *message,
                                                 size_t capacity);

/// Decodes `input`, fits it as `request` asks (blurring its boxes after the resize, before a crop or pad; `blurred_boxes`
/// says how many had pixels to blur) and encodes it. The estimate is made again first and checked against
/// `memory_limit`, so no decoder allocates past it.
enum mirror_codecs_status mirror_codecs_transform(const unsigned char *input, size_t length,
                                                  const struct mirror_codecs_request *request,
                                                  struct mirror_codecs_output *output);

void mirror_codecs_free(void *data);

// MARK: Perceptual hash

/// Hashes of an image's centre without 1.5 %, 3 % and 4.5 % of each border, beside the whole image's: PDQ moves by
/// 40-100 bits when 3 % is trimmed off each border (measured on photographs, scripts/check/near_truth.py), while the whole
/// image's centre hashes within a few bits of the trimmed copy.
#define MIRROR_CODECS_PDQ_TRIMS 3

/// Which computation `mirror_codecs_pdq_hash` makes: 2 hashes a canonical rendering (the picture's luma averaged onto a
/// fixed grid, whatever size it was served at: pdq.c); 1, before it, hashed the decoded pixels as PDQ's reference does.
/// Hashes of two versions are not comparable.
#define MIRROR_CODECS_PDQ_VERSION 2

/// A PDQ hash (Meta's 256-bit perceptual hash, hashing.pdf in facebook/ThreatExchange) of one image, with its quality.
struct mirror_codecs_pdq {
    /// The hash as PDQ writes it in hex: 16 words of 16 bits, the last (the DCT's 16th row) first, each big-endian.
    unsigned char hash[32];
    /// The same of the image's centre, without 1.5 %, 3 % and 4.5 % of each border (MIRROR_CODECS_PDQ_TRIMS).
    unsigned char trimmed[MIRROR_CODECS_PDQ_TRIMS][32];
    /// PDQ's quality, 0-100: how much the image varies (gradients of its 64 x 64 samples); under 50, PDQ says a match
    /// is not to be trusted, and 0 is a flat image, whose hash is noise.
    int quality;
    /// The pixels decoded (at the smallest scale that keeps `PDQ_DECODE_SIDE` on the shorter side, where the format
    /// scales as it decodes), before they are averaged onto the grid the hashes are read from.
    int width, height;
    char message[256];     // why, when the status is not OK
};

/// The shorter side an image is decoded to at least before it is hashed (a JPEG's DCT scaling, WebP's scaled decode):
/// every scale reads the same cells of the picture, and 128 keeps two copies of a picture PDQ trusts within 24 bits on
/// the ground truth where 64 let them drift to 28 (for 0.09 ms of a 600-pixel JPEG's 1.2).
#define MIRROR_CODECS_PDQ_DECODE_SIDE 128

/// Decodes `input` to its luma (a JPEG at ⅛ or ¼ scale and the like, straight to grey; a WebP's luma plane, scaled as
/// it decodes; PNG and GIF whole; the rare formats through libvips at 512 px), alpha onto white, averages it onto a
/// fixed grid turned upright as EXIF says, and computes its PDQ hashes (MIRROR_CODECS_PDQ_VERSION). The memory the
/// decode takes is estimated from the headers and checked against `memory_limit` first, as for a transform. Returns OK,
/// MALFORMED, TOO_LARGE or FAILED.
enum mirror_codecs_status mirror_codecs_pdq_hash(const unsigned char *input, size_t length,
                                                 enum mirror_codecs_format input_format, size_t memory_limit,
                                                 struct mirror_codecs_pdq *output);

/// The most memory, in bytes, `mirror_codecs_pdq_hash` will take for `input`, read from its headers (as
/// `mirror_codecs_estimate`). Returns OK, MALFORMED, TOO_LARGE (past what memory could hold) or FAILED.
enum mirror_codecs_status mirror_codecs_pdq_estimate(const unsigned char *input, size_t length,
                                                     enum mirror_codecs_format input_format, size_t *bytes, char *message,
                                                     size_t capacity);

// MARK: Crash attribution

/// Arms the calling thread's crash mark: if this thread dies of SIGSEGV, SIGBUS, SIGFPE, SIGILL or SIGABRT before it
/// disarms it, `byte` is written at `offset` of the open file `descriptor` first (one pwrite), and the signal then
/// goes on to the handler that was installed before (the process dies as it would have). The handlers are installed
/// the first time a mark is armed.
void mirror_codecs_arm_crash_mark(int descriptor, long long offset, unsigned char byte);
/// Disarms the calling thread's crash mark.
void mirror_codecs_disarm_crash_mark(void);

#endif
