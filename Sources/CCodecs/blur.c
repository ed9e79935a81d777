// Blurring boxes of an image (`--blur-col`), as img2dataset's BoundingBoxBlurrer does (its blurrer.py, after
// princetonvisualai/imagenet-face-obfuscation): each box is grown by a tenth of its longer side on every side; one
// Gaussian, of sigma a tenth of the longest such side over all the boxes, blurs the image and a 0/1 mask of the grown
// boxes alike; the result is image · (1 − blurred mask) + blurred image · blurred mask. Far from every box the blurred
// mask is exactly 0 and the pixels are left as they were.
//
// What a row says is hostile, so the work is bounded by the image, not by the row: at most
// MIRROR_CODECS_MAX_BLUR_BOXES boxes; coordinates clamped to the image before anything is measured, so sigma is at most
// a tenth of the image's longer side; only the rows and columns the blurred mask reaches are blurred. A kernel of
// radius up to MC_BLUR_DIRECT_RADIUS is applied tap by tap: 2·ceil(4σ) + 1 taps, the kernel img2dataset's blurrer
// asked for when it was written (`gaussian_blur(img, ksize=2·ceil(4σ)+1, sigma=σ)`), edges reflected as OpenCV's
// BORDER_REFLECT_101 does. A wider one (a box side past 60 pixels) is three box filters of running sums whose widths
// make the same variance (Kovesi, "Fast almost-Gaussian filtering", 2010), so a pixel costs the same whatever sigma is.
//
// What it costs (200 photos of 1100 × 735 with 1-3 faces of 5-15 % of their width each, fitted to 512 px as JPEG, from
// a loopback server, user + system CPU of the whole run, medians of 5 interleaved runs): 4.2 ms an image more than
// without --blur-col, of which 1.3 ms is the RGB path a JPEG with boxes takes instead of the YCbCr planes path (boxes
// that blur nothing cost that much) and 3.0 ms the blur. Two things measured away: a division in mc_reflect for every
// sample of a box filter (now only at a line's ends; 12 % of such a run's samples before) and one per output sample
// down the columns.
#include "internal.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/// The widest kernel applied tap by tap (σ up to 6): 49 taps a pixel and a pass.
#define MC_BLUR_DIRECT_RADIUS 24

struct mc_kernel {
    int radius;      // how far a pixel reaches: ceil(4σ)
    float *weights;  // taps 0..radius of the Gaussian (symmetric), or NULL for the box filters
    int boxes[3];    // the box filters' radii, when weights is NULL
};

struct mc_rect {
    int x0, y0, x1, y1;  // [x0, x1) × [y0, y1)
};

/// Where index `i` of a line of `n` lands when the line is reflected about its ends without repeating them (OpenCV's
/// BORDER_REFLECT_101: …, 2, 1, | 0, 1, 2, …, n−1, | n−2, …), as many times as it takes.
static int mc_reflect(long i, int n) {
    if (n == 1) return 0;
    long period = 2 * (long)n - 2;
    i %= period;
    if (i < 0) i += period;
    return (int)(i < n ? i : period - i);
}

/// One box filter of radius `r` over a line of `n`: `out[i]` the mean of `in[i − r … i + r]`, reflected at the ends
/// (mc_reflect's division only there: everywhere else it cost more than the filter, 12 % of a resize's samples).
static void mc_box_pass(const float *in, float *out, int n, int r) {
    double sum = 0;  // in double: a running sum over 65,535 samples must not drift
    for (long k = -r; k <= r; k++) sum += in[mc_reflect(k, n)];
    double scale = 1 / (2.0 * r + 1);
    // Where the window leaves the line (reflected), then where it is inside it (no test at all), then the far end.
    int inside = r < n - r - 1 ? r : n, beyond = n - r - 1 > inside ? n - r - 1 : inside;
    int i = 0;
    for (; i < inside; i++) {
        out[i] = (float)(sum * scale);
        sum += in[mc_reflect((long)i + r + 1, n)] - in[mc_reflect((long)i - r, n)];
    }
    for (; i < beyond; i++) {
        out[i] = (float)(sum * scale);
        sum += in[i + r + 1] - in[i - r];
    }
    for (; i < n; i++) {
        out[i] = (float)(sum * scale);
        sum += in[mc_reflect((long)i + r + 1, n)] - in[mc_reflect((long)i - r, n)];
    }
}

/// Blurs a line of `n` samples and writes its samples `from` to `to` (exclusive) into `out` from index 0. `scratch`
/// holds 2·n floats.
static void mc_blur_line(const float *in, int n, float *out, int from, int to, const struct mc_kernel *kernel, float *scratch) {
    if (!kernel->weights) {
        // Only the part of the line the output reaches: the box filters together reach less than the kernel's radius,
        // so what a cut end reflects (where it is not the line's own end) never gets to samples `from` to `to`.
        int low = from - kernel->radius < 0 ? 0 : from - kernel->radius, high = to + kernel->radius > n ? n : to + kernel->radius;
        int length = high - low;
        float *a = scratch, *b = scratch + length;
        mc_box_pass(in + low, a, length, kernel->boxes[0]);
        mc_box_pass(a, b, length, kernel->boxes[1]);
        mc_box_pass(b, a, length, kernel->boxes[2]);
        memcpy(out, a + (from - low), (size_t)(to - from) * sizeof *out);
        return;
    }
    int r = kernel->radius;
    const float *w = kernel->weights;
    for (int i = from; i < to; i++) {
        float sum = w[0] * in[i];
        if (i - r >= 0 && i + r < n) {
            for (int j = 1; j <= r; j++) sum += w[j] * (in[i - j] + in[i + j]);
        } else {
            for (int j = 1; j <= r; j++) sum += w[j] * (in[mc_reflect((long)i - j, n)] + in[mc_reflect((long)i + j, n)]);
        }
        out[i - from] = sum;
    }
}

/// Where the rows blurred down the columns go: the blurred mask's plane, or blended into one channel of the image.
struct mc_blur_target {
    float *coverage;                  // the blurred mask, `columns` a row, from the first row reached
    struct mc_pixels *pixels;         // the image (when blending)
    int channel, x0, columns, y0;     // the channel blended, the first column and row reached, the columns
    bool is_mask;
};

/// Takes image row `y`'s blurred samples `row` (columns x0 onwards): into the mask's plane, or blended into the image
/// where the blurred mask is above 0 (exactly 0 where no grown box is within the kernel's reach: left as it was).
static void mc_take_row(const struct mc_blur_target *target, int y, const float *row) {
    float *coverage = target->coverage + (size_t)(y - target->y0) * (size_t)target->columns;
    if (target->is_mask) {
        memcpy(coverage, row, (size_t)target->columns * sizeof *row);
        return;
    }
    int channels = target->pixels->channels;
    unsigned char *pixel = target->pixels->data + ((size_t)y * (size_t)target->pixels->width + (size_t)target->x0) * (size_t)channels
                           + (size_t)target->channel;
    for (int x = 0; x < target->columns; x++, pixel += channels) {
        float m = coverage[x];
        if (m <= 0) continue;
        float value = *pixel + m * (row[x] - *pixel);
        *pixel = (unsigned char)(value <= 0 ? 0 : value >= 255 ? 255 : value + 0.5f);
    }
}

/// One box filter of radius `r` down the columns of `from` (`rows` × `columns`), reflected at its top and bottom, row
/// after row (each access a whole row, in order): into `to`, or, with `to` NULL, each row from `first` to `last`
/// (exclusive) handed to `target` as image row `offset` + its index. `sums` holds `columns` doubles, `row` `columns` floats.
static void mc_box_down(const float *from, float *to, int rows, int columns, int r, double *sums, float *row, int first, int last,
                        const struct mc_blur_target *target, int offset) {
    size_t stride = (size_t)columns;
    for (int x = 0; x < columns; x++) sums[x] = 0;
    for (long k = -r; k <= r; k++) {
        const float *in = from + (size_t)mc_reflect(k, rows) * stride;
        for (int x = 0; x < columns; x++) sums[x] += in[x];
    }
    double scale = 1 / (2.0 * r + 1);
    for (int y = 0; y < rows; y++) {
        float *out = to ? to + (size_t)y * stride : row;
        if (to || (y >= first && y < last)) {
            for (int x = 0; x < columns; x++) out[x] = (float)(sums[x] * scale);
            if (!to) mc_take_row(target, offset + y, out);
        }
        const float *enter = from + (size_t)mc_reflect((long)y + r + 1, rows) * stride, *leave = from + (size_t)mc_reflect((long)y - r, rows) * stride;
        for (int x = 0; x < columns; x++) sums[x] += enter[x] - leave[x];
    }
}

/// Blurs `plane` (`rows` × `columns`: the horizontal pass) down its columns, handing rows `first` to `last` (exclusive)
/// to `target` as image row `offset` + their index. Box filters use `other` (a plane of the same size) and `sums`.
static void mc_blur_down(float *plane, float *other, int rows, int columns, int first, int last, const struct mc_kernel *kernel,
                         double *sums, float *row, const struct mc_blur_target *target, int offset) {
    if (!kernel->weights) {
        mc_box_down(plane, other, rows, columns, kernel->boxes[0], sums, row, 0, rows, NULL, 0);
        mc_box_down(other, plane, rows, columns, kernel->boxes[1], sums, row, 0, rows, NULL, 0);
        mc_box_down(plane, NULL, rows, columns, kernel->boxes[2], sums, row, first, last, target, offset);
        return;
    }
    int r = kernel->radius;
    const float *w = kernel->weights;
    size_t stride = (size_t)columns;
    for (int y = first; y < last; y++) {
        const float *center = plane + (size_t)y * stride;
        for (int x = 0; x < columns; x++) row[x] = w[0] * center[x];
        for (int j = 1; j <= r; j++) {
            const float *above = plane + (size_t)mc_reflect((long)y - j, rows) * stride, *below = plane + (size_t)mc_reflect((long)y + j, rows) * stride;
            for (int x = 0; x < columns; x++) row[x] += w[j] * (above[x] + below[x]);
        }
        mc_take_row(target, offset + y, row);
    }
}

/// The Gaussian of `sigma` as taps or as three box filters; FAILED when its taps cannot be allocated.
static int mc_kernel_of(double sigma, struct mc_kernel *kernel, struct mc_error *error) {
    memset(kernel, 0, sizeof *kernel);
    kernel->radius = (int)ceil(4 * sigma);
    if (kernel->radius < 1) kernel->radius = 1;
    if (kernel->radius > MC_BLUR_DIRECT_RADIUS) {
        // Three boxes of widths wl or wl + 2 whose variances add up to σ² (each box of width w: (w² − 1) / 12).
        double ideal = sqrt(12 * sigma * sigma / 3 + 1);
        int lower = (int)floor(ideal);
        if (lower % 2 == 0) lower--;
        int upper = lower + 2;
        double split = (12 * sigma * sigma - 3.0 * lower * lower - 12.0 * lower - 9) / (-4.0 * lower - 4);
        int lowers = (int)lround(split);
        for (int index = 0; index < 3; index++) kernel->boxes[index] = ((index < lowers ? lower : upper) - 1) / 2;
        return 0;
    }
    kernel->weights = malloc((size_t)(kernel->radius + 1) * sizeof *kernel->weights);
    if (!kernel->weights) return mc_fail(error, MIRROR_CODECS_FAILED, "out of memory for the blur's kernel");
    double total = 0, taps[MC_BLUR_DIRECT_RADIUS + 1];
    for (int j = 0; j <= kernel->radius; j++) {
        taps[j] = exp(-(double)j * j / (2 * sigma * sigma));
        total += j == 0 ? taps[j] : 2 * taps[j];
    }
    for (int j = 0; j <= kernel->radius; j++) kernel->weights[j] = (float)(taps[j] / total);
    return 0;
}

size_t mc_blur_memory(int width, int height) {
    // One channel's horizontal pass, the box filters' second plane and the blurred mask, in floats; the lines and their
    // scratch, a row of sums; the boxes. (One channel at a time: all of them at once took a third more.)
    size_t longer = (size_t)(width > height ? width : height);
    size_t bytes = mc_mul(mc_image_bytes(width, height, 3), sizeof(float));
    bytes = mc_add(bytes, mc_mul(longer, 5 * sizeof(float) + sizeof(double)));
    return mc_add(bytes, MIRROR_CODECS_MAX_BLUR_BOXES * sizeof(struct mc_rect) + 4096);
}

/// A box's corner (`x`, `y`, as fractions of the stored image) where it lands once the image is turned upright as EXIF
/// `orientation` says (mc_oriented's mapping, for fractions).
static void mc_oriented_fraction(int orientation, double x, double y, double *nx, double *ny) {
    switch (orientation) {
    case 2: *nx = 1 - x; *ny = y; break;
    case 3: *nx = 1 - x; *ny = 1 - y; break;
    case 4: *nx = x; *ny = 1 - y; break;
    case 5: *nx = y; *ny = x; break;
    case 6: *nx = 1 - y; *ny = x; break;
    case 7: *nx = 1 - y; *ny = 1 - x; break;
    case 8: *nx = y; *ny = 1 - x; break;
    default: *nx = x; *ny = y; break;
    }
}

static double mc_unit(double value) { return value < 0 ? 0 : value > 1 ? 1 : value; }

/// The boxes grown and clamped to a `width` × `height` image, those with pixels in it, and the longest side among them.
static int mc_grown_boxes(const struct mirror_codecs_box *boxes, int count, int orientation, int width, int height, struct mc_rect *rects,
                          int *kept, int *longest, struct mc_error *error) {
    *kept = 0;
    *longest = 0;
    for (int index = 0; index < count; index++) {
        double x0 = boxes[index].x0, y0 = boxes[index].y0, x1 = boxes[index].x1, y1 = boxes[index].y1;
        if (!isfinite(x0) || !isfinite(y0) || !isfinite(x1) || !isfinite(y1))
            return mc_fail(error, MIRROR_CODECS_FAILED, "box %d to blur is not made of numbers", index + 1);
        x0 = mc_unit(x0);
        y0 = mc_unit(y0);
        x1 = mc_unit(x1);
        y1 = mc_unit(y1);
        if (!(x1 > x0 && y1 > y0)) continue;  // no area in the image
        double ax, ay, bx, by;
        mc_oriented_fraction(orientation, x0, y0, &ax, &ay);
        mc_oriented_fraction(orientation, x1, y1, &bx, &by);
        // In pixels, truncated as the reference's int() truncates.
        int left = (int)(fmin(ax, bx) * width), top = (int)(fmin(ay, by) * height);
        int right = (int)(fmax(ax, bx) * width), bottom = (int)(fmax(ay, by) * height);
        int side = right - left > bottom - top ? right - left : bottom - top;
        double grow = 0.1 * side;
        struct mc_rect rect = {(int)(left - grow), (int)(top - grow), (int)(right + grow), (int)(bottom + grow)};
        rect.x0 = rect.x0 < 0 ? 0 : rect.x0;
        rect.y0 = rect.y0 < 0 ? 0 : rect.y0;
        rect.x1 = rect.x1 > width ? width : rect.x1;
        rect.y1 = rect.y1 > height ? height : rect.y1;
        if (rect.x1 <= rect.x0 || rect.y1 <= rect.y0) continue;
        rects[(*kept)++] = rect;
        if (side > *longest) *longest = side;
    }
    return 0;
}

int mc_blur(struct mc_pixels *pixels, const struct mirror_codecs_box *boxes, int count, int orientation, int *blurred, struct mc_error *error) {
    *blurred = 0;
    if (count <= 0 || !boxes) return 0;
    if (count > MIRROR_CODECS_MAX_BLUR_BOXES)
        return mc_fail(error, MIRROR_CODECS_FAILED, "%d boxes to blur, more than the %d an image may have", count, MIRROR_CODECS_MAX_BLUR_BOXES);
    int width = pixels->width, height = pixels->height, channels = pixels->channels;
    struct mc_rect *rects = malloc((size_t)count * sizeof *rects);
    if (!rects) return mc_fail(error, MIRROR_CODECS_FAILED, "out of memory for the boxes to blur");
    int kept, longest;
    int status = mc_grown_boxes(boxes, count, orientation, width, height, rects, &kept, &longest, error);
    if (status != 0 || kept == 0) {
        free(rects);
        return status;
    }
    struct mc_kernel kernel;
    status = mc_kernel_of(longest > 0 ? 0.1 * longest : 0.1, &kernel, error);
    if (status != 0) {
        free(rects);
        return status;
    }
    int r = kernel.radius;
    // What the blurred mask reaches: the grown boxes' bounds, `r` further; the horizontal pass `r` further still.
    struct mc_rect reach = rects[0];
    for (int index = 1; index < kept; index++) {
        reach.x0 = rects[index].x0 < reach.x0 ? rects[index].x0 : reach.x0;
        reach.y0 = rects[index].y0 < reach.y0 ? rects[index].y0 : reach.y0;
        reach.x1 = rects[index].x1 > reach.x1 ? rects[index].x1 : reach.x1;
        reach.y1 = rects[index].y1 > reach.y1 ? rects[index].y1 : reach.y1;
    }
    reach.x0 = reach.x0 - r < 0 ? 0 : reach.x0 - r;
    reach.y0 = reach.y0 - r < 0 ? 0 : reach.y0 - r;
    reach.x1 = reach.x1 + r > width ? width : reach.x1 + r;
    reach.y1 = reach.y1 + r > height ? height : reach.y1 + r;
    int first = reach.y0 - r < 0 ? 0 : reach.y0 - r, last = reach.y1 + r > height ? height : reach.y1 + r;
    int columns = reach.x1 - reach.x0, rows = last - first, reached = reach.y1 - reach.y0, longer = width > height ? width : height;
    // The horizontal pass of one channel (or of the mask) over the rows the vertical pass reads, a second plane for the
    // box filters, the blurred mask where it reaches; the lines, a row of sums.
    size_t plane = mc_mul(mc_image_bytes(columns, rows, 1), sizeof(float));
    float *across = malloc(plane), *other = kernel.weights ? NULL : malloc(plane);
    float *coverage = malloc(mc_mul(mc_image_bytes(columns, reached, 1), sizeof(float)));
    float *lines = malloc(mc_mul((size_t)longer, 5 * sizeof(float)));
    double *sums = malloc(mc_mul((size_t)columns, sizeof(double)));
    // One way out, whatever happened: every buffer freed once (`status` is 0 here: the boxes were read).
    if (!across || (!kernel.weights && !other) || !coverage || !lines || !sums) {
        status = mc_fail(error, MIRROR_CODECS_FAILED, "out of memory to blur %d x %d pixels", width, height);
    } else {
        // A line read, its blurred samples, the box filters' scratch.
        float *line = lines, *result = lines + longer, *scratch = lines + 2 * (size_t)longer;
        // The mask first (c == channels), then one channel at a time: across each row, then down the columns, row by row.
        for (int c = channels; c >= 0; c--) {
            for (int y = first; y < last; y++) {
                if (c == channels) {
                    memset(line, 0, (size_t)width * sizeof(float));
                    for (int index = 0; index < kept; index++)
                        if (y >= rects[index].y0 && y < rects[index].y1)
                            for (int x = rects[index].x0; x < rects[index].x1; x++) line[x] = 1;
                } else {
                    const unsigned char *row = pixels->data + (size_t)y * (size_t)width * (size_t)channels + (size_t)c;
                    for (int x = 0; x < width; x++) line[x] = row[(size_t)x * (size_t)channels];
                }
                mc_blur_line(line, width, across + (size_t)(y - first) * (size_t)columns, reach.x0, reach.x1, &kernel, scratch);
            }
            struct mc_blur_target target = {coverage, pixels, c, reach.x0, columns, reach.y0, c == channels};
            mc_blur_down(across, other, rows, columns, reach.y0 - first, reach.y1 - first, &kernel, sums, result, &target, first);
        }
        *blurred = kept;
    }
    free(across);
    free(other);
    free(coverage);
    free(lines);
    free(sums);
    free(kernel.weights);
    free(rects);
    return status;
}
