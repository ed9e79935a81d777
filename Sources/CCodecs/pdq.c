// PDQ, Meta's perceptual hash, written from its description (hashing.pdf in facebook/ThreatExchange), computed from a
// canonical rendering of the picture rather than from whichever pixels the decoder made.
//
// The rendering: the image's luma, decoded at a reduced scale (a JPEG by its DCT scaling straight to grey, a WebP by
// its scaled decode to the luma plane, PNG and GIF whole), is averaged by area onto a grid of PDQ_GRID x PDQ_GRID
// cells, each the mean of its share of the picture, and turned upright as EXIF says. Each hash is then PDQ of 64 x 64
// samples: the means of 64 x 64 equal cells over the grid (or over its centre without 1.5, 3 or 4.5 % of each border,
// for the trimmed hashes), weighed by area where a cell of the grid is cut, smoothed by [1 2 1] across and down (PDQ's
// two Jarosz box passes, at the scale of its sample grid); of their DCT, the 16 x 16 lowest frequencies but the
// constant ones (the first row and column); one bit per coefficient, set when it is above their median. The quality is
// PDQ's, of the samples before the smoothing: the sum of neighbours' differences, each truncated to whole percents of
// the range, scaled to 0-100.
//
// Why a grid: PDQ proper blurs the pixels it is given by a window a whole number of pixels wide (about 1/128 of a side)
// and reads the blur at 64 x 64 points, so the same picture served at 60 % of its size, or decoded at another DCT scale,
// is read at other places through another blur. On fine detail that moved the hash by 40-70 bits (a brick wall, a
// printed page: issue 45); a cell's mean is the same whatever resolution it is computed from. Measured on
// scripts/check/near_truth.py's ground truth (621 files of 120 pictures): the largest distance between two copies of a
// picture PDQ trusts went from 74 to 24 bits, and the closest two different pictures stayed 80 bits apart.
//
// What it costs: the decode. A JPEG of about 600 x 600 decodes to grey at 1/4 scale in about 1.1 ms, 0.9 of it the
// entropy decoding every scale pays; the grid and the four hashes take about 0.15 ms (BENCHMARKS.md).
#include "internal.h"
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

enum {
    PDQ_SIDE = 64,
    PDQ_FREQUENCIES = 16,
    PDQ_COEFFICIENTS = PDQ_FREQUENCIES * PDQ_FREQUENCIES,
    /// The canonical grid's side, in cells: two cells of it to a sample, so that a trim of 1.5 % moves by whole cells
    /// and fractions of them (256 gave the same distances within 2 bits, at four times the cells).
    PDQ_GRID = 128,
    /// The rare formats, and JPEGs TurboJPEG leaves, go through libvips at this size at most on their longer side.
    PDQ_VIPS_SIDE = 512,
};

/// Each trim's share of a side taken off each border, for `trimmed` (MIRROR_CODECS_PDQ_TRIMS of them).
static const double mc_pdq_trims[MIRROR_CODECS_PDQ_TRIMS] = {0.015, 0.03, 0.045};

/// The DCT's basis for the 16 lowest frequencies but the constant one, over 64 samples.
static float mc_pdq_dct[PDQ_FREQUENCIES][PDQ_SIDE];
static pthread_once_t mc_pdq_dct_once = PTHREAD_ONCE_INIT;

static void mc_pdq_make_dct(void) {
    double scale = sqrt(2.0 / PDQ_SIDE);
    for (int i = 0; i < PDQ_FREQUENCIES; i++)
        for (int j = 0; j < PDQ_SIDE; j++) mc_pdq_dct[i][j] = (float)(scale * cos(M_PI / 2 / PDQ_SIDE * (i + 1) * (2 * j + 1)));
}

// MARK: Cells

/// Which samples of a row one cell covers, and how much each weighs in the cell's mean: the first and the last sample
/// it overlaps (by the share of the cell each covers), and those between (each a whole sample's share).
struct mc_pdq_span {
    int first, last;
    float first_weight, last_weight, inner;
};

/// The spans of `count` equal cells laid over [start, start + extent) of a row of `length` samples (sample i covers
/// [i, i + 1)): a cell's mean is the sum of its samples by their weights. Every sample index is within the row.
static void mc_pdq_spans(int length, double start, double extent, int count, struct mc_pdq_span *spans) {
    double cell = extent / count;
    for (int k = 0; k < count; k++) {
        double a = start + cell * k, b = start + cell * (k + 1);
        int first = (int)a, last = (int)ceil(b) - 1;
        if (first > length - 1) first = length - 1;
        if (first < 0) first = 0;
        if (last > length - 1) last = length - 1;
        if (last < first) last = first;
        struct mc_pdq_span *span = &spans[k];
        span->first = first;
        span->last = last;
        span->inner = (float)(1 / cell);
        if (first == last) {  // the cell lies within one sample
            span->first_weight = 1;
            span->last_weight = 0;
        } else {
            span->first_weight = (float)((first + 1 - a) / cell);
            span->last_weight = (float)((b - last) / cell);
        }
    }
}

/// The cell means of a row of 8-bit samples.
static void mc_pdq_byte_cells(const unsigned char *row, const struct mc_pdq_span *spans, int count, float *out) {
    for (int k = 0; k < count; k++) {
        const struct mc_pdq_span *span = &spans[k];
        if (span->first == span->last) {
            out[k] = row[span->first];
            continue;
        }
        int64_t inner = 0;
        for (int i = span->first + 1; i < span->last; i++) inner += row[i];
        out[k] = row[span->first] * span->first_weight + row[span->last] * span->last_weight + (float)inner * span->inner;
    }
}

/// The cell means of a row of floats.
static void mc_pdq_float_cells(const float *row, const struct mc_pdq_span *spans, int count, float *out) {
    for (int k = 0; k < count; k++) {
        const struct mc_pdq_span *span = &spans[k];
        if (span->first == span->last) {
            out[k] = row[span->first];
            continue;
        }
        float inner = 0;
        for (int i = span->first + 1; i < span->last; i++) inner += row[i];
        out[k] = row[span->first] * span->first_weight + row[span->last] * span->last_weight + inner * span->inner;
    }
}

/// What hashing takes besides the decoded pixels: the grid and a scratch as large (the turned grid; the cells' rows),
/// a decoded row's luma and its cell means, the spans across.
static size_t mc_pdq_work_memory(int width) {
    size_t floats = mc_add((size_t)PDQ_GRID * PDQ_GRID * 2, PDQ_GRID);
    size_t bytes = mc_add(mc_mul(floats, sizeof(float)), (size_t)PDQ_GRID * sizeof(struct mc_pdq_span));
    return mc_add(bytes, width > 0 ? (size_t)width : 0);
}

/// Averages `pixels` (grey or RGB, 8 bits) onto the PDQ_GRID x PDQ_GRID `grid` (zeroed): each decoded row's cell
/// means across, added to the grid's rows it falls in by the share of each it covers. `luma` holds a row, `across`
/// PDQ_GRID floats, `spans` PDQ_GRID spans.
static void mc_pdq_render(const struct mc_pixels *pixels, float *grid, unsigned char *luma, float *across, struct mc_pdq_span *spans) {
    int width = pixels->width, height = pixels->height, channels = pixels->channels;
    mc_pdq_spans(width, 0, width, PDQ_GRID, spans);
    double cell = (double)height / PDQ_GRID;  // a grid row's height, in decoded rows
    size_t stride = (size_t)width * (size_t)channels;
    for (int y = 0; y < height; y++) {
        const unsigned char *p = pixels->data + (size_t)y * stride;
        if (channels >= 3) {  // BT.601's luma, as PDQ takes it (and JPEG's Y), rounded
            for (int x = 0; x < width; x++, p += channels) luma[x] = (unsigned char)((19595u * p[0] + 38470u * p[1] + 7471u * p[2] + 32768u) >> 16);
            p = luma;
        } else if (channels == 2) {
            for (int x = 0; x < width; x++) luma[x] = p[2 * x];
            p = luma;
        }
        mc_pdq_byte_cells(p, spans, PDQ_GRID, across);
        int first = (int)(y / cell), last = (int)ceil((y + 1) / cell) - 1;
        if (first > PDQ_GRID - 1) first = PDQ_GRID - 1;
        if (last > PDQ_GRID - 1) last = PDQ_GRID - 1;
        for (int j = first; j <= last; j++) {
            double top = j * cell > y ? j * cell : y, bottom = (j + 1) * cell < y + 1 ? (j + 1) * cell : y + 1;
            float weight = (float)((bottom - top) / cell);
            if (weight <= 0) continue;
            float *to = grid + (size_t)j * PDQ_GRID;
            for (int k = 0; k < PDQ_GRID; k++) to[k] += weight * across[k];
        }
    }
}

/// Turns the grid upright as EXIF `orientation` (1-8) says, through `scratch` (as large).
static void mc_pdq_orient(float *grid, int orientation, float *scratch) {
    if (orientation <= 1 || orientation > 8) return;
    const int n = PDQ_GRID;
    for (int y = 0; y < n; y++) {
        for (int x = 0; x < n; x++) {
            int nx, ny;  // where stored cell (x, y) goes, as jpeg.c's mc_orient moves a pixel
            mc_oriented(orientation, x, y, n, n, &nx, &ny);
            scratch[ny * n + nx] = grid[y * n + x];
        }
    }
    memcpy(grid, scratch, sizeof(float) * n * n);
}

// MARK: The hash

/// The means of 64 x 64 equal cells over the grid's centre without `trim` of each border. `scratch` holds
/// PDQ_GRID x 64 floats.
static void mc_pdq_cells(const float *grid, double trim, float samples[PDQ_SIDE][PDQ_SIDE], float *scratch) {
    struct mc_pdq_span spans[PDQ_SIDE];
    mc_pdq_spans(PDQ_GRID, PDQ_GRID * trim, PDQ_GRID * (1 - 2 * trim), PDQ_SIDE, spans);
    for (int y = 0; y < PDQ_GRID; y++) mc_pdq_float_cells(grid + y * PDQ_GRID, spans, PDQ_SIDE, scratch + y * PDQ_SIDE);
    for (int k = 0; k < PDQ_SIDE; k++) {
        const struct mc_pdq_span *span = &spans[k];
        const float *first = scratch + span->first * PDQ_SIDE, *last = scratch + span->last * PDQ_SIDE;
        if (span->first == span->last) {
            memcpy(samples[k], first, sizeof samples[k]);
            continue;
        }
        for (int j = 0; j < PDQ_SIDE; j++) samples[k][j] = first[j] * span->first_weight + last[j] * span->last_weight;
        for (int i = span->first + 1; i < span->last; i++)
            for (int j = 0; j < PDQ_SIDE; j++) samples[k][j] += scratch[i * PDQ_SIDE + j] * span->inner;
    }
}

/// [1 2 1] / 4 across and then down, the edges repeated.
static void mc_pdq_smooth(float samples[PDQ_SIDE][PDQ_SIDE]) {
    float line[PDQ_SIDE];
    for (int k = 0; k < PDQ_SIDE; k++) {
        memcpy(line, samples[k], sizeof line);
        for (int j = 0; j < PDQ_SIDE; j++) samples[k][j] = (line[j > 0 ? j - 1 : 0] + 2 * line[j] + line[j < PDQ_SIDE - 1 ? j + 1 : j]) / 4;
    }
    float above[PDQ_SIDE];
    memcpy(above, samples[0], sizeof above);
    for (int k = 0; k < PDQ_SIDE; k++) {
        memcpy(line, samples[k], sizeof line);
        const float *below = samples[k < PDQ_SIDE - 1 ? k + 1 : k];
        for (int j = 0; j < PDQ_SIDE; j++) samples[k][j] = (above[j] + 2 * line[j] + below[j]) / 4;
        memcpy(above, line, sizeof above);
    }
}

/// PDQ's quality of 64 x 64 samples: their neighbours' differences in whole percents of the range (so that a gentle
/// gradient counts nothing), summed and scaled to 0-100.
static int mc_pdq_quality(float samples[PDQ_SIDE][PDQ_SIDE]) {
    int gradients = 0;
    for (int i = 0; i < PDQ_SIDE; i++) {
        for (int j = 0; j < PDQ_SIDE; j++) {
            if (i + 1 < PDQ_SIDE) gradients += abs((int)((samples[i][j] - samples[i + 1][j]) * 100 / 255));
            if (j + 1 < PDQ_SIDE) gradients += abs((int)((samples[i][j] - samples[i][j + 1]) * 100 / 255));
        }
    }
    return gradients / 90 > 100 ? 100 : gradients / 90;
}

/// The value that would be at `nth` of `values` sorted (they are reordered).
static float mc_pdq_select(float *values, int count, int nth) {
    int low = 0, high = count - 1;
    while (low < high) {
        float pivot = values[low + (high - low) / 2];
        int i = low, j = high;
        while (i <= j) {
            while (values[i] < pivot) i++;
            while (values[j] > pivot) j--;
            if (i <= j) {
                float swap = values[i];
                values[i++] = values[j];
                values[j--] = swap;
            }
        }
        if (nth <= j) high = j;
        else if (nth >= i) low = i;
        else break;
    }
    return values[nth];
}

/// The 256 bits of 64 x 64 samples into `hash` (32 bytes, hex order).
static void mc_pdq_bits(float samples[PDQ_SIDE][PDQ_SIDE], unsigned char *hash) {
    pthread_once(&mc_pdq_dct_once, mc_pdq_make_dct);
    // D A D^T, with D the 16 x 64 basis: first down the columns, then across.
    float half[PDQ_FREQUENCIES][PDQ_SIDE];
    memset(half, 0, sizeof half);
    for (int i = 0; i < PDQ_FREQUENCIES; i++) {
        for (int k = 0; k < PDQ_SIDE; k++) {
            float basis = mc_pdq_dct[i][k];
            for (int j = 0; j < PDQ_SIDE; j++) half[i][j] += basis * samples[k][j];
        }
    }
    float coefficients[PDQ_COEFFICIENTS], order[PDQ_COEFFICIENTS];
    for (int i = 0; i < PDQ_FREQUENCIES; i++) {
        for (int j = 0; j < PDQ_FREQUENCIES; j++) {
            float sum = 0;
            for (int k = 0; k < PDQ_SIDE; k++) sum += half[i][k] * mc_pdq_dct[j][k];
            coefficients[i * PDQ_FREQUENCIES + j] = order[i * PDQ_FREQUENCIES + j] = sum;
        }
    }
    // The lower of the two middle values, as the reference's median finder returns.
    float median = mc_pdq_select(order, PDQ_COEFFICIENTS, PDQ_COEFFICIENTS / 2 - 1);
    for (int i = 0; i < PDQ_FREQUENCIES; i++) {
        unsigned word = 0;
        for (int j = 0; j < PDQ_FREQUENCIES; j++)
            if (coefficients[i * PDQ_FREQUENCIES + j] > median) word |= 1u << j;
        hash[2 * (PDQ_FREQUENCIES - 1 - i)] = (unsigned char)(word >> 8);
        hash[2 * (PDQ_FREQUENCIES - 1 - i) + 1] = (unsigned char)word;
    }
}

// MARK: Decoding

/// How an image will be decoded for its hash, and the memory that takes.
struct mc_pdq_plan {
    enum mirror_codecs_format format;
    int through_vips;
    int width;         // of the decoded pixels, at most
    int orientation;   // EXIF's, for a JPEG
    size_t bytes;
    struct mc_jpeg_header jpeg;
    struct mc_webp_header webp;
};

/// The libvips request of the rare formats: shrunk to PDQ_VIPS_SIDE on the longer side, as a PNG.
static struct mirror_codecs_request mc_pdq_vips_request(enum mirror_codecs_format format, size_t memory_limit) {
    struct mirror_codecs_request request = {format, MIRROR_CODECS_LONGER_SIDE, PDQ_VIPS_SIDE, 1, MIRROR_CODECS_PNG, 90, memory_limit, 0, NULL, 0};
    return request;
}

static int mc_pdq_plan_vips(const unsigned char *input, size_t length, enum mirror_codecs_format format, struct mc_pdq_plan *plan,
                            struct mc_error *error) {
    struct mirror_codecs_request request = mc_pdq_vips_request(format, 0);
    struct mc_plan vips;
    int status = mc_checked_plan(input, length, &request, &vips, error);
    if (status != 0) return status;
    plan->through_vips = 1;
    plan->width = PDQ_VIPS_SIDE;
    plan->orientation = 1;  // libvips turns it
    // libvips' own, then its PNG decoded back as RGB.
    plan->bytes = mc_add(vips.bytes, mc_image_bytes(PDQ_VIPS_SIDE, PDQ_VIPS_SIDE, 3));
    return 0;
}

/// The plan for `input`: which decoder, at what size, and the bytes it and the hash take (not yet checked).
static int mc_pdq_plan_of(const unsigned char *input, size_t length, enum mirror_codecs_format format, struct mc_pdq_plan *plan,
                          struct mc_error *error) {
    memset(plan, 0, sizeof *plan);
    plan->format = format;
    plan->orientation = 1;
    int status, height;
    switch (format) {
    case MIRROR_CODECS_JPEG:
        status = mc_jpeg_read_header(input, length, &plan->jpeg, error);
        if (status != 0) return status;
        if (plan->jpeg.components == 4) return mc_pdq_plan_vips(input, length, format, plan, error);  // CMYK and YCCK
        mc_jpeg_scaled_size(plan->jpeg.width, plan->jpeg.height, MIRROR_CODECS_CENTER_CROP, MIRROR_CODECS_PDQ_DECODE_SIDE, &plan->width, &height);
        plan->orientation = plan->jpeg.orientation;
        plan->bytes = mc_add(mc_jpeg_decoder_memory(&plan->jpeg), mc_image_bytes(plan->width, height, 1));
        break;
    case MIRROR_CODECS_PNG: {
        struct mc_png_header header;
        status = mc_png_read_header(input, length, &header, error);
        if (status != 0) return status;
        plan->width = header.width;
        // libpng: a few rows of up to 8 bytes a pixel (16-bit RGBA), and its zlib stream; the pixels, RGB at most.
        size_t rows = mc_add(mc_mul(mc_image_bytes(header.width, 1, 8), 4), 1 << 20);
        plan->bytes = mc_add(rows, mc_image_bytes(header.width, header.height, 3));
        break;
    }
    case MIRROR_CODECS_WEBP:
        status = mc_webp_read_header(input, length, &plan->webp, error);
        if (status != 0) return status;
        if (plan->webp.has_animation) return mc_pdq_plan_vips(input, length, format, plan, error);  // libvips takes the first frame
        mc_webp_scaled_size(&plan->webp, MIRROR_CODECS_CENTER_CROP, MIRROR_CODECS_PDQ_DECODE_SIDE, &plan->width, &height);
        // libwebp's own; the luma plane, the chroma planes (a quarter of it each) and alpha: 3 bytes a pixel at most.
        plan->bytes = mc_add(mc_webp_decoder_memory(&plan->webp), mc_image_bytes(plan->width, height, 3));
        break;
    case MIRROR_CODECS_GIF: {
        struct mc_gif_header header;
        status = mc_gif_read_header(input, length, &header, error);
        if (status != 0) return status;
        plan->width = header.width;
        plan->bytes = mc_add(mc_image_bytes(header.width, header.height, 1), 1 << 20);  // the screen as luma; giflib's row
        break;
    }
    default:
        return mc_pdq_plan_vips(input, length, format, plan, error);
    }
    plan->bytes = mc_add(plan->bytes, mc_pdq_work_memory(plan->width));
    return 0;
}

/// The plan, checked against `memory_limit` (0: none) and PTRDIFF_MAX.
static int mc_pdq_checked_plan(const unsigned char *input, size_t length, enum mirror_codecs_format format, size_t memory_limit,
                               struct mc_pdq_plan *plan, struct mc_error *error) {
    int status = mc_pdq_plan_of(input, length, format, plan, error);
    if (status != 0) return status;
    // No allocation passes PTRDIFF_MAX (nor does Swift's Int): found by the fuzzer, a PNG declaring 1,195,787,832 x
    // 929,103,872 pixels was estimated as OK at more than that, a negative number of bytes to the caller.
    if (plan->bytes > (size_t)PTRDIFF_MAX) return mc_fail(error, MIRROR_CODECS_TOO_LARGE, "decoding it would take more memory than there is");
    if (memory_limit && plan->bytes > memory_limit)
        return mc_fail(error, MIRROR_CODECS_TOO_LARGE, "hashing it would take %zu MB, more than the %zu MB a decode may use",
                       (plan->bytes + 999999) / 1000000, memory_limit / 1000000);
    return 0;
}

/// Decodes through libvips (its memory checked first), shrunk to PDQ_VIPS_SIDE on the longer side and written as PNG,
/// then read back.
static int mc_pdq_decode_vips(const unsigned char *input, size_t length, enum mirror_codecs_format format, size_t memory_limit,
                              struct mc_pixels *pixels, struct mc_error *error) {
    struct mirror_codecs_request request = mc_pdq_vips_request(format, memory_limit);
    struct mc_plan plan;
    int status = mc_checked_plan(input, length, &request, &plan, error);
    if (status != 0) return status;
    struct mirror_codecs_output output;
    memset(&output, 0, sizeof output);
    status = mc_vips_transform(input, length, &request, &output, error);
    if (status != 0) return status;
    status = mc_png_decode(output.data, output.length, false, pixels, error);
    mirror_codecs_free(output.data);
    return status;
}

/// Decodes as planned: grey (or RGB) pixels, alpha onto white. A JPEG TurboJPEG leaves goes to libvips.
static int mc_pdq_decode(const unsigned char *input, size_t length, const struct mc_pdq_plan *plan, size_t memory_limit,
                         struct mc_pixels *pixels, struct mc_error *error) {
    int status = MC_DECLINED;
    if (!plan->through_vips) {
        switch (plan->format) {
        case MIRROR_CODECS_JPEG:
            status = mc_jpeg_decode_luma(input, length, &plan->jpeg, MIRROR_CODECS_PDQ_DECODE_SIDE, pixels, error);
            break;
        case MIRROR_CODECS_PNG: status = mc_png_decode_luma(input, length, pixels, error); break;
        case MIRROR_CODECS_WEBP:
            status = mc_webp_decode_luma(input, length, &plan->webp, MIRROR_CODECS_PDQ_DECODE_SIDE, pixels, error);
            break;
        default: status = mc_gif_decode_luma(input, length, pixels, error); break;
        }
    }
    if (status == MC_DECLINED) {
        error->text[0] = 0;
        status = mc_pdq_decode_vips(input, length, plan->format, memory_limit, pixels, error);
    }
    return status;
}

enum mirror_codecs_status mirror_codecs_pdq_estimate(const unsigned char *input, size_t length, enum mirror_codecs_format input_format,
                                                     size_t *bytes, char *message, size_t capacity) {
    struct mc_error error = {message, capacity};
    message[0] = 0;
    *bytes = 0;
    struct mc_pdq_plan plan;
    int status = mc_pdq_checked_plan(input, length, input_format, 0, &plan, &error);
    if (status == 0) *bytes = plan.bytes;
    return status;
}

enum mirror_codecs_status mirror_codecs_pdq_hash(const unsigned char *input, size_t length, enum mirror_codecs_format input_format,
                                                 size_t memory_limit, struct mirror_codecs_pdq *output) {
    memset(output, 0, sizeof *output);
    struct mc_error error = {output->message, sizeof output->message};
    struct mc_pdq_plan plan;
    int status = mc_pdq_checked_plan(input, length, input_format, memory_limit, &plan, &error);
    if (status != 0) return status;
    struct mc_pixels pixels = {NULL, 0, 0, 0};
    status = mc_pdq_decode(input, length, &plan, memory_limit, &pixels, &error);
    if (status != 0) return status;
    // The work memory as mc_pdq_work_memory counts it (for the width decoded, at most the planned one).
    const size_t cells = (size_t)PDQ_GRID * PDQ_GRID;
    float *grid = calloc(cells * 2 + PDQ_GRID, sizeof(float));
    struct mc_pdq_span *spans = malloc(PDQ_GRID * sizeof(struct mc_pdq_span));
    unsigned char *luma = malloc((size_t)pixels.width);
    if (!grid || !spans || !luma) {
        status = mc_fail(&error, MIRROR_CODECS_FAILED, "out of memory for the hash's grid");
    } else {
        float *scratch = grid + cells, *across = scratch + cells;
        mc_pdq_render(&pixels, grid, luma, across, spans);
        mc_pdq_orient(grid, plan.orientation, scratch);
        float samples[PDQ_SIDE][PDQ_SIDE];
        mc_pdq_cells(grid, 0, samples, scratch);
        output->quality = mc_pdq_quality(samples);
        mc_pdq_smooth(samples);
        mc_pdq_bits(samples, output->hash);
        for (int t = 0; t < MIRROR_CODECS_PDQ_TRIMS; t++) {
            mc_pdq_cells(grid, mc_pdq_trims[t], samples, scratch);
            mc_pdq_smooth(samples);
            mc_pdq_bits(samples, output->trimmed[t]);
        }
        output->width = pixels.width;
        output->height = pixels.height;
    }
    free(grid);
    free(spans);
    free(luma);
    mc_pixels_free(&pixels);
    return status;
}
