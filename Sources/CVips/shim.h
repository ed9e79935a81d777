#ifndef MIRROR_CVIPS_SHIM_H
#define MIRROR_CVIPS_SHIM_H
// libvips (Debian libvips42; libvips-dev to build nothing against, since nothing links it) for --resize, --encode
// and gallery thumbnails. It is loaded with dlopen the first time an image is transformed, not linked: libvips
// brings 60-odd libraries (GLib, librsvg, poppler, OpenEXR, …) whose pages cost every run about 10 MB of memory and
// their loading time, although most runs never resize. Its calls take NULL-terminated variadic options, which Swift
// cannot make; these wrappers take plain arguments. Each returns 0 on success, or -1 with the error in `error`.
//
// The few libvips and GLib functions used are declared here rather than through <vips/vips.h>: that header needs
// GLib's include folders, which only pkg-config knows, and SwiftPM refuses part of `pkg-config --cflags vips`
// (`-pthread`) with a warning on every build. These are libvips 8's stable public API (ABI 42, Debian 12's 8.14);
// the enum values are copied from its headers, and ImageTransformTests fail if one is wrong (a crop that is not
// square, a pad that is not padded).
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

typedef struct _VipsImage VipsImage;

// The functions, looked up once by mirror_vips_start (before any other call here; Swift calls it from a `static let`
// initialiser, which runs once) and only read afterwards. Only the one Swift module that imports CVips uses them.
struct mirror_vips_functions {
    int (*init)(const char *argv0);
    int (*version)(int flag);
    const char *(*error_buffer)(void);
    void (*error_clear)(void);
    void (*concurrency_set)(int concurrency);
    void (*cache_set_max)(int max);
    void (*thread_shutdown)(void);
    VipsImage *(*image_new_from_buffer)(const void *buffer, size_t length, const char *options, ...);
    int (*image_get_width)(const VipsImage *image);
    int (*image_get_height)(const VipsImage *image);
    int (*autorot)(VipsImage *in, VipsImage **out, ...);
    int (*thumbnail_buffer)(void *buffer, size_t length, VipsImage **out, int width, ...);
    int (*gravity)(VipsImage *in, VipsImage **out, int direction, int width, int height, ...);
    int (*image_write_to_buffer)(VipsImage *in, const char *suffix, void **buffer, size_t *length, ...);
    void (*g_object_unref)(void *object);
    void (*g_free)(void *memory);
};

/// The table (a static inside a function: Swift's importer emits the functions of this header into the module that
/// uses them, but not a file-level static variable).
static inline struct mirror_vips_functions *mirror_vips_table(void) {
    static struct mirror_vips_functions table;
    return &table;
}
#define mirror_vips (*mirror_vips_table())

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

/// Loads libvips and starts it; on failure writes why (the library is missing, or of another ABI) into `error`.
static inline int mirror_vips_start(char *error, size_t capacity) {
    void *library = dlopen("libvips.so.42", RTLD_NOW | RTLD_GLOBAL);
    if (!library) {
        const char *why = dlerror();
        snprintf(error, capacity, "cannot load libvips 8 (libvips.so.42: %s); install it (Debian: apt-get install libvips42)", why ? why : "not found");
        return -1;
    }
    // GLib's functions come with libvips (its dependencies are loaded with it, RTLD_GLOBAL).
#define MIRROR_VIPS_BIND(field, symbol) \
    if (!(*(void **)&mirror_vips.field = dlsym(library, symbol))) { \
        snprintf(error, capacity, "libvips has no %s: not the libvips 8 (ABI 42) mirror was written for", symbol); \
        return -1; \
    }
    MIRROR_VIPS_BIND(init, "vips_init")
    MIRROR_VIPS_BIND(version, "vips_version")
    MIRROR_VIPS_BIND(error_buffer, "vips_error_buffer")
    MIRROR_VIPS_BIND(error_clear, "vips_error_clear")
    MIRROR_VIPS_BIND(concurrency_set, "vips_concurrency_set")
    MIRROR_VIPS_BIND(cache_set_max, "vips_cache_set_max")
    MIRROR_VIPS_BIND(thread_shutdown, "vips_thread_shutdown")
    MIRROR_VIPS_BIND(image_new_from_buffer, "vips_image_new_from_buffer")
    MIRROR_VIPS_BIND(image_get_width, "vips_image_get_width")
    MIRROR_VIPS_BIND(image_get_height, "vips_image_get_height")
    MIRROR_VIPS_BIND(autorot, "vips_autorot")
    MIRROR_VIPS_BIND(thumbnail_buffer, "vips_thumbnail_buffer")
    MIRROR_VIPS_BIND(gravity, "vips_gravity")
    MIRROR_VIPS_BIND(image_write_to_buffer, "vips_image_write_to_buffer")
    MIRROR_VIPS_BIND(g_object_unref, "g_object_unref")
    MIRROR_VIPS_BIND(g_free, "g_free")
#undef MIRROR_VIPS_BIND
    // VIPS_INIT's ABI check: the library's ABI must be the 42 these declarations were written against.
    if (mirror_vips.version(3) - mirror_vips.version(5) != 42) {
        snprintf(error, capacity, "libvips is of ABI %d, not the 42 mirror was written for", mirror_vips.version(3) - mirror_vips.version(5));
        return -1;
    }
    if (mirror_vips.init("mirror") != 0) {
        snprintf(error, capacity, "libvips did not start: %s", mirror_vips.error_buffer());
        return -1;
    }
    mirror_vips.concurrency_set(1);  // mirror runs many images at once; one thread each keeps the cores shared fairly
    mirror_vips.cache_set_max(0);    // every image is new: caching operations only holds memory
    return 0;
}

static inline void mirror_vips_error(char *error, size_t capacity) {
    const char *text = mirror_vips.error_buffer();
    strncpy(error, text ? text : "libvips failed", capacity - 1);
    error[capacity - 1] = 0;
    mirror_vips.error_clear();
}

/// Decodes `input` (applying its EXIF orientation), fits it as `fit` asks, and encodes it with `saver` (a libvips
/// suffix with options, such as ".jpg[Q=95,strip]"). On success `*output` is a buffer to free with mirror_vips_free.
/// (The size as downloaded is the caller's: it has read the header already.)
static inline int mirror_vips_transform(
    const void *input, size_t length, int fit, int size, int only_if_bigger, const char *saver,
    void **output, size_t *output_length, int *width, int *height, char *error, size_t error_capacity
) {
    VipsImage *image = NULL;
    if (fit == MIRROR_VIPS_NONE) {
        VipsImage *loaded = mirror_vips.image_new_from_buffer(input, length, "", "access", MIRROR_VIPS_ACCESS_SEQUENTIAL, NULL);
        if (!loaded || mirror_vips.autorot(loaded, &image, NULL) != 0) {
            if (loaded) mirror_vips.g_object_unref(loaded);
            mirror_vips_error(error, error_capacity);
            return -1;
        }
        mirror_vips.g_object_unref(loaded);
    } else {
        int rc = mirror_vips.thumbnail_buffer((void *)input, length, &image, size,
            "height", size,
            "crop", fit == MIRROR_VIPS_CENTER_CROP ? MIRROR_VIPS_INTERESTING_CENTRE : MIRROR_VIPS_INTERESTING_NONE,
            "size", only_if_bigger ? MIRROR_VIPS_SIZE_DOWN : MIRROR_VIPS_SIZE_BOTH,
            NULL);
        if (rc != 0) { mirror_vips_error(error, error_capacity); return -1; }
        if (fit == MIRROR_VIPS_PAD && (mirror_vips.image_get_width(image) != size || mirror_vips.image_get_height(image) != size)) {
            VipsImage *padded = NULL;
            rc = mirror_vips.gravity(image, &padded, MIRROR_VIPS_COMPASS_DIRECTION_CENTRE, size, size, "extend", MIRROR_VIPS_EXTEND_BLACK, NULL);
            mirror_vips.g_object_unref(image);
            if (rc != 0) { mirror_vips_error(error, error_capacity); return -1; }
            image = padded;
        }
    }
    *width = mirror_vips.image_get_width(image);
    *height = mirror_vips.image_get_height(image);
    int rc = mirror_vips.image_write_to_buffer(image, saver, output, output_length, NULL);
    mirror_vips.g_object_unref(image);
    if (rc != 0) { mirror_vips_error(error, error_capacity); return -1; }
    return 0;
}

static inline void mirror_vips_free(void *buffer) { mirror_vips.g_free(buffer); }

/// Drops libvips's per-thread buffers; call when a thread is done with it.
static inline void mirror_vips_thread_done(void) { mirror_vips.thread_shutdown(); }
#endif
