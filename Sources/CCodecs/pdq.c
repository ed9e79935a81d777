// PDQ, Meta's perceptual hash, written from its description (hashing.pdf in facebook/ThreatExchange): the image's
// luma; a Jarosz filter (two passes of box blurs across and then down, each window about 1/128 of its side); the
// 64 x 64 samples at the centres of a grid over it; of their DCT, the 16 x 16 lowest frequencies but the constant
// ones (the first row and column); one bit per coefficient, set when it is above their median. Its quality is the
// sum of the 64 x 64 samples' differences between neighbours, scaled to 0-100. Beside the whole image's hash, the same
// of its centre without 1.5, 3 and 4.5 % of each border (MIRROR_CODECS_PDQ_TRIMS), for copies trimmed at the edges.
//
// The reference hashes the whole decoded image. Here an image is decoded at the smallest scale that keeps
// MIRROR_CODECS_PDQ_DECODE_SIDE pixels on its shorter side (a JPEG's DCT scaling averages 8 x 8 blocks, WebP scales
// as it decodes), and an image decoded larger is averaged down by a whole factor first: both are box averages over
// far fewer pixels than the Jarosz windows span, so the hash moves by a few bits at most (measured against the
// reference in scripts/near_truth.py) for a decode many times cheaper.
#include "internal.h"
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

enum { PDQ_SIDE = 64, PDQ_FREQUENCIES = 16 };

/// The rare formats, and JPEGs TurboJPEG leaves, go through libvips at this size at most on their longer side.
enum { PDQ_VIPS_SIDE = 512 };

/// The DCT's basis for the 16 lowest frequencies but the constant one, over 64 samples.
static float mc_pdq_dct[PDQ_FREQUENCIES][PDQ_SIDE];
static pthread_once_t mc_pdq_dct_once = PTHREAD_ONCE_INIT;

static void mc_pdq_make_dct(void) {
    double scale = sqrt(2.0 / PDQ_SIDE);
    for (int i = 0; i < PDQ_FREQUENCIES; i++)
        for (int j = 0; j < PDQ_SIDE; j++) mc_pdq_dct[i][j] = (float)(scale * cos(M_PI / 2 / PDQ_SIDE * (i + 1) * (2 * j + 1)));
}

/// A Jarosz window for a side of `length` samples: about length / 128, at least 1 and never more than `length`.
static int mc_pdq_window(int length) { return (length + 2 * PDQ_SIDE - 1) / (2 * PDQ_SIDE); }

/// A box blur of `length` samples `stride` apart, the window centred and shrunk at both ends (the reference's).
static void mc_pdq_box(const float *in, float *out, int length, size_t stride, int window) {
    int half = (window + 2) / 2;
    int lead = half - 1, start = window - half + 1, middle = length - window, tail = half - 1;
    size_t left = 0, right = 0, at = 0;
    float sum = 0;
    int count = 0;
    for (int i = 0; i < lead; i++, right += stride) {
        sum += in[right];
        count++;
    }
    for (int i = 0; i < start; i++, right += stride, at += stride) {
        sum += in[right];
        count++;
        out[at] = sum / count;
    }
    for (int i = 0; i < middle; i++, left += stride, right += stride, at += stride) {
        sum += in[right] - in[left];
        out[at] = sum / count;
    }
    for (int i = 0; i < tail; i++, left += stride, at += stride) {
        sum -= in[left];
        count--;
        out[at] = sum / count;
    }
}

/// Each trim's share of a side taken off each border, for `trimmed` (MIRROR_CODECS_PDQ_TRIMS of them).
static const double mc_pdq_trims[MIRROR_CODECS_PDQ_TRIMS] = {0.015, 0.03, 0.045};

/// `mc_pdq_box` down every column of `width` x `height` samples at once, a row at a time (`sums` holds `width`): the
/// same additions in the same order per column, so the same result, but reading the rows in order rather than
/// striding down each column (a column at a time was 38 % of `mirror hash`'s samples, by `perf record`).
static void mc_pdq_box_down(const float *in, float *out, int width, int height, int window, float *sums) {
    int half = (window + 2) / 2;
    int lead = half - 1, start = window - half + 1, middle = height - window, tail = half - 1;
    size_t w = (size_t)width, left = 0, right = 0, at = 0;
    int count = 0;
    memset(sums, 0, w * sizeof(float));
    for (int i = 0; i < lead; i++, right++) {
        for (size_t x = 0; x < w; x++) sums[x] += in[right * w + x];
        count++;
    }
    for (int i = 0; i < start; i++, right++, at++) {
        count++;
        for (size_t x = 0; x < w; x++) {
            sums[x] += in[right * w + x];
            out[at * w + x] = sums[x] / count;
        }
    }
    for (int i = 0; i < middle; i++, left++, right++, at++) {
        for (size_t x = 0; x < w; x++) {
            sums[x] += in[right * w + x] - in[left * w + x];
            out[at * w + x] = sums[x] / count;
        }
    }
    for (int i = 0; i < tail; i++, left++, at++) {
        count--;
        for (size_t x = 0; x < w; x++) {
            sums[x] -= in[left * w + x];
            out[at * w + x] = sums[x] / count;
        }
    }
}

/// PDQ of `width` x `height` luma samples (0-255) in `luma`, rows `stride` samples apart: into `hash` (32 bytes, hex
/// order), with its quality when `quality` is not NULL. `work` and `scratch` hold `width` x `height` samples each,
/// `sums` `width`.
static void mc_pdq_of_luma(const float *luma, size_t stride, float *work, float *scratch, float *sums, int width, int height,
                           unsigned char *hash, int *quality) {
    pthread_once(&mc_pdq_dct_once, mc_pdq_make_dct);
    for (int y = 0; y < height; y++) memcpy(work + (size_t)y * width, luma + (size_t)y * stride, (size_t)width * sizeof(float));
    int across = mc_pdq_window(width), down = mc_pdq_window(height);
    for (int pass = 0; pass < 2; pass++) {
        for (int y = 0; y < height; y++) mc_pdq_box(work + (size_t)y * width, scratch + (size_t)y * width, width, 1, across);
        mc_pdq_box_down(scratch, work, width, height, down, sums);
    }
    float samples[PDQ_SIDE][PDQ_SIDE];
    for (int i = 0; i < PDQ_SIDE; i++) {
        size_t y = (size_t)((i + 0.5) * height / PDQ_SIDE);
        for (int j = 0; j < PDQ_SIDE; j++) samples[i][j] = work[y * (size_t)width + (size_t)((j + 0.5) * width / PDQ_SIDE)];
    }

    if (quality) {
        int gradients = 0;
        for (int i = 0; i < PDQ_SIDE; i++) {
            for (int j = 0; j < PDQ_SIDE; j++) {
                if (i + 1 < PDQ_SIDE) gradients += abs((int)((samples[i][j] - samples[i + 1][j]) * 100 / 255));
                if (j + 1 < PDQ_SIDE) gradients += abs((int)((samples[i][j] - samples[i][j + 1]) * 100 / 255));
            }
        }
        *quality = gradients / 90 > 100 ? 100 : gradients / 90;
    }

    // D A D^T, with D the 16 x 64 basis: first down the columns, then across.
    float half[PDQ_FREQUENCIES][PDQ_SIDE];
    for (int i = 0; i < PDQ_FREQUENCIES; i++) {
        for (int j = 0; j < PDQ_SIDE; j++) {
            float sum = 0;
            for (int k = 0; k < PDQ_SIDE; k++) sum += mc_pdq_dct[i][k] * samples[k][j];
            half[i][j] = sum;
        }
    }
    float coefficients[PDQ_FREQUENCIES * PDQ_FREQUENCIES], sorted[PDQ_FREQUENCIES * PDQ_FREQUENCIES];
    for (int i = 0; i < PDQ_FREQUENCIES; i++) {
        for (int j = 0; j < PDQ_FREQUENCIES; j++) {
            float sum = 0;
            for (int k = 0; k < PDQ_SIDE; k++) sum += half[i][k] * mc_pdq_dct[j][k];
            coefficients[i * PDQ_FREQUENCIES + j] = sorted[i * PDQ_FREQUENCIES + j] = sum;
        }
    }
    // The lower of the two middle values, as the reference's median finder returns.
    for (int i = 1; i < PDQ_FREQUENCIES * PDQ_FREQUENCIES; i++) {
        float value = sorted[i];
        int k = i;
        for (; k > 0 && sorted[k - 1] > value; k--) sorted[k] = sorted[k - 1];
        sorted[k] = value;
    }
    float median = sorted[PDQ_FREQUENCIES * PDQ_FREQUENCIES / 2 - 1];
    for (int i = 0; i < PDQ_FREQUENCIES; i++) {
        unsigned word = 0;
        for (int j = 0; j < PDQ_FREQUENCIES; j++)
            if (coefficients[i * PDQ_FREQUENCIES + j] > median) word |= 1u << j;
        hash[2 * (PDQ_FREQUENCIES - 1 - i)] = (unsigned char)(word >> 8);
        hash[2 * (PDQ_FREQUENCIES - 1 - i) + 1] = (unsigned char)word;
    }
}

/// The whole image's hash and quality, then each trimmed centre's hash.
static void mc_pdq_all(const float *luma, float *work, float *scratch, float *sums, int width, int height, struct mirror_codecs_pdq *output) {
    mc_pdq_of_luma(luma, (size_t)width, work, scratch, sums, width, height, output->hash, &output->quality);
    for (int t = 0; t < MIRROR_CODECS_PDQ_TRIMS; t++) {
        int dx = (int)(width * mc_pdq_trims[t] + 0.5), dy = (int)(height * mc_pdq_trims[t] + 0.5);
        if (width - 2 * dx < 1 || height - 2 * dy < 1) dx = dy = 0;
        mc_pdq_of_luma(luma + (size_t)dy * width + dx, (size_t)width, work, scratch, sums, width - 2 * dx, height - 2 * dy, output->trimmed[t],
                       NULL);
    }
}

/// PDQ of decoded pixels (grey, RGB or RGBA, 8 bits), averaged down by `factor` in each direction first (remainders
/// at the right and bottom edges dropped). `used` is what the decode took; the luma buffers are checked against
/// `memory_limit` with it before they are allocated.
static int mc_pdq_of_pixels(const struct mc_pixels *pixels, int factor, size_t used, size_t memory_limit, struct mirror_codecs_pdq *output,
                            struct mc_error *error) {
    int width = pixels->width / factor, height = pixels->height / factor;
    if (width < 1 || height < 1) return mc_fail(error, MIRROR_CODECS_FAILED, "no pixels to hash");
    size_t bytes = mc_mul(mc_add(mc_image_bytes(width, height, 3), (size_t)width), sizeof(float));
    if (bytes == SIZE_MAX || (memory_limit && mc_add(used, bytes) > memory_limit))
        return mc_fail(error, MIRROR_CODECS_TOO_LARGE, "hashing it would take more memory than a decode may use");
    float *luma = malloc(bytes);
    if (!luma) return mc_fail(error, MIRROR_CODECS_FAILED, "out of memory for %d x %d samples", width, height);
    float *work = luma + (size_t)width * height, *scratch = work + (size_t)width * height, *sums = scratch + (size_t)width * height;
    int channels = pixels->channels;
    size_t stride = (size_t)pixels->width * channels;
    float area = (float)factor * factor;
    for (int y = 0; y < height; y++) {
        for (int x = 0; x < width; x++) {
            float sum = 0;
            for (int dy = 0; dy < factor; dy++) {
                const unsigned char *p = pixels->data + ((size_t)y * factor + dy) * stride + (size_t)x * factor * channels;
                for (int dx = 0; dx < factor; dx++, p += channels)
                    sum += channels < 3 ? p[0] : 0.299f * p[0] + 0.587f * p[1] + 0.114f * p[2];
            }
            luma[(size_t)y * width + x] = sum / area;
        }
    }
    mc_pdq_all(luma, work, scratch, sums, width, height, output);
    output->width = width;
    output->height = height;
    free(luma);
    return MIRROR_CODECS_OK;
}

/// Decodes through libvips, shrunk to PDQ_VIPS_SIDE on the longer side and written as PNG, then read back.
static int mc_pdq_decode_vips(const unsigned char *input, size_t length, enum mirror_codecs_format input_format, size_t memory_limit, struct mc_pixels *pixels,
                              size_t *used, struct mc_error *error) {
    struct mirror_codecs_request request = {input_format, MIRROR_CODECS_KEEP_RATIO, PDQ_VIPS_SIDE, 1, MIRROR_CODECS_PNG, 90, memory_limit};
    struct mc_plan plan;
    int status = mc_checked_plan(input, length, &request, &plan, error);
    if (status != 0) return status;
    struct mirror_codecs_output output;
    memset(&output, 0, sizeof output);
    status = mc_vips_transform(input, length, &request, &output, error);
    if (status != 0) return status;
    status = mc_png_decode(output.data, output.length, 0, pixels, error);
    mirror_codecs_free(output.data);
    *used = plan.bytes;
    return status;
}

enum mirror_codecs_status mirror_codecs_pdq_estimate(const unsigned char *input, size_t length, enum mirror_codecs_format input_format, size_t *bytes, char *message, size_t capacity) {
    struct mc_error error = {message, capacity};
    message[0] = 0;
    *bytes = 0;
    struct mirror_codecs_request request = {input_format, MIRROR_CODECS_CENTER_CROP, MIRROR_CODECS_PDQ_DECODE_SIDE, 1, MIRROR_CODECS_JPEG, 90, 0};
    struct mc_plan plan;
    int status = mc_checked_plan(input, length, &request, &plan, &error);
    if (status == 0 && plan.through_vips) {
        struct mirror_codecs_request vips = {input_format, MIRROR_CODECS_KEEP_RATIO, PDQ_VIPS_SIDE, 1, MIRROR_CODECS_PNG, 90, 0};
        status = mc_checked_plan(input, length, &vips, &plan, &error);
    }
    if (status != 0) return status;
    // The luma samples (three floats each) are at most the decoded pixels, which the plan counts at 3 bytes or more.
    *bytes = mc_add(plan.bytes, mc_mul(plan.bytes, 4));
    // No allocation passes PTRDIFF_MAX (nor does Swift's Int): found by the fuzzer, a PNG declaring 1,195,787,832 x
    // 929,103,872 pixels was estimated as OK at more than that, a negative number of bytes to the caller.
    if (*bytes > (size_t)PTRDIFF_MAX) {
        *bytes = 0;
        return mc_fail(&error, MIRROR_CODECS_TOO_LARGE, "decoding it would take more memory than there is");
    }
    return 0;
}

enum mirror_codecs_status mirror_codecs_pdq_hash(const unsigned char *input, size_t length, enum mirror_codecs_format input_format, size_t memory_limit,
                           struct mirror_codecs_pdq *output) {
    memset(output, 0, sizeof *output);
    struct mc_error error = {output->message, sizeof output->message};
    // Decoded as for a resize whose shorter side is the decode side, without alpha (onto white, as a JPEG output).
    struct mirror_codecs_request request = {input_format, MIRROR_CODECS_CENTER_CROP, MIRROR_CODECS_PDQ_DECODE_SIDE, 1, MIRROR_CODECS_JPEG, 90,
                                            memory_limit};
    struct mc_plan plan;
    int status = mc_checked_plan(input, length, &request, &plan, &error);
    if (status != 0) return status;
    struct mc_pixels pixels = {NULL, 0, 0, 0};
    size_t used = plan.bytes;
    status = plan.through_vips ? MC_DECLINED : mc_decode_planned(input, length, &plan, &request, &pixels, &error);
    if (status == MC_DECLINED) {
        error.text[0] = 0;
        status = mc_pdq_decode_vips(input, length, input_format, memory_limit, &pixels, &used, &error);
    }
    if (status != 0) return status;
    int shorter = pixels.width < pixels.height ? pixels.width : pixels.height;
    int factor = shorter / MIRROR_CODECS_PDQ_DECODE_SIDE;
    status = mc_pdq_of_pixels(&pixels, factor > 1 ? factor : 1, used, memory_limit, output, &error);
    mc_pixels_free(&pixels);
    return status;
}
