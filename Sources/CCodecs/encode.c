// Encoding the fitted pixels: TurboJPEG (4:2:0), libpng's simplified writer, libwebp.
#include "internal.h"
#include <png.h>
#include <stdlib.h>
#include <string.h>
#include <turbojpeg.h>
#include <webp/encode.h>

size_t mc_encode_memory(int width, int height, int channels) {
    // TurboJPEG's worst-case buffer and mirror's copy of the result; libwebp's YUV and ARGB pictures and its output;
    // libpng's worst case (stored blocks). Three times the pixels covers each, with a megabyte of state.
    return mc_add(mc_mul(mc_image_bytes(width, height, channels > 3 ? channels : 3), 3), 1 << 20);
}

int mc_encode(const struct mc_pixels *pixels, enum mirror_codecs_format format, int quality, struct mirror_codecs_output *output, struct mc_error *error) {
    output->data = NULL;
    if (format == MIRROR_CODECS_JPEG) {
        tjhandle handle = tjInitCompress();
        unsigned char *jpeg = NULL;
        unsigned long size = 0;
        int status = handle ? tjCompress2(handle, pixels->data, pixels->width, 0, pixels->height, pixels->channels == 4 ? TJPF_RGBA : TJPF_RGB,
                                          &jpeg, &size, TJSAMP_420, quality, 0) : -1;
        if (status == 0 && (output->data = malloc(size))) {
            memcpy(output->data, jpeg, size);
            output->length = size;
        } else {
            mc_fail(error, MIRROR_CODECS_FAILED, "cannot encode the JPEG: %s", handle ? tjGetErrorStr2(handle) : "TurboJPEG did not start");
        }
        tjFree(jpeg);
        if (handle) tjDestroy(handle);
    } else if (format == MIRROR_CODECS_WEBP) {
        uint8_t *webp = NULL;
        int stride = pixels->width * pixels->channels;
        size_t size = pixels->channels == 4 ? WebPEncodeRGBA(pixels->data, pixels->width, pixels->height, stride, (float)quality, &webp)
                                            : WebPEncodeRGB(pixels->data, pixels->width, pixels->height, stride, (float)quality, &webp);
        if (size > 0 && (output->data = malloc(size))) {
            memcpy(output->data, webp, size);
            output->length = size;
        } else {
            mc_fail(error, MIRROR_CODECS_FAILED, "cannot encode the WebP");
        }
        WebPFree(webp);
    } else if (format == MIRROR_CODECS_PNG) {
        png_image image;
        memset(&image, 0, sizeof image);
        image.version = PNG_IMAGE_VERSION;
        image.width = (png_uint_32)pixels->width;
        image.height = (png_uint_32)pixels->height;
        image.format = pixels->channels == 4 ? PNG_FORMAT_RGBA : PNG_FORMAT_RGB;
        png_alloc_size_t size = PNG_IMAGE_PNG_SIZE_MAX(image);
        if ((output->data = malloc(size)) && png_image_write_to_memory(&image, output->data, &size, 0, pixels->data, 0, NULL)) {
            output->length = size;
        } else {
            mc_fail(error, MIRROR_CODECS_FAILED, "cannot encode the PNG: %s", image.message);
            free(output->data);
            output->data = NULL;
        }
        png_image_free(&image);
    } else {
        return mc_fail(error, MIRROR_CODECS_FAILED, "no codec writes format %d", format);
    }
    if (!output->data) return MIRROR_CODECS_FAILED;
    output->width = pixels->width;
    output->height = pixels->height;
    return 0;
}
