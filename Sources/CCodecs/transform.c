// The one entry point: the memory a transform will take, from the headers alone, checked against the limit before any
// decoder allocates; then decode (at the smallest scale the fit allows), orient, crop, resample and encode.
//
// What is counted: the decoders' own buffers where they are large (libjpeg's coefficients of a multi-scan JPEG, a
// lossless WebP's ARGB, libvips' image), mirror's decoded pixels and their copy while they are oriented or fitted, the
// resampler's working memory, and the encoder's. A 613-byte progressive JPEG declaring 14000 × 14000 pixels asks
// libjpeg for 1.2 GB however small the output: it is refused here, as TOO_LARGE, before libjpeg is started.
#include "internal.h"
#include <stdlib.h>
#include <string.h>

int mc_fail(struct mc_error *error, int status, const char *format, ...) {
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(error->text, error->capacity, format, arguments);
    va_end(arguments);
    return status;
}

int mc_allocate(struct mc_pixels *pixels, int width, int height, int channels, struct mc_error *error) {
    size_t bytes = mc_image_bytes(width, height, channels);
    pixels->data = bytes && bytes != SIZE_MAX ? malloc(bytes) : NULL;
    if (!pixels->data) return mc_fail(error, MIRROR_CODECS_FAILED, "out of memory for %d x %d pixels", width, height);
    pixels->width = width;
    pixels->height = height;
    pixels->channels = channels;
    return 0;
}

void mc_pixels_free(struct mc_pixels *pixels) {
    free(pixels->data);
    pixels->data = NULL;
}

void mirror_codecs_free(void *data) { free(data); }

static int mc_codecs_write(enum mirror_codecs_format format) { return format == MIRROR_CODECS_JPEG || format == MIRROR_CODECS_PNG || format == MIRROR_CODECS_WEBP; }

/// What mirror's side of a decode takes: the decoded pixels (`copies` of them: 2 while a JPEG's are turned upright),
/// the fitted ones beside them, the resampler's working memory and the encoder's; with boxes to blur, the whole image
/// resized and the blur's buffers too.
static size_t mc_pixels_memory(int width, int height, int channels, int copies, const struct mirror_codecs_request *request) {
    struct mc_geometry g = mc_geometry_of(width, height, request->fit, request->size, request->only_if_bigger);
    size_t bytes = mc_mul(mc_image_bytes(width, height, channels), (size_t)copies);
    if (mc_blurs(request)) {
        bytes = mc_add(bytes, mc_fit_blurred_memory(width, height, channels, request));
    } else {
        bytes = mc_add(bytes, mc_image_bytes(g.final_width, g.final_height, channels));
        bytes = mc_add(bytes, mc_resample_memory(g.crop_width, g.crop_height, g.out_width, g.out_height, channels));
    }
    return mc_add(bytes, mc_encode_memory(g.final_width, g.final_height, channels));
}


static int mc_plan_vips(const unsigned char *input, size_t length, const struct mirror_codecs_request *request, struct mc_plan *plan,
                        struct mc_error *error) {
    plan->through_vips = 1;
    struct mc_vips_header header;
    int status = mc_vips_read_header(input, length, &header, error);
    if (status != 0) return status;
    // libvips decodes what it cannot shrink on load whole (TIFF strips aside): the image, once as loaded and once in
    // the thumbnail's working format; libjpeg's coefficients too when a JPEG has several scans. Its thumbnail resizes
    // the whole image to cover the box before it crops: a thin image centre-cropped is enlarged whole (a fuzzed
    // 8210 × 16 JPEG cropped to 480 asked libvips for 354 MB in one allocation).
    size_t image = mc_mul(mc_image_bytes(header.width, header.height, header.bands), (size_t)header.band_bytes);
    if (!mc_vips_fits_alone(request)) {
        // Decoded whole and handed to the codecs' C as an uncompressed PNG (up to 16 bits a sample), decoded again as
        // 8-bit RGBA, fitted, blurred and encoded there (TIFF, HEIF and AVIF by libvips again, from a PNG).
        size_t png = mc_add(mc_mul(mc_image_bytes(header.width, header.height, 4), 2), mc_mul((size_t)header.height, 64));
        plan->bytes = mc_add(mc_add(mc_mul(image, 2), png), mc_pixels_memory(header.width, header.height, 4, 1, request));
        if (!mc_codecs_write(request->output_format)) {
            struct mc_geometry g = mc_geometry_of(header.width, header.height, request->fit, request->size, request->only_if_bigger);
            plan->bytes = mc_add(plan->bytes, mc_mul(mc_image_bytes(g.final_width, g.final_height, 4), 6));
        }
        if (request->input_format == MIRROR_CODECS_JPEG) plan->bytes = mc_add(plan->bytes, mc_jpeg_decoder_memory(&plan->jpeg));
        return 0;
    }
    size_t covered = 0;
    if (request->fit != MIRROR_CODECS_NONE) {
        double shorter = header.width < header.height ? header.width : header.height;
        double longer = header.width < header.height ? header.height : header.width;
        double scale = request->fit == MIRROR_CODECS_CENTER_CROP ? request->size / shorter : request->size / longer;
        if (request->only_if_bigger && scale > 1) scale = 1;
        double bytes = (header.width * scale + 1) * (header.height * scale + 1) * (header.bands > 3 ? header.bands : 3) * header.band_bytes;
        covered = bytes >= (double)SIZE_MAX ? SIZE_MAX : (size_t)bytes;
    }
    plan->bytes = mc_add(mc_add(mc_mul(image, 2), covered), mc_pixels_memory(request->size, request->size, 4, 1, request));
    if (request->input_format == MIRROR_CODECS_JPEG) plan->bytes = mc_add(plan->bytes, mc_jpeg_decoder_memory(&plan->jpeg));
    return 0;
}

static int mc_plan_of(const unsigned char *input, size_t length, const struct mirror_codecs_request *request, struct mc_plan *plan,
                      struct mc_error *error) {
    memset(plan, 0, sizeof *plan);
    if (request->size < 1 || request->fit < MIRROR_CODECS_LONGER_SIDE || request->fit > MIRROR_CODECS_FIXED)
        return mc_fail(error, MIRROR_CODECS_FAILED, "no such fit (%d) or size (%d)", request->fit, request->size);
    if (request->blur_box_count < 0 || request->blur_box_count > MIRROR_CODECS_MAX_BLUR_BOXES || (request->blur_box_count > 0 && !request->blur_boxes))
        return mc_fail(error, MIRROR_CODECS_FAILED, "%d boxes to blur: 0 to %d may be given", request->blur_box_count, MIRROR_CODECS_MAX_BLUR_BOXES);
    int keep_alpha = request->output_format != MIRROR_CODECS_JPEG;
    int codecs = mc_codecs_write(request->output_format);
    int status = 0;
    switch (request->input_format) {
    case MIRROR_CODECS_JPEG: {
        status = mc_jpeg_read_header(input, length, &plan->jpeg, error);
        if (status != 0) return status;
        if (!codecs || plan->jpeg.components == 4) return mc_plan_vips(input, length, request, plan, error);  // CMYK and YCCK
        int scaled_width, scaled_height;
        mc_jpeg_scaled_size(plan->jpeg.width, plan->jpeg.height, request->fit, request->size, &scaled_width, &scaled_height);
        size_t rgb = mc_pixels_memory(scaled_width, scaled_height, 3, plan->jpeg.orientation > 1 ? 2 : 1, request);
        size_t planes = mc_jpeg_planes_memory(&plan->jpeg, 0, request->fit, request->size, request->only_if_bigger);  // 4:4:4, the most
        plan->bytes = mc_add(mc_jpeg_decoder_memory(&plan->jpeg), rgb > planes ? rgb : planes);
        return 0;
    }
    case MIRROR_CODECS_PNG: {
        struct mc_png_header header;
        status = mc_png_read_header(input, length, &header, error);
        if (status != 0) return status;
        if (!codecs) return mc_plan_vips(input, length, request, plan, error);
        // libpng: a few rows of up to 8 bytes a pixel (16-bit RGBA), and its zlib stream.
        size_t rows = mc_add(mc_mul(mc_image_bytes(header.width, 1, 8), 4), 1 << 20);
        plan->bytes = mc_add(rows, mc_pixels_memory(header.width, header.height, keep_alpha ? 4 : 3, 1, request));
        return 0;
    }
    case MIRROR_CODECS_WEBP: {
        status = mc_webp_read_header(input, length, &plan->webp, error);
        if (status != 0) return status;
        if (!codecs || plan->webp.has_animation) return mc_plan_vips(input, length, request, plan, error);  // libvips takes the first frame
        int scaled_width, scaled_height;
        mc_webp_scaled_size(&plan->webp, request->fit, request->size, &scaled_width, &scaled_height);
        plan->bytes = mc_add(mc_webp_decoder_memory(&plan->webp),
                             mc_pixels_memory(scaled_width, scaled_height, plan->webp.has_alpha ? 4 : 3, 1, request));
        return 0;
    }
    case MIRROR_CODECS_GIF: {
        struct mc_gif_header header;
        status = mc_gif_read_header(input, length, &header, error);
        if (status != 0) return status;
        if (!codecs) return mc_plan_vips(input, length, request, plan, error);
        plan->bytes = mc_add(mc_pixels_memory(header.width, header.height, keep_alpha ? 4 : 3, 1, request), 1 << 20);
        return 0;
    }
    default:
        return mc_plan_vips(input, length, request, plan, error);
    }
}

/// 0 when the plan's memory is within the request's limit; TOO_LARGE otherwise.
static int mc_within_limit(const struct mc_plan *plan, const struct mirror_codecs_request *request, struct mc_error *error) {
    if (request->memory_limit && plan->bytes > request->memory_limit) {
        if (plan->bytes == SIZE_MAX) return mc_fail(error, MIRROR_CODECS_TOO_LARGE, "decoding it would take more memory than there is");
        return mc_fail(error, MIRROR_CODECS_TOO_LARGE, "decoding it would take %zu MB, more than the %zu MB a transform may use",
                       (plan->bytes + 999999) / 1000000, request->memory_limit / 1000000);
    }
    return 0;
}

int mc_checked_plan(const unsigned char *input, size_t length, const struct mirror_codecs_request *request, struct mc_plan *plan,
                    struct mc_error *error) {
    int status = mc_plan_of(input, length, request, plan, error);
    return status != 0 ? status : mc_within_limit(plan, request, error);
}

int mc_decode_planned(const unsigned char *input, size_t length, const struct mc_plan *plan, const struct mirror_codecs_request *request,
                      struct mc_pixels *pixels, struct mc_error *error) {
    // A decoder may shrink only as far as the fit still needs; with only_if_bigger a small image is not enlarged.
    int keep_alpha = request->output_format != MIRROR_CODECS_JPEG;
    switch (request->input_format) {
    case MIRROR_CODECS_JPEG: return mc_jpeg_decode(input, length, &plan->jpeg, request->fit, request->size, pixels, error);
    case MIRROR_CODECS_PNG: return mc_png_decode(input, length, keep_alpha, pixels, error);
    case MIRROR_CODECS_WEBP: return mc_webp_decode(input, length, &plan->webp, request->fit, request->size, keep_alpha, pixels, error);
    default: return mc_gif_decode(input, length, keep_alpha, pixels, error);
    }
}

enum mirror_codecs_status mirror_codecs_estimate(const unsigned char *input, size_t length, const struct mirror_codecs_request *request,
                           size_t *bytes, char *message, size_t capacity) {
    struct mc_error error = {message, capacity};
    message[0] = 0;
    struct mc_plan plan;
    int status = mc_checked_plan(input, length, request, &plan, &error);
    *bytes = status == 0 ? plan.bytes : 0;
    return status;
}

/// Fits decoded (upright) pixels as the request asks, blurring its boxes (given in the orientation the pixels were
/// turned from), and encodes them: the codecs' encoders, or libvips for TIFF, HEIF and AVIF. Frees the pixels.
static int mc_finish(struct mc_pixels *pixels, const struct mirror_codecs_request *request, int orientation, struct mirror_codecs_output *output,
                     struct mc_error *error) {
    int blurred = 0;
    int status = mc_blurs(request) ? mc_fit_blurred(pixels, request, orientation, &blurred, error) : mc_fit(pixels, request, error);
    if (status == 0)
        status = mc_codecs_write(request->output_format) ? mc_encode(pixels, request->output_format, request->quality, output, error)
                                                         : mc_vips_encode(pixels, request->output_format, request->quality, output, error);
    if (status == 0) output->blurred_boxes = blurred;
    mc_pixels_free(pixels);
    return status;
}

/// Through libvips: its thumbnail alone where that makes what is asked, else decoded whole by it and finished here.
static int mc_through_vips(const unsigned char *input, size_t length, const struct mirror_codecs_request *request, int orientation,
                           struct mirror_codecs_output *output, struct mc_error *error) {
    if (mc_vips_fits_alone(request)) return mc_vips_transform(input, length, request, output, error);
    struct mc_pixels pixels = {NULL, 0, 0, 0};
    int status = mc_vips_decode(input, length, request->output_format != MIRROR_CODECS_JPEG, &pixels, error);
    if (status != 0) return status;
    return mc_finish(&pixels, request, orientation, output, error);
}

enum mirror_codecs_status mirror_codecs_transform(const unsigned char *input, size_t length, const struct mirror_codecs_request *request,
                            struct mirror_codecs_output *output) {
    memset(output, 0, sizeof *output);
    struct mc_error error = {output->message, sizeof output->message};
    struct mc_plan plan;
    int status = mc_checked_plan(input, length, request, &plan, &error);
    if (status != 0) return status;
    // Boxes are given in the stored image's orientation; only a JPEG's is known here (libvips turns the rest upright
    // before anyone sees them, so their boxes are taken as upright).
    int orientation = request->input_format == MIRROR_CODECS_JPEG ? plan.jpeg.orientation : 1;
    if (plan.through_vips) return mc_through_vips(input, length, request, orientation, output, &error);
    if (request->input_format == MIRROR_CODECS_JPEG && request->output_format == MIRROR_CODECS_JPEG && !mc_blurs(request)) {
        status = mc_jpeg_planes(input, length, &plan.jpeg, request, output, &error);
        if (status != MC_DECLINED) return status;
        error.text[0] = 0;
    }
    struct mc_pixels pixels = {NULL, 0, 0, 0};
    status = mc_decode_planned(input, length, &plan, request, &pixels, &error);
    if (status == MC_DECLINED) {  // a JPEG TurboJPEG leaves to libvips
        error.text[0] = 0;
        if (!mc_vips_fits_alone(request)) {  // decoded whole, which the JPEG's plan did not count
            struct mc_plan whole = plan;  // its JPEG header, for libjpeg's own memory
            status = mc_plan_vips(input, length, request, &whole, &error);
            if (status == 0) status = mc_within_limit(&whole, request, &error);
            if (status != 0) return status;
        }
        return mc_through_vips(input, length, request, orientation, output, &error);
    }
    if (status != 0) return status;
    return mc_finish(&pixels, request, orientation, output, &error);
}
