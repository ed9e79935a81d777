// JPEG through TurboJPEG (Debian's libjpeg-turbo 2.1): the header walk that sizes libjpeg's own memory before it is
// asked for any, EXIF orientation, decoding at the smallest DCT scale that covers the fit, and the planes path.
//
// Decoder warnings are failures. libjpeg goes on past corrupt or missing data and fills what it could not read with
// grey, and TurboJPEG reports that only as a warning: a 613-byte progressive JPEG claiming 14000 × 14000 pixels came out
// as a flat grey square. The one warning let through is extraneous bytes before the end-of-image marker (junk after
// the last scan, common on the web and harmless: every scan was read). libjpeg reports its first warning only, so a
// first warning of that kind is the last one too.
#include "internal.h"
#include <stdlib.h>
#include <string.h>
#include <turbojpeg.h>

// MARK: Header

static unsigned mc_u16(const unsigned char *p, int little) {
    return little ? (unsigned)p[0] | (unsigned)p[1] << 8 : (unsigned)p[0] << 8 | (unsigned)p[1];
}

static uint32_t mc_u32(const unsigned char *p, int little) {
    return little ? (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24
                  : (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/// The orientation in an APP1 segment's body, 0 when the segment is not EXIF, 1 when EXIF says none or cannot be read.
/// Every offset is checked in size_t against what is left, never by adding to an offset first: an IFD offset of
/// 0xFFFFFFFE once wrapped a 32-bit check and read 4 GB past the buffer.
static int mc_exif_orientation(const unsigned char *body, size_t size) {
    if (size < 6 || memcmp(body, "Exif\0\0", 6) != 0) return 0;
    const unsigned char *tiff = body + 6;
    size_t tiff_size = size - 6;
    if (tiff_size < 8) return 1;
    int little;
    if (tiff[0] == 'I' && tiff[1] == 'I') little = 1;
    else if (tiff[0] == 'M' && tiff[1] == 'M') little = 0;
    else return 1;
    size_t ifd = mc_u32(tiff + 4, little);
    if (ifd > tiff_size || tiff_size - ifd < 2) return 1;
    size_t entries = mc_u16(tiff + ifd, little);
    size_t room = (tiff_size - ifd - 2) / 12;
    if (entries > room) entries = room;
    for (size_t index = 0; index < entries; index++) {
        const unsigned char *entry = tiff + ifd + 2 + index * 12;
        if (mc_u16(entry, little) != 0x0112) continue;
        unsigned type = mc_u16(entry + 2, little);
        uint32_t value = type == 4 ? mc_u32(entry + 8, little) : mc_u16(entry + 8, little);  // LONG, or SHORT
        return value >= 1 && value <= 8 ? (int)value : 1;
    }
    return 1;
}

int mc_jpeg_read_header(const unsigned char *data, size_t length, struct mc_jpeg_header *header, struct mc_error *error) {
    memset(header, 0, sizeof *header);
    header->adobe_transform = -1;
    header->orientation = 1;
    if (length < 4 || data[0] != 0xFF || data[1] != 0xD8) return mc_fail(error, MIRROR_CODECS_MALFORMED, "not a JPEG (no start-of-image marker)");
    int have_frame = 0, have_exif = 0;
    size_t at = 2;
    for (;;) {
        while (at < length && data[at] != 0xFF) at++;  // stray bytes: libjpeg skips them too (and warns)
        while (at < length && data[at] == 0xFF) at++;  // fill bytes
        if (at >= length) return mc_fail(error, MIRROR_CODECS_MALFORMED, "the JPEG ends before its first scan");
        int marker = data[at++];
        if (marker == 0xD8 || marker == 0x01 || (marker >= 0xD0 && marker <= 0xD7)) continue;  // no length
        if (marker == 0xD9) return mc_fail(error, MIRROR_CODECS_MALFORMED, "the JPEG ends before its first scan");
        if (length - at < 2) return mc_fail(error, MIRROR_CODECS_MALFORMED, "a JPEG segment is cut off");
        size_t segment = (size_t)data[at] << 8 | data[at + 1];
        if (segment < 2 || segment > length - at) return mc_fail(error, MIRROR_CODECS_MALFORMED, "a JPEG segment runs past the end");
        const unsigned char *body = data + at + 2;
        size_t size = segment - 2;
        int is_frame = marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC;
        if (is_frame) {
            if (have_frame) return mc_fail(error, MIRROR_CODECS_MALFORMED, "the JPEG has two frame headers");
            if (marker == 0xC3 || marker == 0xC7 || marker == 0xCB || marker == 0xCF)
                return mc_fail(error, MIRROR_CODECS_MALFORMED, "a lossless JPEG (SOF%d), which libjpeg-turbo 2.1 does not decode", marker - 0xC0);
            if (marker == 0xC5 || marker == 0xC6 || marker == 0xCD || marker == 0xCE)
                return mc_fail(error, MIRROR_CODECS_MALFORMED, "a hierarchical JPEG (SOF%d), which libjpeg does not decode", marker - 0xC0);
            if (size < 6) return mc_fail(error, MIRROR_CODECS_MALFORMED, "the JPEG's frame header is cut off");
            header->height = (int)((unsigned)body[1] << 8 | body[2]);
            header->width = (int)((unsigned)body[3] << 8 | body[4]);
            header->components = body[5];
            if (header->width < 1 || header->height < 1)
                return mc_fail(error, MIRROR_CODECS_MALFORMED, "the JPEG declares %d x %d pixels", header->width, header->height);
            if (header->components < 1 || header->components > 4)
                return mc_fail(error, MIRROR_CODECS_MALFORMED, "the JPEG declares %d components", header->components);
            if (size < 6 + 3 * (size_t)header->components) return mc_fail(error, MIRROR_CODECS_MALFORMED, "the JPEG's frame header is cut off");
            for (int index = 0; index < header->components; index++) {
                int h = body[7 + 3 * index] >> 4, v = body[7 + 3 * index] & 15;
                if (h < 1 || h > 4 || v < 1 || v > 4) return mc_fail(error, MIRROR_CODECS_MALFORMED, "the JPEG declares sampling factors %d x %d", h, v);
                header->h[index] = h;
                header->v[index] = v;
                if (h > header->max_h) header->max_h = h;
                if (v > header->max_v) header->max_v = v;
            }
            header->progressive = marker == 0xC2 || marker == 0xCA;
            have_frame = 1;
        } else if (marker == 0xDA) {
            if (!have_frame) return mc_fail(error, MIRROR_CODECS_MALFORMED, "the JPEG has a scan before its frame header");
            if (size < 1) return mc_fail(error, MIRROR_CODECS_MALFORMED, "the JPEG's scan header is cut off");
            // libjpeg buffers the whole image's coefficients when the first scan does not carry every component.
            header->multi_scan = header->progressive || body[0] < header->components;
            return 0;
        } else if (marker == 0xE1 && !have_exif) {
            int orientation = mc_exif_orientation(body, size);
            if (orientation) {
                header->orientation = orientation;
                have_exif = 1;
            }
        } else if (marker == 0xEE && size >= 12 && memcmp(body, "Adobe", 5) == 0) {
            header->adobe_transform = body[11];
        }
        at += segment;
    }
}

int mirror_codecs_jpeg_orientation(const unsigned char *data, size_t length) {
    struct mc_jpeg_header header;
    char text[8];
    struct mc_error error = {text, sizeof text};
    (void)mc_jpeg_read_header(data, length, &header, &error);  // an orientation found before a failure still counts
    return header.orientation;
}

size_t mc_jpeg_decoder_memory(const struct mc_jpeg_header *header) {
    size_t bytes = 0;
    if (header->multi_scan) {
        // jdcoefct.c: one virtual array per component, its blocks rounded up to whole MCUs, 64 coefficients of 2 bytes.
        for (int index = 0; index < header->components; index++) {
            size_t h = (size_t)header->h[index], v = (size_t)header->v[index];
            size_t columns = (mc_mul((size_t)header->width, h) + (size_t)header->max_h * 8 - 1) / ((size_t)header->max_h * 8);
            size_t rows = (mc_mul((size_t)header->height, v) + (size_t)header->max_v * 8 - 1) / ((size_t)header->max_v * 8);
            columns = (columns + h - 1) / h * h;
            rows = (rows + v - 1) / v * v;
            bytes = mc_add(bytes, mc_mul(mc_mul(columns, rows), 128));
        }
    }
    // Row buffers (an MCU row of each component, upsampling and colour conversion): a few rows of the full width.
    size_t rows = mc_mul(mc_mul((size_t)header->width + 64, (size_t)header->components), (size_t)header->max_v * 8 * 6);
    return mc_add(bytes, rows);
}

// MARK: Scale

void mc_jpeg_scaled_size(int width, int height, enum mirror_codecs_fit fit, int size, int *scaled_width, int *scaled_height) {
    double needed = mc_needed_scale(width, height, fit, size);
    int count = 0;
    tjscalingfactor *factors = tjGetScalingFactors(&count);
    *scaled_width = width;
    *scaled_height = height;
    for (int index = 0; index < count; index++) {
        tjscalingfactor factor = factors[index];
        if (factor.num > factor.denom) continue;
        int w = TJSCALED(width, factor), h = TJSCALED(height, factor);
        if ((double)factor.num / factor.denom >= needed && (double)w * h < (double)*scaled_width * *scaled_height) {
            *scaled_width = w;
            *scaled_height = h;
        }
    }
}

/// 0 when a TurboJPEG call succeeded (or only warned of junk before the end-of-image marker); MALFORMED otherwise.
static int mc_jpeg_outcome(tjhandle handle, int status, struct mc_error *error) {
    if (status == 0) return 0;
    const char *message = tjGetErrorStr2(handle);
    if (tjGetErrorCode(handle) == TJERR_WARNING && strstr(message, "extraneous bytes before marker 0xd9")) return 0;
    return mc_fail(error, MIRROR_CODECS_MALFORMED, "the JPEG does not decode cleanly: %s", message);
}

/// After tjDecompressHeader3 warned: MALFORMED, or MC_DECLINED (libvips) for a warning let through.
static int mc_jpeg_header_outcome(tjhandle handle, struct mc_error *error) {
    int status = mc_jpeg_outcome(handle, -1, error);
    return status == 0 ? MC_DECLINED : status;
}

// MARK: Decode to RGB

/// Turns pixels stored as EXIF `orientation` says into upright ones.
static int mc_orient(struct mc_pixels *pixels, int orientation, struct mc_error *error) {
    if (orientation <= 1 || orientation > 8) return 0;
    int w = pixels->width, h = pixels->height, c = pixels->channels;
    int swaps = orientation >= 5;
    struct mc_pixels out;
    int status = mc_allocate(&out, swaps ? h : w, swaps ? w : h, c, error);
    if (status != 0) return status;
    for (int y = 0; y < h; y++) {
        for (int x = 0; x < w; x++) {
            int nx, ny;
            mc_oriented(orientation, x, y, w, h, &nx, &ny);
            memcpy(out.data + ((size_t)ny * (size_t)out.width + (size_t)nx) * (size_t)c, pixels->data + ((size_t)y * (size_t)w + (size_t)x) * (size_t)c, (size_t)c);
        }
    }
    mc_pixels_free(pixels);
    *pixels = out;
    return 0;
}

/// Decodes at the smallest DCT scale that covers `fit` at `size`, as `format` (TJPF_RGB or TJPF_GRAY, `channels` 3 or
/// 1), turned upright when `upright`. Returns 0, MALFORMED, FAILED, or MC_DECLINED for an image libvips should take
/// (CMYK, or a subsampling TurboJPEG cannot name).
static int mc_jpeg_decode_scaled(const unsigned char *input, size_t length, const struct mc_jpeg_header *header, enum mirror_codecs_fit fit,
                                 int size, int format, int channels, int upright, struct mc_pixels *pixels, struct mc_error *error) {
    tjhandle handle = tjInitDecompress();
    if (!handle) return mc_fail(error, MIRROR_CODECS_FAILED, "TurboJPEG did not start");
    int width, height, subsampling, colorspace, status;
    if (tjDecompressHeader3(handle, input, (unsigned long)length, &width, &height, &subsampling, &colorspace) != 0) {
        // A warning in the headers is a JPEG that does not decode cleanly; what TurboJPEG cannot classify (an unusual
        // subsampling) goes to libvips.
        status = tjGetErrorCode(handle) == TJERR_WARNING ? mc_jpeg_header_outcome(handle, error) : MC_DECLINED;
    } else if (colorspace == TJCS_CMYK || colorspace == TJCS_YCCK) {
        status = MC_DECLINED;  // libvips converts CMYK with a colour profile
    } else {
        int scaled_width, scaled_height;
        mc_jpeg_scaled_size(header->width, header->height, fit, size, &scaled_width, &scaled_height);
        status = mc_allocate(pixels, scaled_width, scaled_height, channels, error);
        if (status == 0) {
            status = mc_jpeg_outcome(handle, tjDecompress2(handle, input, (unsigned long)length, pixels->data, scaled_width, 0,
                                                           scaled_height, format, TJFLAG_LIMITSCANS), error);
            if (status == 0 && upright) status = mc_orient(pixels, header->orientation, error);
            if (status != 0) mc_pixels_free(pixels);
        }
    }
    tjDestroy(handle);
    return status;
}

/// Decodes to RGB, turned upright. Returns as mc_jpeg_decode_scaled.
int mc_jpeg_decode(const unsigned char *input, size_t length, const struct mc_jpeg_header *header, enum mirror_codecs_fit fit, int size,
                   struct mc_pixels *pixels, struct mc_error *error) {
    return mc_jpeg_decode_scaled(input, length, header, fit, size, TJPF_RGB, 3, 1, pixels, error);
}

/// Decodes to grey (libjpeg's luma, the chroma components never transformed) at the smallest DCT scale that keeps
/// `side` pixels on the shorter side, stored as the file's rows are (not turned upright). Returns as
/// mc_jpeg_decode_scaled.
int mc_jpeg_decode_luma(const unsigned char *input, size_t length, const struct mc_jpeg_header *header, int side, struct mc_pixels *pixels,
                        struct mc_error *error) {
    return mc_jpeg_decode_scaled(input, length, header, MIRROR_CODECS_CENTER_CROP, side, TJPF_GRAY, 1, 0, pixels, error);
}

// MARK: The planes path

/// TurboJPEG's subsampling factors: how many luma pixels a chroma sample covers across and down.
static void mc_chroma_factors(int subsampling, int *across, int *down) {
    *across = subsampling == TJSAMP_422 || subsampling == TJSAMP_420 ? 2 : 1;
    *down = subsampling == TJSAMP_420 ? 2 : 1;
}

/// A plane's samples across (or down) for an image `length` pixels across (or down), when a sample of the chroma
/// planes covers `factor` pixels: TurboJPEG's tjPlaneWidth and tjPlaneHeight for the subsamplings the planes path
/// takes (the sweep test holds them equal), without a call into the library for each of the sweep's billion planes.
static int mc_plane_length(int index, int length, int factor) {
    int padded = (length + factor - 1) / factor * factor;
    return index == 0 ? padded : padded / factor;
}

bool mc_planes_geometry_of(int width, int height, int subsampling, const struct mc_geometry *g, struct mc_planes_geometry *planes) {
    if (!(subsampling == TJSAMP_420 || subsampling == TJSAMP_422 || subsampling == TJSAMP_444 || subsampling == TJSAMP_GRAY)) return false;
    int gray = subsampling == TJSAMP_GRAY;
    planes->count = gray ? 1 : 3;
    planes->out_subsampling = gray ? TJSAMP_GRAY : TJSAMP_420;
    planes->out_width = g->out_width;
    planes->out_height = g->out_height;
    int across, down;
    mc_chroma_factors(subsampling, &across, &down);
    int out_factor = gray ? 1 : 2;
    // The crop starts on the chroma grid, so that every plane's crop is whole samples of it (moving it left or up by
    // less than a chroma sample, never past the image's edge).
    int x = g->crop_x - g->crop_x % across, y = g->crop_y - g->crop_y % down;
    for (int index = 0; index < planes->count; index++) {
        struct mc_plane_resample *plane = &planes->plane[index];
        int a = index == 0 ? 1 : across, d = index == 0 ? 1 : down;
        plane->plane_width = mc_plane_length(index, width, across);
        plane->plane_height = mc_plane_length(index, height, down);
        plane->in_x = x / a;
        plane->in_y = y / d;
        plane->in_width = (x + g->crop_width + a - 1) / a - plane->in_x;
        plane->in_height = (y + g->crop_height + d - 1) / d - plane->in_y;
        plane->out_plane_width = mc_plane_length(index, g->out_width, out_factor);
        plane->out_plane_height = mc_plane_length(index, g->out_height, out_factor);
        // The luma plane's own size is the picture's; the padding column or row a 4:2:0 output needs past an odd
        // size is filled by repeating the last. A chroma plane is resampled to its whole extent.
        plane->out_width = index == 0 ? g->out_width : plane->out_plane_width;
        plane->out_height = index == 0 ? g->out_height : plane->out_plane_height;
    }
    return 0;
}

int mc_plane_length_matches_turbojpeg(int length) {
    static const int subsamplings[] = {TJSAMP_444, TJSAMP_422, TJSAMP_420, TJSAMP_GRAY};
    for (size_t s = 0; s < sizeof subsamplings / sizeof subsamplings[0]; s++) {
        int across, down;
        mc_chroma_factors(subsamplings[s], &across, &down);
        for (int index = 0; index < (subsamplings[s] == TJSAMP_GRAY ? 1 : 3); index++) {
            if (mc_plane_length(index, length, across) != tjPlaneWidth(index, length, subsamplings[s])) return 0;
            if (mc_plane_length(index, length, down) != tjPlaneHeight(index, length, subsamplings[s])) return 0;
        }
    }
    return 1;
}

size_t mc_jpeg_planes_memory(const struct mc_jpeg_header *header, int subsampling, enum mirror_codecs_fit fit, int size, bool only_if_bigger) {
    int scaled_width, scaled_height;
    mc_jpeg_scaled_size(header->width, header->height, fit, size, &scaled_width, &scaled_height);
    struct mc_geometry g = mc_geometry_of(scaled_width, scaled_height, fit, size, only_if_bigger);
    struct mc_planes_geometry planes;
    if (!mc_planes_geometry_of(scaled_width, scaled_height, subsampling, &g, &planes)) return 0;
    size_t bytes = 0;
    for (int index = 0; index < planes.count; index++) {
        const struct mc_plane_resample *plane = &planes.plane[index];
        bytes = mc_add(bytes, mc_image_bytes(plane->plane_width, plane->plane_height, 1));
        bytes = mc_add(bytes, mc_image_bytes(plane->out_plane_width, plane->out_plane_height, 1));
        bytes = mc_add(bytes, mc_resample_memory(plane->in_width, plane->in_height, plane->out_width, plane->out_height, 1));
    }
    return mc_add(bytes, mc_encode_memory(planes.out_width, planes.out_height, 3));
}

/// Repeats a plane's last column and row into the padding past `width` × `height`.
static void mc_fill_padding(unsigned char *plane, int width, int height, int plane_width, int plane_height) {
    for (int y = 0; y < height; y++) {
        unsigned char *row = plane + (size_t)y * (size_t)plane_width;
        memset(row + width, row[width - 1], (size_t)(plane_width - width));
    }
    for (int y = height; y < plane_height; y++)
        memcpy(plane + (size_t)y * (size_t)plane_width, plane + (size_t)(height - 1) * (size_t)plane_width, (size_t)plane_width);
}

/// JPEG to JPEG without leaving YCbCr: the planes are decoded at the DCT scale, each cropped and resampled at its own
/// resolution (the chroma of a 4:2:0 photo is a quarter of the pixels), and encoded 4:2:0 (grey stays grey). That skips
/// two colour conversions and half the resampling of the RGB path (measured: 4.7 → 3.3 ms a photo). Each plane's crop
/// is whole samples of it and its resample a plain one from one size to another, the kind the sweep test runs for every
/// size (a fractional region once made stb_image_resize assert when enlarging). An image with an EXIF orientation, a
/// pad, boxes to blur, or an unusual subsampling takes the RGB path (MC_DECLINED here).
int mc_jpeg_planes(const unsigned char *input, size_t length, const struct mc_jpeg_header *header,
                   const struct mirror_codecs_request *request, struct mirror_codecs_output *output, struct mc_error *error) {
    if (header->orientation != 1) return MC_DECLINED;
    tjhandle handle = tjInitDecompress();
    if (!handle) return mc_fail(error, MIRROR_CODECS_FAILED, "TurboJPEG did not start");
    int width, height, subsampling, colorspace;
    if (tjDecompressHeader3(handle, input, (unsigned long)length, &width, &height, &subsampling, &colorspace) != 0) {
        int status = tjGetErrorCode(handle) == TJERR_WARNING ? mc_jpeg_header_outcome(handle, error) : MC_DECLINED;
        tjDestroy(handle);
        return status;
    }
    if (!(colorspace == TJCS_YCbCr || colorspace == TJCS_GRAY)) {
        tjDestroy(handle);
        return MC_DECLINED;
    }
    int scaled_width, scaled_height;
    mc_jpeg_scaled_size(width, height, request->fit, request->size, &scaled_width, &scaled_height);
    struct mc_geometry g = mc_geometry_of(scaled_width, scaled_height, request->fit, request->size, request->only_if_bigger);
    struct mc_planes_geometry planes;
    if (request->fit == MIRROR_CODECS_PAD || request->fit == MIRROR_CODECS_NONE || mc_blurs(request)
        || !mc_planes_geometry_of(scaled_width, scaled_height, subsampling, &g, &planes)) {
        tjDestroy(handle);
        return MC_DECLINED;
    }
    unsigned char *decoded[3] = {NULL, NULL, NULL}, *resized[3] = {NULL, NULL, NULL};
    int strides[3] = {0, 0, 0}, out_strides[3] = {0, 0, 0};
    int status = 0;
    for (int index = 0; index < planes.count && status == 0; index++) {
        const struct mc_plane_resample *plane = &planes.plane[index];
        strides[index] = plane->plane_width;
        out_strides[index] = plane->out_plane_width;
        decoded[index] = malloc(mc_image_bytes(plane->plane_width, plane->plane_height, 1));
        resized[index] = malloc(mc_image_bytes(plane->out_plane_width, plane->out_plane_height, 1));
        if (!decoded[index] || !resized[index]) status = mc_fail(error, MIRROR_CODECS_FAILED, "out of memory for the JPEG's planes");
    }
    if (status == 0)
        status = mc_jpeg_outcome(handle, tjDecompressToYUVPlanes(handle, input, (unsigned long)length, decoded, scaled_width, strides,
                                                                 scaled_height, TJFLAG_LIMITSCANS), error);
    for (int index = 0; index < planes.count && status == 0; index++) {
        const struct mc_plane_resample *plane = &planes.plane[index];
        const unsigned char *from = decoded[index] + (size_t)plane->in_y * (size_t)plane->plane_width + (size_t)plane->in_x;
        status = mc_resample(from, plane->in_width, plane->in_height, (size_t)plane->plane_width, resized[index], plane->out_width,
                             plane->out_height, (size_t)plane->out_plane_width, 1, error);
        if (status == 0) mc_fill_padding(resized[index], plane->out_width, plane->out_height, plane->out_plane_width, plane->out_plane_height);
    }
    if (status == 0) {
        tjhandle encoder = tjInitCompress();
        unsigned char *jpeg = NULL;
        unsigned long jpeg_size = 0;
        if (encoder && tjCompressFromYUVPlanes(encoder, (const unsigned char **)resized, planes.out_width, out_strides, planes.out_height,
                                               planes.out_subsampling, &jpeg, &jpeg_size, request->quality, 0) == 0
            && (output->data = malloc(jpeg_size))) {
            memcpy(output->data, jpeg, jpeg_size);
            output->length = jpeg_size;
            output->width = planes.out_width;
            output->height = planes.out_height;
        } else {
            status = mc_fail(error, MIRROR_CODECS_FAILED, "cannot encode the JPEG: %s", encoder ? tjGetErrorStr2(encoder) : "TurboJPEG did not start");
        }
        tjFree(jpeg);
        if (encoder) tjDestroy(encoder);
    }
    for (int index = 0; index < 3; index++) {
        free(decoded[index]);
        free(resized[index]);
    }
    tjDestroy(handle);
    return status;
}
