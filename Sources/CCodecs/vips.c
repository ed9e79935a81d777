// libvips (Debian's libvips42, 8.14) for what the codecs leave: TIFF, HEIF, AVIF, BMP, CMYK JPEGs, animated WebP. It is
// loaded with dlopen the first time such an image comes, not linked: libvips brings 60-odd libraries (GLib, librsvg,
// poppler, OpenEXR, …) whose pages would cost every run about 10 MB and their loading time, though most runs never
// meet such an image. Its calls take NULL-terminated variadic options, called here through the pointers dlsym gives.
//
// The few libvips and GLib functions used are declared here rather than through <vips/vips.h>: that header needs
// GLib's include folders, which only pkg-config knows, and SwiftPM refuses part of `pkg-config --cflags vips`
// (`-pthread`). These are libvips 8's stable public API (ABI 42); the enum values are copied from its headers, and
// ImageCodecsTests fail if one is wrong (a crop that is not square, a pad that is not padded).
#include "internal.h"
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct _VipsImage VipsImage;

static struct {
    int (*init)(const char *argv0);
    int (*version)(int flag);
    char *(*error_buffer_copy)(void);
    void (*concurrency_set)(int concurrency);
    void (*cache_set_max)(int max);
    VipsImage *(*image_new_from_buffer)(const void *buffer, size_t length, const char *options, ...);
    int (*image_get_width)(const VipsImage *image);
    int (*image_get_height)(const VipsImage *image);
    int (*image_get_bands)(const VipsImage *image);
    int (*image_get_format)(const VipsImage *image);
    unsigned long (*format_sizeof)(int format);
    int (*autorot)(VipsImage *in, VipsImage **out, ...);
    int (*thumbnail_buffer)(void *buffer, size_t length, VipsImage **out, int width, ...);
    int (*image_write_to_buffer)(VipsImage *in, const char *suffix, void **buffer, size_t *length, ...);
    void (*g_object_unref)(void *object);
    void (*g_free)(void *memory);
} mc_vips;

// From vips/image.h, conversion.h, resample.h and foreign.h (8.14).
enum { MC_VIPS_ACCESS_SEQUENTIAL = 1 };
enum { MC_VIPS_INTERESTING_NONE = 0, MC_VIPS_INTERESTING_CENTRE = 1 };
enum { MC_VIPS_SIZE_BOTH = 0, MC_VIPS_SIZE_DOWN = 2 };
enum { MC_VIPS_FAIL_ON_ERROR = 2 };  // VipsFailOn: none, truncated, error, warning

static pthread_once_t mc_vips_once = PTHREAD_ONCE_INIT;
static char mc_vips_start_failure[256];  // written once, under mc_vips_once; empty when libvips started

static void mc_vips_start(void) {
    void *library = dlopen("libvips.so.42", RTLD_NOW | RTLD_GLOBAL);
    if (!library) {
        const char *why = dlerror();
        snprintf(mc_vips_start_failure, sizeof mc_vips_start_failure,
                 "cannot load libvips 8 (libvips.so.42: %s); install it (Debian: apt-get install libvips42)", why ? why : "not found");
        return;
    }
    // GLib's functions come with libvips (its dependencies are loaded with it, RTLD_GLOBAL).
#define MC_VIPS_BIND(field, symbol) \
    if (!(*(void **)&mc_vips.field = dlsym(library, symbol))) { \
        snprintf(mc_vips_start_failure, sizeof mc_vips_start_failure, "libvips has no %s: not the libvips 8 (ABI 42) mirror was written for", symbol); \
        return; \
    }
    MC_VIPS_BIND(init, "vips_init")
    MC_VIPS_BIND(version, "vips_version")
    MC_VIPS_BIND(error_buffer_copy, "vips_error_buffer_copy")
    MC_VIPS_BIND(concurrency_set, "vips_concurrency_set")
    MC_VIPS_BIND(cache_set_max, "vips_cache_set_max")
    MC_VIPS_BIND(image_new_from_buffer, "vips_image_new_from_buffer")
    MC_VIPS_BIND(image_get_width, "vips_image_get_width")
    MC_VIPS_BIND(image_get_height, "vips_image_get_height")
    MC_VIPS_BIND(image_get_bands, "vips_image_get_bands")
    MC_VIPS_BIND(image_get_format, "vips_image_get_format")
    MC_VIPS_BIND(format_sizeof, "vips_format_sizeof")
    MC_VIPS_BIND(autorot, "vips_autorot")
    MC_VIPS_BIND(thumbnail_buffer, "vips_thumbnail_buffer")
    MC_VIPS_BIND(image_write_to_buffer, "vips_image_write_to_buffer")
    MC_VIPS_BIND(g_object_unref, "g_object_unref")
    MC_VIPS_BIND(g_free, "g_free")
#undef MC_VIPS_BIND
    // VIPS_INIT's ABI check: the library's ABI must be the 42 these declarations were written against.
    if (mc_vips.version(3) - mc_vips.version(5) != 42) {
        snprintf(mc_vips_start_failure, sizeof mc_vips_start_failure, "libvips is of ABI %d, not the 42 mirror was written for",
                 mc_vips.version(3) - mc_vips.version(5));
        return;
    }
    if (mc_vips.init("mirror") != 0) {
        char *why = mc_vips.error_buffer_copy();
        snprintf(mc_vips_start_failure, sizeof mc_vips_start_failure, "libvips did not start: %s", why ? why : "");
        mc_vips.g_free(why);
        return;
    }
    mc_vips.concurrency_set(1);  // mirror runs many images at once; one thread each keeps the cores shared fairly
    mc_vips.cache_set_max(0);    // every image is new: caching operations only holds memory
}

/// 0 once libvips has started; FAILED with the reason otherwise.
static int mc_vips_ready(struct mc_error *error) {
    pthread_once(&mc_vips_once, mc_vips_start);
    if (mc_vips_start_failure[0]) return mc_fail(error, MIRROR_CODECS_FAILED, "%s", mc_vips_start_failure);
    return 0;
}

/// libvips' reason, its first line (the buffer is the library's, shared by every thread: copied and cleared at once).
static int mc_vips_fail(struct mc_error *error, int status, const char *what) {
    char *why = mc_vips.error_buffer_copy();
    const char *text = why && why[0] ? why : "libvips failed";
    size_t line = strcspn(text, "\n");
    mc_fail(error, status, "%s: %.*s", what, (int)(line < 200 ? line : 200), text);
    mc_vips.g_free(why);
    return status;
}

int mc_vips_read_header(const unsigned char *input, size_t length, struct mc_vips_header *header, struct mc_error *error) {
    int status = mc_vips_ready(error);
    if (status != 0) return status;
    // A loader reads only the header until pixels are asked for.
    VipsImage *image = mc_vips.image_new_from_buffer(input, length, "", "access", MC_VIPS_ACCESS_SEQUENTIAL, NULL);
    if (!image) return mc_vips_fail(error, MIRROR_CODECS_MALFORMED, "libvips cannot read the header");
    header->width = mc_vips.image_get_width(image);
    header->height = mc_vips.image_get_height(image);
    header->bands = mc_vips.image_get_bands(image);
    header->band_bytes = (int)mc_vips.format_sizeof(mc_vips.image_get_format(image));
    mc_vips.g_object_unref(image);
    if (header->width < 1 || header->height < 1 || header->bands < 1 || header->band_bytes < 1)
        return mc_fail(error, MIRROR_CODECS_MALFORMED, "libvips reads %d x %d pixels of %d bands", header->width, header->height, header->bands);
    return 0;
}

/// The libvips saver, with its options, for an output format (JPEG flattens alpha onto white).
static void mc_vips_saver(enum mirror_codecs_format format, int quality, char *saver, size_t capacity) {
    switch (format) {
    case MIRROR_CODECS_JPEG: snprintf(saver, capacity, ".jpg[Q=%d,strip,background=255]", quality); break;
    case MIRROR_CODECS_WEBP: snprintf(saver, capacity, ".webp[Q=%d,strip]", quality); break;
    case MIRROR_CODECS_TIFF: snprintf(saver, capacity, ".tif[strip]"); break;
    case MIRROR_CODECS_HEIF: snprintf(saver, capacity, ".heif[Q=%d,strip]", quality); break;
    case MIRROR_CODECS_AVIF: snprintf(saver, capacity, ".avif[Q=%d,strip]", quality); break;
    default: snprintf(saver, capacity, ".png[strip]"); break;
    }
}

bool mc_vips_fits_alone(const struct mirror_codecs_request *request) {
    return !mc_blurs(request)
           && (request->fit == MIRROR_CODECS_NONE || request->fit == MIRROR_CODECS_LONGER_SIDE || request->fit == MIRROR_CODECS_CENTER_CROP);
}

/// Copies libvips' buffer into one from malloc (mirror_codecs_free is free(); libvips' buffer is g_malloc'd, which is
/// malloc since GLib 2.46, but copy to be plain) as `output`'s data.
static int mc_vips_output(void *buffer, size_t size, int width, int height, struct mirror_codecs_output *output, struct mc_error *error) {
    output->data = malloc(size);
    if (output->data) memcpy(output->data, buffer, size);
    mc_vips.g_free(buffer);
    if (!output->data) return mc_fail(error, MIRROR_CODECS_FAILED, "out of memory for the encoded image");
    output->length = size;
    output->width = width;
    output->height = height;
    return 0;
}

/// The whole image as loaded, turned upright; MALFORMED when it does not load.
static int mc_vips_load_upright(const unsigned char *input, size_t length, VipsImage **image, struct mc_error *error) {
    // Truncated and corrupt images fail instead of coming out grey (libvips' default tolerates them).
    VipsImage *loaded = mc_vips.image_new_from_buffer(input, length, "", "access", MC_VIPS_ACCESS_SEQUENTIAL,
                                                      "fail_on", MC_VIPS_FAIL_ON_ERROR, NULL);
    if (!loaded) return mc_vips_fail(error, MIRROR_CODECS_MALFORMED, "libvips cannot read the image");
    int rotated = mc_vips.autorot(loaded, image, NULL);
    mc_vips.g_object_unref(loaded);
    if (rotated != 0) return mc_vips_fail(error, MIRROR_CODECS_MALFORMED, "libvips cannot read the image");
    return 0;
}

int mc_vips_transform(const unsigned char *input, size_t length, const struct mirror_codecs_request *request,
                      struct mirror_codecs_output *output, struct mc_error *error) {
    if (!mc_vips_fits_alone(request)) return mc_fail(error, MIRROR_CODECS_FAILED, "libvips does not fit %d alone", request->fit);
    int status = mc_vips_ready(error);
    if (status != 0) return status;
    VipsImage *image = NULL;
    if (request->fit == MIRROR_CODECS_NONE) {
        status = mc_vips_load_upright(input, length, &image, error);
        if (status != 0) return status;
    } else if (mc_vips.thumbnail_buffer((void *)input, length, &image, request->size, "height", request->size,
                                        "crop", request->fit == MIRROR_CODECS_CENTER_CROP ? MC_VIPS_INTERESTING_CENTRE : MC_VIPS_INTERESTING_NONE,
                                        "size", request->only_if_bigger ? MC_VIPS_SIZE_DOWN : MC_VIPS_SIZE_BOTH,
                                        "option_string", "fail_on=error", NULL) != 0) {
        return mc_vips_fail(error, MIRROR_CODECS_MALFORMED, "libvips cannot read the image");
    }
    char saver[64];
    mc_vips_saver(request->output_format, request->quality, saver, sizeof saver);
    void *buffer = NULL;
    size_t size = 0;
    int width = mc_vips.image_get_width(image), height = mc_vips.image_get_height(image);
    // The pixels are decoded here, as the saver pulls them: a truncated file fails now.
    int rc = mc_vips.image_write_to_buffer(image, saver, &buffer, &size, NULL);
    mc_vips.g_object_unref(image);
    if (rc != 0) return mc_vips_fail(error, MIRROR_CODECS_MALFORMED, "libvips cannot decode or encode the image");
    return mc_vips_output(buffer, size, width, height, output, error);
}

int mc_vips_decode(const unsigned char *input, size_t length, bool keep_alpha, struct mc_pixels *pixels, struct mc_error *error) {
    int status = mc_vips_ready(error);
    if (status != 0) return status;
    VipsImage *image = NULL;
    status = mc_vips_load_upright(input, length, &image, error);
    if (status != 0) return status;
    // Uncompressed: the PNG only carries the pixels from libvips to libpng (pngsave turns CMYK into RGB on the way).
    void *buffer = NULL;
    size_t size = 0;
    int rc = mc_vips.image_write_to_buffer(image, ".png[compression=0,strip]", &buffer, &size, NULL);
    mc_vips.g_object_unref(image);
    if (rc != 0) return mc_vips_fail(error, MIRROR_CODECS_MALFORMED, "libvips cannot decode the image");
    status = mc_png_decode(buffer, size, keep_alpha, pixels, error);
    mc_vips.g_free(buffer);
    return status;
}

int mc_vips_encode(const struct mc_pixels *pixels, enum mirror_codecs_format format, int quality, struct mirror_codecs_output *output,
                   struct mc_error *error) {
    int status = mc_vips_ready(error);
    if (status != 0) return status;
    struct mirror_codecs_output png;
    memset(&png, 0, sizeof png);
    status = mc_encode(pixels, MIRROR_CODECS_PNG, 0, &png, error);
    if (status != 0) return status;
    VipsImage *image = mc_vips.image_new_from_buffer(png.data, png.length, "", "access", MC_VIPS_ACCESS_SEQUENTIAL, NULL);
    if (!image) {
        free(png.data);
        return mc_vips_fail(error, MIRROR_CODECS_FAILED, "libvips cannot read back the pixels");
    }
    char saver[64];
    mc_vips_saver(format, quality, saver, sizeof saver);
    void *buffer = NULL;
    size_t size = 0;
    int rc = mc_vips.image_write_to_buffer(image, saver, &buffer, &size, NULL);
    mc_vips.g_object_unref(image);
    free(png.data);  // libvips read it as the saver pulled it, not after
    if (rc != 0) return mc_vips_fail(error, MIRROR_CODECS_FAILED, "libvips cannot encode the image");
    return mc_vips_output(buffer, size, pixels->width, pixels->height, output, error);
}
