// WebP through libwebp (Debian's 1.2): lossy images are decoded a few rows at a time and scaled while they are; a
// lossless one (VP8L) is decoded whole into libwebp's own buffer of 4 bytes a pixel first, whatever the scale, which
// is how 40 bytes claiming 16383 × 10900 pixels once took 0.7-1.3 GB.
#include "internal.h"
#include <stdlib.h>
#include <string.h>
#include <webp/decode.h>

int mc_webp_read_header(const unsigned char *data, size_t length, struct mc_webp_header *header, struct mc_error *error) {
    memset(header, 0, sizeof *header);
    WebPBitstreamFeatures features;
    VP8StatusCode status = WebPGetFeatures(data, length, &features);
    if (status != VP8_STATUS_OK) return mc_fail(error, MIRROR_CODECS_MALFORMED, "the WebP header does not read (libwebp status %d)", (int)status);
    if (features.width < 1 || features.height < 1) return mc_fail(error, MIRROR_CODECS_MALFORMED, "the WebP declares %d x %d pixels", features.width, features.height);
    header->width = features.width;
    header->height = features.height;
    header->has_alpha = features.has_alpha;
    header->has_animation = features.has_animation;
    header->lossless = features.format == 2;
    return 0;
}

size_t mc_webp_decoder_memory(const struct mc_webp_header *header) {
    size_t pixels = mc_image_bytes(header->width, header->height, 1);
    size_t rows = mc_mul(mc_add((size_t)header->width, 64), 64 * 4);  // a lossy image's rows of YUV and filter state
    // vp8l_dec.c: ARGB of every pixel, plus a cache of rows; the transforms' data is a fraction more.
    if (header->lossless) return mc_add(mc_mul(pixels, 5), rows);
    // A lossy image's alpha plane is decoded whole, through the lossless decoder when compressed (4 bytes a pixel).
    if (header->has_alpha) return mc_add(mc_mul(pixels, 5), rows);
    return rows;
}

void mc_webp_scaled_size(const struct mc_webp_header *header, enum mirror_codecs_fit fit, int size, int *scaled_width, int *scaled_height) {
    double needed = mc_needed_scale(header->width, header->height, fit, size);
    *scaled_width = header->width;
    *scaled_height = header->height;
    if (needed < 1) {  // libwebp scales while it decodes, averaging
        *scaled_width = (int)(header->width * needed + 0.999);
        *scaled_height = (int)(header->height * needed + 0.999);
        if (*scaled_width < 1) *scaled_width = 1;
        if (*scaled_height < 1) *scaled_height = 1;
    }
}

/// Reads the WebP's features into `config` and sets its scaling for `fit` at `size` (the size in `width`, `height`).
/// Shrunk to half or less, the skipped deblocking filter and the pointwise chroma upsampling leave no trace; decoding
/// costs a fifth less (measured over the benchmark's WebPs: 9.6 → 7.7 ms each). Returns 0 or MALFORMED.
static int mc_webp_configure(WebPDecoderConfig *config, const unsigned char *input, size_t length, const struct mc_webp_header *header,
                             enum mirror_codecs_fit fit, int size, int *width, int *height, struct mc_error *error) {
    if (!WebPInitDecoderConfig(config) || WebPGetFeatures(input, length, &config->input) != VP8_STATUS_OK)
        return mc_fail(error, MIRROR_CODECS_MALFORMED, "the WebP header does not read");
    mc_webp_scaled_size(header, fit, size, width, height);
    if (*width != header->width || *height != header->height) {
        config->options.use_scaling = 1;
        config->options.scaled_width = *width;
        config->options.scaled_height = *height;
        if (mc_needed_scale(header->width, header->height, fit, size) <= 0.5) {
            config->options.bypass_filtering = 1;
            config->options.no_fancy_upsampling = 1;
        }
    }
    return 0;
}

int mc_webp_decode(const unsigned char *input, size_t length, const struct mc_webp_header *header, enum mirror_codecs_fit fit, int size,
                   bool keep_alpha, struct mc_pixels *pixels, struct mc_error *error) {
    WebPDecoderConfig config;
    int scaled_width, scaled_height;
    int configured = mc_webp_configure(&config, input, length, header, fit, size, &scaled_width, &scaled_height, error);
    if (configured != 0) return configured;
    int alpha = header->has_alpha;
    int status = mc_allocate(pixels, scaled_width, scaled_height, alpha ? 4 : 3, error);
    if (status != 0) return status;
    config.output.colorspace = alpha ? MODE_RGBA : MODE_RGB;
    config.output.is_external_memory = 1;
    config.output.u.RGBA.rgba = pixels->data;
    config.output.u.RGBA.stride = scaled_width * pixels->channels;
    config.output.u.RGBA.size = mc_image_bytes(scaled_width, scaled_height, pixels->channels);
    VP8StatusCode decoded = WebPDecode(input, length, &config);
    WebPFreeDecBuffer(&config.output);
    if (decoded != VP8_STATUS_OK) {
        mc_pixels_free(pixels);
        return mc_fail(error, MIRROR_CODECS_MALFORMED, decoded == VP8_STATUS_NOT_ENOUGH_DATA ? "the WebP's data ends early" : "the WebP does not decode (libwebp status %d)", (int)decoded);
    }
    if (alpha && !keep_alpha) {  // composite onto white, leaving RGB
        size_t count = mc_image_bytes(pixels->width, pixels->height, 1);
        unsigned char *from = pixels->data, *to = pixels->data;
        for (size_t index = 0; index < count; index++, from += 4, to += 3) {
            unsigned opacity = from[3];
            for (int channel = 0; channel < 3; channel++)
                to[channel] = (unsigned char)((from[channel] * opacity + 255 * (255 - opacity) + 127) / 255);
        }
        pixels->channels = 3;
    }
    return 0;
}

int mc_webp_decode_luma(const unsigned char *input, size_t length, const struct mc_webp_header *header, int side, struct mc_pixels *pixels,
                        struct mc_error *error) {
    WebPDecoderConfig config;
    int width, height;
    int configured = mc_webp_configure(&config, input, length, header, MIRROR_CODECS_CENTER_CROP, side, &width, &height, error);
    if (configured != 0) return configured;
    int alpha = header->has_alpha;
    int status = mc_allocate(pixels, width, height, 1, error);
    if (status != 0) return status;
    // The chroma planes (libwebp writes them; a hash does not read them) and alpha, beside the luma plane.
    size_t luma = mc_image_bytes(width, height, 1), chroma = mc_image_bytes((width + 1) / 2, (height + 1) / 2, 1);
    unsigned char *planes = malloc(mc_add(chroma * 2, alpha ? luma : 0));
    if (!planes) {
        mc_pixels_free(pixels);
        return mc_fail(error, MIRROR_CODECS_FAILED, "out of memory for the WebP's planes");
    }
    config.output.colorspace = alpha ? MODE_YUVA : MODE_YUV;
    config.output.is_external_memory = 1;
    WebPYUVABuffer *yuva = &config.output.u.YUVA;
    yuva->y = pixels->data;
    yuva->y_stride = width;
    yuva->y_size = luma;
    yuva->u = planes;
    yuva->v = planes + chroma;
    yuva->u_stride = yuva->v_stride = (width + 1) / 2;
    yuva->u_size = yuva->v_size = chroma;
    yuva->a = alpha ? planes + chroma * 2 : NULL;
    yuva->a_stride = alpha ? width : 0;
    yuva->a_size = alpha ? luma : 0;
    VP8StatusCode decoded = WebPDecode(input, length, &config);
    WebPFreeDecBuffer(&config.output);
    if (decoded != VP8_STATUS_OK) {
        free(planes);
        mc_pixels_free(pixels);
        return mc_fail(error, MIRROR_CODECS_MALFORMED, decoded == VP8_STATUS_NOT_ENOUGH_DATA ? "the WebP's data ends early" : "the WebP does not decode (libwebp status %d)", (int)decoded);
    }
    // libwebp's luma is BT.601's studio range (16-235): to full range, as the other decoders' grey, composited onto
    // white where alpha says.
    for (size_t index = 0; index < luma; index++) {
        int value = ((int)pixels->data[index] - 16) * 255;
        value = value <= 0 ? 0 : (value + 109) / 219;
        if (value > 255) value = 255;
        if (alpha) {
            unsigned opacity = yuva->a[index];
            value = (int)(((unsigned)value * opacity + 255 * (255 - opacity) + 127) / 255);
        }
        pixels->data[index] = (unsigned char)value;
    }
    free(planes);
    return 0;
}
