#ifndef MIRROR_CVIPS_SHIM_H
#define MIRROR_CVIPS_SHIM_H
// libvips (Debian libvips-dev) for --resize and --encode. Its calls take NULL-terminated variadic options, which Swift
// cannot make; these wrappers take plain arguments. Each returns 0 on success, or -1 with libvips's error in `error`.
//
// The few libvips and GLib functions used are declared here rather than through <vips/vips.h>: that header needs
// GLib's include folders, which only pkg-config knows, and SwiftPM refuses part of `pkg-config --cflags vips`
// (`-pthread`) with a warning on every build. These are libvips 8's stable public API (ABI 42, Debian 12's 8.14);
// the enum values are copied from its headers, and ImageTransformTests fail if one is wrong (a crop that is not
// square, a pad that is not padded).
#include <stddef.h>
#include <string.h>

typedef struct _VipsImage VipsImage;
int vips_init(const char *argv0);
int vips_version(int flag);
const char *vips_error_buffer(void);
void vips_error_clear(void);
void vips_concurrency_set(int concurrency);
void vips_cache_set_max(int max);
void vips_thread_shutdown(void);
VipsImage *vips_image_new_from_buffer(const void *buffer, size_t length, const char *options, ...);
int vips_image_get_width(const VipsImage *image);
int vips_image_get_height(const VipsImage *image);
int vips_autorot(VipsImage *in, VipsImage **out, ...);
int vips_thumbnail_buffer(void *buffer, size_t length, VipsImage **out, int width, ...);
int vips_gravity(VipsImage *in, VipsImage **out, int direction, int width, int height, ...);
int vips_image_write_to_buffer(VipsImage *in, const char *suffix, void **buffer, size_t *length, ...);
void g_object_unref(void *object);
void g_free(void *memory);

// From vips/image.h, conversion.h and resample.h (8.14).
enum { MIRROR_VIPS_ACCESS_SEQUENTIAL = 1 };
enum { MIRROR_VIPS_INTERESTING_NONE = 0, MIRROR_VIPS_INTERESTING_CENTRE = 1 };
enum { MIRROR_VIPS_SIZE_BOTH = 0, MIRROR_VIPS_SIZE_DOWN = 2 };
enum { MIRROR_VIPS_EXTEND_BLACK = 0 };
enum { MIRROR_VIPS_COMPASS_DIRECTION_CENTRE = 0 };

/// How the image is fitted into size × size.
enum mirror_vips_fit {
    MIRROR_VIPS_KEEP_RATIO = 0,  // the longer side becomes `size`
    MIRROR_VIPS_CENTER_CROP = 1, // the shorter side becomes `size`, the rest cropped around the centre
    MIRROR_VIPS_PAD = 2,         // keep-ratio, then padded with black to size × size
    MIRROR_VIPS_NONE = 3         // no resize (re-encode only)
};

static inline int mirror_vips_start(void) {
    // VIPS_INIT's ABI check: the library's ABI must be the 42 these declarations were written against.
    if (vips_version(3) - vips_version(5) != 42) return -1;
    if (vips_init("mirror") != 0) return -1;
    vips_concurrency_set(1);  // mirror runs many images at once; one thread each keeps the cores shared fairly
    vips_cache_set_max(0);    // every image is new: caching operations only holds memory
    return 0;
}

static inline void mirror_vips_error(char *error, size_t capacity) {
    const char *text = vips_error_buffer();
    strncpy(error, text ? text : "libvips failed", capacity - 1);
    error[capacity - 1] = 0;
    vips_error_clear();
}

/// Decodes `input` (applying its EXIF orientation), fits it as `fit` asks, and encodes it with `saver` (a libvips
/// suffix with options, such as ".jpg[Q=95,strip]"). On success `*output` is a buffer to free with g_free. (The size
/// as downloaded is the caller's: it has read the header already.)
static inline int mirror_vips_transform(
    const void *input, size_t length, int fit, int size, int only_if_bigger, const char *saver,
    void **output, size_t *output_length, int *width, int *height, char *error, size_t error_capacity
) {
    VipsImage *image = NULL;
    if (fit == MIRROR_VIPS_NONE) {
        VipsImage *loaded = vips_image_new_from_buffer(input, length, "", "access", MIRROR_VIPS_ACCESS_SEQUENTIAL, NULL);
        if (!loaded || vips_autorot(loaded, &image, NULL) != 0) {
            if (loaded) g_object_unref(loaded);
            mirror_vips_error(error, error_capacity);
            return -1;
        }
        g_object_unref(loaded);
    } else {
        int rc = vips_thumbnail_buffer((void *)input, length, &image, size,
            "height", size,
            "crop", fit == MIRROR_VIPS_CENTER_CROP ? MIRROR_VIPS_INTERESTING_CENTRE : MIRROR_VIPS_INTERESTING_NONE,
            "size", only_if_bigger ? MIRROR_VIPS_SIZE_DOWN : MIRROR_VIPS_SIZE_BOTH,
            NULL);
        if (rc != 0) { mirror_vips_error(error, error_capacity); return -1; }
        if (fit == MIRROR_VIPS_PAD && (vips_image_get_width(image) != size || vips_image_get_height(image) != size)) {
            VipsImage *padded = NULL;
            rc = vips_gravity(image, &padded, MIRROR_VIPS_COMPASS_DIRECTION_CENTRE, size, size, "extend", MIRROR_VIPS_EXTEND_BLACK, NULL);
            g_object_unref(image);
            if (rc != 0) { mirror_vips_error(error, error_capacity); return -1; }
            image = padded;
        }
    }
    *width = vips_image_get_width(image);
    *height = vips_image_get_height(image);
    int rc = vips_image_write_to_buffer(image, saver, output, output_length, NULL);
    g_object_unref(image);
    if (rc != 0) { mirror_vips_error(error, error_capacity); return -1; }
    return 0;
}

static inline void mirror_vips_free(void *buffer) { g_free(buffer); }

/// Drops libvips's per-thread buffers; call when a thread is done with it.
static inline void mirror_vips_thread_done(void) { vips_thread_shutdown(); }
#endif
