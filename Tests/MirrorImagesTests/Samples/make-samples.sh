#!/usr/bin/env bash
# Regenerates every sample image in this folder. Run from anywhere:
#   bash Tests/MirrorImagesTests/Samples/make-samples.sh
# Tools (Debian 12): imagemagick (6.9.11), libjpeg-turbo-progs (cjpeg), webp (cwebp, img2webp),
# apngasm, libheif-examples (heif-enc, with x265 and aom), python3 (standard library only).
# Every file has its own non-square size so a test can tell the header fields apart.
set -euo pipefail
S="$(cd "$(dirname "$0")" && pwd)"
T="$(mktemp -d)"; trap 'rm -rf "$T"' EXIT; cd "$T"
IM_PNG=(-define png:exclude-chunk=date,time)

# --- JPEG ---
convert -size 37x23 gradient:red-blue ppm:a.ppm
cjpeg -quality 85 -outfile "$S/baseline.jpg" a.ppm                          # 37x23, SOF0
convert -size 41x29 gradient:yellow-navy ppm:b.ppm
cjpeg -quality 85 -progressive -outfile "$S/progressive.jpg" b.ppm          # 41x29, SOF2
convert -size 29x31 gradient:blue-orange ppm:r.ppm
cjpeg -quality 85 -restart 1 -outfile "$S/restart.jpg" r.ppm                # 29x31, a DRI segment and RSTn markers in the scan
convert -size 31x19 gradient:green-magenta -colorspace CMYK -quality 85 "$S/cmyk.jpg"  # 31x19, Adobe APP14, 4 components
convert -size 43x17 gradient:teal-gold ppm:c.ppm
cjpeg -quality 85 -outfile c.jpg c.ppm
# 43x17 with a 4 KB EXIF APP1 (little-endian TIFF, ImageDescription + Orientation) inserted right after SOI.
python3 - c.jpg "$S/exif.jpg" <<'PY'
import struct, sys
src = open(sys.argv[1], 'rb').read()
desc = (b'mirror test sample ' * 220)[:4000] + b'\0'
ifd_off = 8
entries = 2
data_off = ifd_off + 2 + entries * 12 + 4
tiff = b'II*\0' + struct.pack('<I', ifd_off) + struct.pack('<H', entries)
tiff += struct.pack('<HHII', 0x010E, 2, len(desc), data_off)     # ImageDescription, ASCII
tiff += struct.pack('<HHIHH', 0x0112, 3, 1, 1, 0)                # Orientation = 1
tiff += struct.pack('<I', 0) + desc
payload = b'Exif\0\0' + tiff
app1 = b'\xff\xe1' + struct.pack('>H', len(payload) + 2) + payload
open(sys.argv[2], 'wb').write(src[:2] + app1 + src[2:])
PY

# --- PNG ---
convert -size 29x13 gradient:white-black -colorspace Gray -define png:color-type=0 "${IM_PNG[@]}" "$S/gray.png"  # 29x13, 16-bit gray
convert -size 47x21 gradient:orange-purple -interlace PNG "${IM_PNG[@]}" "$S/interlaced.png"  # 47x21, Adam7
convert -size 19x11 xc:red png:f1.png; convert -size 19x11 xc:lime png:f2.png; convert -size 19x11 xc:blue png:f3.png
apngasm "$S/animated.png" f1.png f2.png f3.png 1 10 >/dev/null             # 19x11 APNG, acTL num_frames=3

# --- GIF ---
convert -size 33x27 gradient:cyan-maroon "$S/static.gif"                    # 33x27, 1 frame
convert -size 35x25 -delay 10 xc:red xc:lime xc:blue -loop 0 "$S/animated.gif"  # 35x25, 3 frames

# --- WebP ---
convert -size 39x31 gradient:red-teal png:w1.png
cwebp -quiet -q 80 w1.png -o "$S/lossy.webp"                               # 39x31, simple VP8
convert -size 45x19 gradient:gold-indigo png:w2.png
cwebp -quiet -lossless w2.png -o "$S/lossless.webp"                        # 45x19, simple VP8L
convert -size 53x17 gradient:'rgba(255,0,0,1)-rgba(0,0,255,0.2)' png32:w3.png
cwebp -quiet -q 80 w3.png -o "$S/alpha.webp"                               # 53x17, VP8X + ALPH + VP8
convert -size 27x35 xc:red png:a1.png; convert -size 27x35 xc:lime png:a2.png; convert -size 27x35 xc:blue png:a3.png
img2webp -loop 0 -d 100 -lossless a1.png a2.png a3.png -o "$S/animated.webp" >/dev/null 2>&1  # 27x35, VP8X + ANIM + 3 ANMF

# --- BMP ---
convert -size 23x37 gradient:pink-olive -type TrueColor BMP3:"$S/bgr24.bmp"   # 23x37, BITMAPINFOHEADER, 24-bit, bottom-up
convert -size 21x15 gradient:pink-olive -type TrueColor BMP2:"$S/os2.bmp"     # 21x15, BITMAPCOREHEADER (OS/2 1.x)
convert -size 25x9 gradient:khaki-sienna -type TrueColor BMP3:d.bmp
# 25x9 top-down: same pixels with the rows reversed and biHeight negated.
python3 - d.bmp "$S/topdown.bmp" <<'PY'
import struct, sys
b = bytearray(open(sys.argv[1], 'rb').read())
off = struct.unpack_from('<I', b, 10)[0]
w, h = struct.unpack_from('<ii', b, 18)
stride = (w * 3 + 3) // 4 * 4
rows = [bytes(b[off + i * stride: off + (i + 1) * stride]) for i in range(h)]
b[off: off + h * stride] = b''.join(reversed(rows))
struct.pack_into('<i', b, 22, -h)
open(sys.argv[2], 'wb').write(bytes(b))
PY

# --- TIFF ---
convert -size 57x15 gradient:navy-coral -compress none -define tiff:endian=lsb "$S/little.tiff"  # 57x15, II, uncompressed
convert -size 15x57 gradient:navy-coral -compress lzw -define tiff:endian=msb "$S/big.tiff"      # 15x57, MM, LZW

# --- HEIF / AVIF (8-bit input: libaom 3.6 asserts on the 16-bit PNGs ImageMagick writes by default) ---
convert -size 64x40 gradient:red-blue -depth 8 png24:h1.png
heif-enc -q 50 --avif -o "$S/image.avif" h1.png >/dev/null                 # 64x40, ftyp avif, ispe 64x40
convert -size 48x80 gradient:lime-navy -depth 8 png24:h2.png
heif-enc -q 50 -o "$S/image.heic" h2.png >/dev/null                        # 48x80, ftyp heic, ispe 48x80
