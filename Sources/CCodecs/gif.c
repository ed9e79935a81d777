// GIF through giflib (Debian's 5.2): the first frame, drawn on the logical screen as browsers draw it (transparent, or
// white without alpha, where the frame leaves the screen bare). giflib itself holds a row and its colour tables; the
// screen is mirror's buffer, sized before it is allocated (a 43-byte GIF can declare a 13000 × 13000 screen).
//
// A frame must be whole: one whose data ends before its last row that shows (or has none at all) is refused rather
// than saved half blank, as Pillow refuses it.
#include "internal.h"
#include <gif_lib.h>
#include <stdlib.h>
#include <string.h>

static unsigned mc_le16(const unsigned char *p) { return (unsigned)p[0] | (unsigned)p[1] << 8; }

int mc_gif_read_header(const unsigned char *data, size_t length, struct mc_gif_header *header, struct mc_error *error) {
    memset(header, 0, sizeof *header);
    if (length < 13 || memcmp(data, "GIF8", 4) != 0) return mc_fail(error, MIRROR_CODECS_MALFORMED, "not a GIF");
    header->width = (int)mc_le16(data + 6);
    header->height = (int)mc_le16(data + 8);
    if (header->width > 0 && header->height > 0) return 0;
    // A 0 × 0 screen, which some encoders write, takes the first frame's size, as browsers do (and MirrorImages).
    size_t at = 13;
    if (data[10] & 0x80) at = mc_add(at, (size_t)3 << ((data[10] & 7) + 1));
    while (at < length) {
        if (data[at] == 0x21) {  // an extension: its label, then sub-blocks
            at += 2;
            while (at < length && data[at] != 0) at = mc_add(at, (size_t)data[at] + 1);
            at = mc_add(at, 1);
        } else if (data[at] == 0x2C && length - at >= 9) {
            header->width = (int)mc_le16(data + at + 5);
            header->height = (int)mc_le16(data + at + 7);
            break;
        } else {
            break;
        }
    }
    if (header->width < 1 || header->height < 1) return mc_fail(error, MIRROR_CODECS_MALFORMED, "the GIF declares %d x %d pixels", header->width, header->height);
    return 0;
}

struct mc_reader { const unsigned char *data; size_t length, at; };

static int mc_gif_read(GifFileType *file, GifByteType *bytes, int count) {
    struct mc_reader *reader = file->UserData;
    size_t left = reader->length - reader->at;
    size_t take = count < 0 ? 0 : (size_t)count < left ? (size_t)count : left;
    memcpy(bytes, reader->data + reader->at, take);
    reader->at += take;
    return (int)take;
}

/// Draws the first frame's rows on the screen; MALFORMED when a row the screen shows cannot be read.
static int mc_gif_frame(GifFileType *file, int transparent, int alpha, struct mc_pixels *pixels, struct mc_error *error) {
    GifImageDesc frame = file->Image;
    ColorMapObject *colors = frame.ColorMap ? frame.ColorMap : file->SColorMap;
    if (!colors) return mc_fail(error, MIRROR_CODECS_MALFORMED, "the GIF's first frame has no colour table");
    if (frame.Width < 1 || frame.Height < 1) return mc_fail(error, MIRROR_CODECS_MALFORMED, "the GIF's first frame is %d x %d", frame.Width, frame.Height);
    // Rows below the screen show nothing: an ordinary frame's decoding stops at the screen's edge, so that a frame far
    // larger than its screen costs no more than the screen. An interlaced one's passes each cover the whole frame.
    if (frame.Interlace && mc_image_bytes(frame.Width, frame.Height, 1) > mc_add(mc_image_bytes(pixels->width, pixels->height, 4), 1 << 20))
        return mc_fail(error, MIRROR_CODECS_MALFORMED, "the GIF's interlaced first frame (%d x %d) is far larger than its screen", frame.Width, frame.Height);
    int last = frame.Height;
    if (!frame.Interlace && frame.Top + frame.Height > pixels->height) last = pixels->height - frame.Top;
    if (last < 1) return 0;  // the frame lies below the screen: nothing of it shows
    GifByteType *row = malloc((size_t)frame.Width);
    if (!row) return mc_fail(error, MIRROR_CODECS_FAILED, "out of memory for a GIF row");
    static const int starts[] = {0, 4, 2, 1}, steps[] = {8, 8, 4, 2};
    unsigned char luma[256];  // a grey screen's value of each colour (BT.601, as pdq.c takes RGB)
    if (pixels->channels == 1)
        for (int index = 0; index < colors->ColorCount && index < 256; index++)
            luma[index] = (unsigned char)((19595u * colors->Colors[index].Red + 38470u * colors->Colors[index].Green
                                           + 7471u * colors->Colors[index].Blue + 32768u) >> 16);
    int passes = frame.Interlace ? 4 : 1, read = 0, status = 0;
    for (int pass = 0; pass < passes && status == 0; pass++) {
        for (int y = frame.Interlace ? starts[pass] : 0; y < last; y += frame.Interlace ? steps[pass] : 1) {
            if (DGifGetLine(file, row, frame.Width) != GIF_OK) {
                status = mc_fail(error, MIRROR_CODECS_MALFORMED, "the GIF's first frame ends after %d of its %d rows (%s)", read, frame.Height,
                                 GifErrorString(file->Error));
                break;
            }
            read++;
            int screen_y = frame.Top + y;
            if (screen_y < 0 || screen_y >= pixels->height) continue;
            for (int x = 0; x < frame.Width; x++) {
                int screen_x = frame.Left + x;
                if (screen_x < 0 || screen_x >= pixels->width || row[x] == transparent || row[x] >= colors->ColorCount) continue;
                GifColorType color = colors->Colors[row[x]];
                unsigned char *to = pixels->data + ((size_t)screen_y * (size_t)pixels->width + (size_t)screen_x) * (size_t)pixels->channels;
                if (pixels->channels == 1) {
                    to[0] = luma[row[x]];
                    continue;
                }
                to[0] = color.Red;
                to[1] = color.Green;
                to[2] = color.Blue;
                if (alpha) to[3] = 255;
            }
        }
    }
    free(row);
    return status;
}

/// The first frame on its screen: grey when `grey`, else RGBA when `keep_alpha` and it has transparency, else RGB on
/// white.
static int mc_gif_first_frame(const unsigned char *input, size_t length, bool keep_alpha, bool grey, struct mc_pixels *pixels, struct mc_error *error) {
    struct mc_gif_header header;
    int status = mc_gif_read_header(input, length, &header, error);
    if (status != 0) return status;
    struct mc_reader reader = {input, length, 0};
    int code = 0;
    GifFileType *file = DGifOpen(&reader, mc_gif_read, &code);
    if (!file) return mc_fail(error, MIRROR_CODECS_MALFORMED, "the GIF does not read: %s", GifErrorString(code));
    int transparent = -1, drawn = 0;
    GifRecordType type;
    pixels->data = NULL;
    status = MIRROR_CODECS_MALFORMED;
    while (!drawn && DGifGetRecordType(file, &type) == GIF_OK && type != TERMINATE_RECORD_TYPE) {
        if (type == EXTENSION_RECORD_TYPE) {
            int function;
            GifByteType *extension;
            if (DGifGetExtension(file, &function, &extension) != GIF_OK) break;
            while (extension) {
                GraphicsControlBlock control;
                if (function == GRAPHICS_EXT_FUNC_CODE && DGifExtensionToGCB(extension[0], extension + 1, &control) == GIF_OK) {
                    transparent = control.TransparentColor;
                    function = 0;  // only the first block of it
                }
                if (DGifGetExtensionNext(file, &extension) != GIF_OK) extension = NULL;
            }
            continue;
        }
        if (type != IMAGE_DESC_RECORD_TYPE || DGifGetImageDesc(file) != GIF_OK) break;
        int alpha = keep_alpha && !grey && transparent >= 0;
        status = mc_allocate(pixels, header.width, header.height, grey ? 1 : alpha ? 4 : 3, error);
        if (status != 0) break;
        memset(pixels->data, alpha ? 0 : 255, mc_image_bytes(header.width, header.height, pixels->channels));
        status = mc_gif_frame(file, transparent, alpha, pixels, error);
        drawn = 1;
    }
    if (status == MIRROR_CODECS_MALFORMED && !drawn) mc_fail(error, status, "the GIF does not decode: %s", file->Error ? GifErrorString(file->Error) : "no frame");
    if (status != 0) mc_pixels_free(pixels);
    DGifCloseFile(file, &code);
    return status;
}

int mc_gif_decode(const unsigned char *input, size_t length, bool keep_alpha, struct mc_pixels *pixels, struct mc_error *error) {
    return mc_gif_first_frame(input, length, keep_alpha, false, pixels, error);
}

int mc_gif_decode_luma(const unsigned char *input, size_t length, struct mc_pixels *pixels, struct mc_error *error) {
    return mc_gif_first_frame(input, length, false, true, pixels, error);
}
