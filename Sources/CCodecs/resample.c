// The fit's geometry, and the resample: stb_image_resize from Debian's libstb-dev (the header, not the library), compiled
// here so that its assertions are errors. Debian builds libstb with them on, and an image whose resample stb thinks
// impossible aborted the whole run (`coefficient != 0`, when the planes path enlarged a 3 × 10 JPEG through a
// fractional region). Here STBIR_ASSERT jumps back to mc_resample, which frees stb's one allocation and fails the
// image. The planes path no longer asks for fractional regions, and the sweep test runs every one-dimensional resample
// from 1-640 to 1-512 pixels to show none fails; the jump is what keeps an abort unreachable whatever comes next.
#include "internal.h"
#include <limits.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <turbojpeg.h>

// What a failed assertion jumps back to, and stb's allocation to free then: per thread, in static storage (a jump
// leaves an automatic variable changed since setjmp indeterminate), set only around one resample.
static _Thread_local jmp_buf mc_resample_jump;
static _Thread_local void *mc_resample_memory_block;

static void *mc_stbir_malloc(size_t size) {
    mc_resample_memory_block = malloc(size);
    return mc_resample_memory_block;
}

static void mc_stbir_free(void *memory) {
    free(memory);
    mc_resample_memory_block = NULL;
}

#define STB_IMAGE_RESIZE_IMPLEMENTATION
#define STB_IMAGE_RESIZE_STATIC
#define STBIR_ASSERT(condition) ((condition) ? (void)0 : longjmp(mc_resample_jump, 1))
#define STBIR_MALLOC(size, context) ((void)(context), mc_stbir_malloc(size))
#define STBIR_FREE(pointer, context) ((void)(context), mc_stbir_free(pointer))
// stb's own code is compiled as Debian ships it; its warnings are not this target's to fix.
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Weverything"
#include <stb/stb_image_resize.h>
#pragma clang diagnostic pop

// MARK: Geometry

/// The scale of each axis that `fit` gives an image of `w` × `h` at `size` (1 for no resize; never above 1 with
/// `only_if_bigger`). Only `fixed` scales the axes apart.
static void mc_scales(int w, int h, enum mirror_codecs_fit fit, int size, bool only_if_bigger, double *sx, double *sy) {
    double shorter = w < h ? w : h, longer = w < h ? h : w;
    double scale = 1;
    if (fit == MIRROR_CODECS_CENTER_CROP || fit == MIRROR_CODECS_SHORTER_SIDE) scale = size / shorter;
    else if (fit == MIRROR_CODECS_LONGER_SIDE || fit == MIRROR_CODECS_PAD) scale = size / longer;
    *sx = *sy = scale;
    if (fit == MIRROR_CODECS_FIXED) {
        *sx = (double)size / w;
        *sy = (double)size / h;
    }
    if (only_if_bigger && *sx > 1) *sx = 1;
    if (only_if_bigger && *sy > 1) *sy = 1;
}

double mc_needed_scale(int width, int height, enum mirror_codecs_fit fit, int size) {
    double sx, sy;
    mc_scales(width, height, fit, size, false, &sx, &sy);
    double scale = sx > sy ? sx : sy;  // a decoder scales both axes alike: it must cover the larger
    return scale < 1 ? scale : 1;
}

/// `value` rounded to a side: 1 at least, INT_MAX at most (computed in double and clamped before any conversion: a
/// side times a large scale must not overflow an int).
static int mc_side(double value) {
    value += 0.5;
    return value < 1 ? 1 : value > INT_MAX ? INT_MAX : (int)value;
}

struct mc_geometry mc_geometry_of(int w, int h, enum mirror_codecs_fit fit, int size, bool only_if_bigger) {
    double sx, sy;
    mc_scales(w, h, fit, size, only_if_bigger, &sx, &sy);
    struct mc_geometry g = {0, 0, w, h, 0, 0, 0, 0, 0, 0};
    g.scaled_width = g.out_width = mc_side(w * sx);
    g.scaled_height = g.out_height = mc_side(h * sy);
    if (fit == MIRROR_CODECS_CENTER_CROP) {  // the middle size × size of the scaled image, from the source
        if (g.out_width > size) {
            g.crop_width = (int)(size / sx + 0.5);
            if (g.crop_width > w) g.crop_width = w;
            if (g.crop_width < 1) g.crop_width = 1;
            g.out_width = size;
        }
        if (g.out_height > size) {
            g.crop_height = (int)(size / sy + 0.5);
            if (g.crop_height > h) g.crop_height = h;
            if (g.crop_height < 1) g.crop_height = 1;
            g.out_height = size;
        }
        g.crop_x = (w - g.crop_width) / 2;
        g.crop_y = (h - g.crop_height) / 2;
    }
    int canvas = fit == MIRROR_CODECS_PAD ? size : 0;
    g.final_width = canvas ? (g.out_width > size ? g.out_width : size) : g.out_width;
    g.final_height = canvas ? (g.out_height > size ? g.out_height : size) : g.out_height;
    return g;
}

// MARK: Resample

size_t mc_resample_memory(int in_width, int in_height, int out_width, int out_height, int channels) {
    // stb's own sum (stbir__calculate_memory), in size_t: stb adds it up in 32 bits.
    stbir__info info;
    memset(&info, 0, sizeof info);
    stbir__setup(&info, in_width, in_height, out_width, out_height, channels);
    stbir__calculate_transform(&info, 0, 0, 1, 1, NULL);
    stbir__choose_filter(&info, STBIR_FILTER_CATMULLROM, STBIR_FILTER_CATMULLROM);
    size_t margin = (size_t)stbir__get_filter_pixel_margin(info.horizontal_filter, info.horizontal_scale);
    size_t ring = (size_t)stbir__get_filter_pixel_width(info.vertical_filter, info.vertical_scale) + 1;
    size_t horizontal = (size_t)stbir__get_contributors(info.horizontal_scale, info.horizontal_filter, in_width, out_width);
    size_t vertical = (size_t)stbir__get_contributors(info.vertical_scale, info.vertical_filter, in_height, out_height);
    size_t bytes = mc_mul(mc_add(horizontal, vertical), sizeof(stbir__contributors));
    bytes = mc_add(bytes, mc_mul(mc_mul(horizontal, (size_t)stbir__get_coefficient_width(info.horizontal_filter, info.horizontal_scale)), sizeof(float)));
    bytes = mc_add(bytes, mc_mul(mc_mul(vertical, (size_t)stbir__get_coefficient_width(info.vertical_filter, info.vertical_scale)), sizeof(float)));
    bytes = mc_add(bytes, mc_mul(mc_mul(mc_add((size_t)in_width, mc_mul(margin, 2)), (size_t)channels), sizeof(float)));
    bytes = mc_add(bytes, mc_mul(mc_mul(mc_mul((size_t)out_width, (size_t)channels), mc_add(ring, 2)), sizeof(float)));
    return bytes;
}

int mc_resample(const unsigned char *in, int in_width, int in_height, size_t in_stride, unsigned char *out, int out_width,
                int out_height, size_t out_stride, int channels, struct mc_error *error) {
    if (in_width < 1 || in_height < 1 || out_width < 1 || out_height < 1)
        return mc_fail(error, MIRROR_CODECS_FAILED, "cannot resample %d x %d to %d x %d", in_width, in_height, out_width, out_height);
    if (in_width == out_width && in_height == out_height) {
        for (int y = 0; y < out_height; y++) memcpy(out + (size_t)y * out_stride, in + (size_t)y * in_stride, (size_t)out_width * (size_t)channels);
        return 0;
    }
    // stb indexes rows with int products of row and stride, and sums its working memory in 32 bits.
    if (mc_mul(in_stride, (size_t)in_height) > INT_MAX || mc_mul(out_stride, (size_t)out_height) > INT_MAX
        || mc_resample_memory(in_width, in_height, out_width, out_height, channels) > UINT32_MAX)
        return mc_fail(error, MIRROR_CODECS_TOO_LARGE, "%d x %d to %d x %d is more than the resampler takes", in_width, in_height, out_width, out_height);
    int succeeded = 0;
    if (setjmp(mc_resample_jump) == 0) {
        succeeded = stbir_resize_uint8_generic(in, in_width, in_height, (int)in_stride, out, out_width, out_height, (int)out_stride, channels,
                                               channels == 4 ? 3 : STBIR_ALPHA_CHANNEL_NONE, 0, STBIR_EDGE_CLAMP, STBIR_FILTER_CATMULLROM,
                                               STBIR_COLORSPACE_LINEAR, NULL);
    } else {
        free(mc_resample_memory_block);  // an assertion failed inside stb, which had not freed it
        mc_resample_memory_block = NULL;
    }
    if (!succeeded) return mc_fail(error, MIRROR_CODECS_FAILED, "the resampler refused %d x %d to %d x %d", in_width, in_height, out_width, out_height);
    return 0;
}

/// Fills `count` pixels of `channels` with the opaque colour `rgb` (0xRRGGBB; grey pixels take its luma).
static void mc_fill(unsigned char *data, size_t count, int channels, unsigned rgb) {
    unsigned char pixel[4] = {(unsigned char)(rgb >> 16), (unsigned char)(rgb >> 8), (unsigned char)rgb, 255};
    if (channels < 3) {
        pixel[0] = (unsigned char)((19595u * pixel[0] + 38470u * pixel[1] + 7471u * pixel[2] + 32768u) >> 16);
        pixel[1] = 255;
    }
    if (pixel[0] == pixel[1] && pixel[1] == pixel[2] && (channels == 3 || channels == 1)) {
        memset(data, pixel[0], count * (size_t)channels);
        return;
    }
    for (size_t index = 0; index < count; index++) memcpy(data + index * (size_t)channels, pixel, (size_t)channels);
}

/// A canvas of `width` × `height` × `channels` filled with the pad colour, `pixels` copied into its centre (the rest of
/// them cropped around their centre where they are larger), replacing `pixels`.
static int mc_place(struct mc_pixels *pixels, int width, int height, unsigned pad_color, struct mc_error *error) {
    int w = pixels->width, h = pixels->height, c = pixels->channels;
    if (w == width && h == height) return 0;
    struct mc_pixels out;
    int status = mc_allocate(&out, width, height, c, error);
    if (status != 0) return status;
    if (w < width || h < height) mc_fill(out.data, mc_image_bytes(width, height, 1), c, pad_color);
    int from_x = w > width ? (w - width) / 2 : 0, from_y = h > height ? (h - height) / 2 : 0;
    int to_x = w < width ? (width - w) / 2 : 0, to_y = h < height ? (height - h) / 2 : 0;
    int columns = w < width ? w : width, rows = h < height ? h : height;
    for (int y = 0; y < rows; y++)
        memcpy(out.data + ((size_t)(to_y + y) * (size_t)width + (size_t)to_x) * (size_t)c,
               pixels->data + ((size_t)(from_y + y) * (size_t)w + (size_t)from_x) * (size_t)c, (size_t)columns * (size_t)c);
    mc_pixels_free(pixels);
    *pixels = out;
    return 0;
}

int mc_fit(struct mc_pixels *pixels, const struct mirror_codecs_request *request, struct mc_error *error) {
    int w = pixels->width, h = pixels->height, c = pixels->channels;
    struct mc_geometry g = mc_geometry_of(w, h, request->fit, request->size, request->only_if_bigger);
    if (g.crop_width == w && g.crop_height == h && g.out_width == w && g.out_height == h && g.final_width == w && g.final_height == h) return 0;
    struct mc_pixels out;
    int status = mc_allocate(&out, g.final_width, g.final_height, c, error);
    if (status != 0) return status;
    if (g.final_width != g.out_width || g.final_height != g.out_height)
        mc_fill(out.data, mc_image_bytes(g.final_width, g.final_height, 1), c, request->pad_color);
    size_t left = (size_t)(g.final_width - g.out_width) / 2, top = (size_t)(g.final_height - g.out_height) / 2;
    const unsigned char *from = pixels->data + ((size_t)g.crop_y * (size_t)w + (size_t)g.crop_x) * (size_t)c;
    unsigned char *to = out.data + (top * (size_t)g.final_width + left) * (size_t)c;
    status = mc_resample(from, g.crop_width, g.crop_height, (size_t)w * (size_t)c, to, g.out_width, g.out_height,
                         (size_t)g.final_width * (size_t)c, c, error);
    if (status != 0) {
        mc_pixels_free(&out);
        return status;
    }
    mc_pixels_free(pixels);
    *pixels = out;
    return 0;
}

size_t mc_fit_blurred_memory(int width, int height, int channels, const struct mirror_codecs_request *request) {
    struct mc_geometry g = mc_geometry_of(width, height, request->fit, request->size, request->only_if_bigger);
    size_t bytes = mc_blur_memory(g.scaled_width, g.scaled_height);
    if (g.scaled_width != width || g.scaled_height != height) {
        bytes = mc_add(bytes, mc_image_bytes(g.scaled_width, g.scaled_height, channels));
        bytes = mc_add(bytes, mc_resample_memory(width, height, g.scaled_width, g.scaled_height, channels));
    }
    if (g.final_width != g.scaled_width || g.final_height != g.scaled_height)
        bytes = mc_add(bytes, mc_image_bytes(g.final_width, g.final_height, channels));
    return bytes;
}

int mc_fit_blurred(struct mc_pixels *pixels, const struct mirror_codecs_request *request, int orientation, int *blurred, struct mc_error *error) {
    int w = pixels->width, h = pixels->height, c = pixels->channels;
    struct mc_geometry g = mc_geometry_of(w, h, request->fit, request->size, request->only_if_bigger);
    if (g.scaled_width != w || g.scaled_height != h) {  // the whole image, resized: img2dataset blurs before it crops
        struct mc_pixels scaled;
        int status = mc_allocate(&scaled, g.scaled_width, g.scaled_height, c, error);
        if (status != 0) return status;
        status = mc_resample(pixels->data, w, h, (size_t)w * (size_t)c, scaled.data, g.scaled_width, g.scaled_height,
                             (size_t)g.scaled_width * (size_t)c, c, error);
        if (status != 0) {
            mc_pixels_free(&scaled);
            return status;
        }
        mc_pixels_free(pixels);
        *pixels = scaled;
    }
    int status = mc_blur(pixels, request->blur_boxes, request->blur_box_count, orientation, blurred, error);
    if (status != 0) return status;
    return mc_place(pixels, g.final_width, g.final_height, request->pad_color, error);
}

// MARK: The sweep (tests)

long mirror_codecs_sweep_resampler(int first_in, int last_in, int max_out, char *message, size_t capacity) {
    int max_in = last_in;
    long failures = 0;
    unsigned char *input = malloc((size_t)max_in), *output = malloc((size_t)max_out);
    if (!input || !output) {
        free(input);
        free(output);
        snprintf(message, capacity, "out of memory");
        return 1;
    }
    for (int index = 0; index < max_in; index++) input[index] = (unsigned char)(index * 37);
    char text[160];
    struct mc_error error = {text, sizeof text};
    for (int in = first_in; in <= last_in; in++) {
        for (int out = 1; out <= max_out; out++) {
            // Across one row and down one column: the horizontal and the vertical pass compute their coefficients
            // alike but assert on them in different places.
            if (mc_resample(input, in, 1, (size_t)in, output, out, 1, (size_t)out, 1, &error) != 0
                || mc_resample(input, 1, in, 1, output, 1, out, 1, 1, &error) != 0) {
                if (failures++ == 0) snprintf(message, capacity, "%s", text);
            }
        }
    }
    free(input);
    free(output);
    return failures;
}

/// Whether a resample of `in` to `out` pixels is one the resampler sweep ran.
static int mc_swept(int in, int out, int max_in, int max_out) { return in >= 1 && out >= 1 && in <= max_in && out <= max_out; }

long mirror_codecs_sweep_geometry(int first_width, int last_width, int max_height, int max_size, int max_in, int max_out,
                                  long *geometries, char *message, size_t capacity) {
    static const int subsamplings[] = {TJSAMP_444, TJSAMP_422, TJSAMP_420, TJSAMP_GRAY};
    long failures = 0, checked = 0;
#define MC_SWEEP_FAIL(...) do { if (failures++ == 0) snprintf(message, capacity, __VA_ARGS__); } while (0)
    for (int h = 1; h <= max_height; h++)
        if (!mc_plane_length_matches_turbojpeg(h)) MC_SWEEP_FAIL("plane sizes of %d pixels are not TurboJPEG's", h);
    // Every decoded size, not only those a DCT scale gives: a superset of what the codecs can ask.
    for (int w = first_width; w <= last_width; w++) {
        for (int h = 1; h <= max_height; h++) {
            for (int fit = MIRROR_CODECS_LONGER_SIDE; fit <= MIRROR_CODECS_FIXED; fit++) {
                // A stretch scales each axis alone, and each plane's crop and resample along an axis depend on that
                // axis alone: square sources give every side to both axes, at a 640th of the cost.
                if (fit == MIRROR_CODECS_NONE || (fit == MIRROR_CODECS_FIXED && w != h)) continue;
                for (int size = 1; size <= max_size; size++) {
                    for (int only_if_bigger = 0; only_if_bigger <= 1; only_if_bigger++) {
                        // Only-if-bigger changes nothing unless the fit would enlarge.
                        if (only_if_bigger && mc_needed_scale(w, h, fit, size) < 1) continue;
                        // Packed pixels: PNG, GIF, WebP, and JPEGs off the planes path.
                        struct mc_geometry g = mc_geometry_of(w, h, fit, size, only_if_bigger);
                        checked++;
                        if (g.crop_x < 0 || g.crop_y < 0 || g.crop_width < 1 || g.crop_height < 1 || g.crop_x + g.crop_width > w || g.crop_y + g.crop_height > h)
                            MC_SWEEP_FAIL("%dx%d fit %d size %d: crop %d,%d %dx%d outside the image", w, h, fit, size, g.crop_x, g.crop_y, g.crop_width, g.crop_height);
                        // The shorter side fits the box; the longer one too but with shorter-side.
                        int out_shorter = g.out_width < g.out_height ? g.out_width : g.out_height;
                        int out_longer = g.out_width < g.out_height ? g.out_height : g.out_width;
                        if (only_if_bigger ? g.out_width > w || g.out_height > h
                                           : out_shorter > size || (fit != MIRROR_CODECS_SHORTER_SIDE && out_longer > size))
                            MC_SWEEP_FAIL("%dx%d fit %d size %d: %dx%d larger than the box", w, h, fit, size, g.out_width, g.out_height);
                        if (fit == MIRROR_CODECS_SHORTER_SIDE && !only_if_bigger && out_shorter != size)
                            MC_SWEEP_FAIL("%dx%d shorter-side %d: %dx%d", w, h, size, g.out_width, g.out_height);
                        if (fit == MIRROR_CODECS_FIXED && !only_if_bigger && (g.final_width != size || g.final_height != size))
                            MC_SWEEP_FAIL("%dx%d fixed %d: %dx%d", w, h, size, g.final_width, g.final_height);
                        if (fit == MIRROR_CODECS_CENTER_CROP && !only_if_bigger && (g.out_width != size || g.out_height != size))
                            MC_SWEEP_FAIL("%dx%d centre-crop %d: %dx%d", w, h, size, g.out_width, g.out_height);
                        if (fit == MIRROR_CODECS_PAD && !only_if_bigger && (g.final_width != size || g.final_height != size))
                            MC_SWEEP_FAIL("%dx%d pad %d: a canvas of %dx%d", w, h, size, g.final_width, g.final_height);
                        // (A shorter side of 512 may make a longer one of many thousands: resamples the sweep cannot
                        // run, left to the jump from stb's assertions.)
                        int swept = out_longer <= max_out;
                        if (!(g.crop_width == g.out_width && g.crop_height == g.out_height) && swept
                            && (!mc_swept(g.crop_width, g.out_width, max_in, max_out) || !mc_swept(g.crop_height, g.out_height, max_in, max_out)))
                            MC_SWEEP_FAIL("%dx%d fit %d size %d: resamples %dx%d to %dx%d", w, h, fit, size, g.crop_width, g.crop_height, g.out_width, g.out_height);
                        if (fit == MIRROR_CODECS_PAD) continue;  // the planes path does not pad
                        // JPEG planes of every subsampling decoded at w x h.
                        for (size_t index = 0; index < sizeof subsamplings / sizeof subsamplings[0]; index++) {
                            struct mc_planes_geometry planes;
                            mc_planes_geometry_of(w, h, subsamplings[index], &g, &planes);
                            checked++;
                            for (int p = 0; p < planes.count; p++) {
                                const struct mc_plane_resample *plane = &planes.plane[p];
                                if (plane->in_x < 0 || plane->in_y < 0 || plane->in_width < 1 || plane->in_height < 1
                                    || plane->in_x + plane->in_width > plane->plane_width || plane->in_y + plane->in_height > plane->plane_height)
                                    MC_SWEEP_FAIL("%dx%d sub %d fit %d size %d plane %d: crop %d,%d %dx%d outside %dx%d", w, h, subsamplings[index], fit, size, p,
                                                  plane->in_x, plane->in_y, plane->in_width, plane->in_height, plane->plane_width, plane->plane_height);
                                if (plane->out_width < 1 || plane->out_height < 1 || plane->out_width > plane->out_plane_width || plane->out_height > plane->out_plane_height)
                                    MC_SWEEP_FAIL("%dx%d sub %d fit %d size %d plane %d: %dx%d in a plane of %dx%d", w, h, subsamplings[index], fit, size, p,
                                                  plane->out_width, plane->out_height, plane->out_plane_width, plane->out_plane_height);
                                if (!(plane->in_width == plane->out_width && plane->in_height == plane->out_height) && swept
                                    && (!mc_swept(plane->in_width, plane->out_width, max_in, max_out) || !mc_swept(plane->in_height, plane->out_height, max_in, max_out)))
                                    MC_SWEEP_FAIL("%dx%d sub %d fit %d size %d plane %d: resamples %dx%d to %dx%d", w, h, subsamplings[index], fit, size, p,
                                                  plane->in_width, plane->in_height, plane->out_width, plane->out_height);
                            }
                        }
                    }
                }
            }
        }
    }
#undef MC_SWEEP_FAIL
    *geometries = checked;
    return failures;
}
